"""No module outside a built-in suite's folder knows a built-in suite: the generic code asks the
suite registry (``ratchet_ray.suites.hooks``: the suite's ``SuitePlugin``), so a plugin suite
gets everything a built-in one gets, and a built-in suite can be removed by removing its own
modules and its line in ``ratchet_ray.suites.registry.BUILTIN_PLUGINS``. A suite's own modules
are its folder (plain library) and the two kinds its registration names by string from the layers
above: its commands, ``ratchet_ray/cli/<suite>.py``, and its code that uses Ray,
``ratchet_ray/loop/<suite>_*.py`` (``suite_modules``).

How it decides: every module of ``ratchet_ray/``, ``jobs/``, ``actors/`` and ``tools/`` is
parsed (``ast``), except a built-in suite's own modules. A string constant is a
finding when it holds
- a built-in suite's name as a word, in any case (``mbpp``, ``"mbpp environment"``,
  ``"--suite swebench"``, ``"Mbpp/"``), except in a dotted module path of a suite's package
  (``"ratchet_ray.suites.mbpp.registration"``, the built-in list: how code names the suite's
  module) and in what a user reads as an example: a raised error's message or a ``help=``
  text (``e.g. results/mbpp/<run-id>``); a hint table, a check name or a default is code;
- an environment variable a built-in suite declares (``SuitePlugin.env_vars``), or a prefix of
  one (``"MBPP_"``);
- a custom Ray resource a built-in suite declares (its ``Cluster``'s ``resources``,
  ``local_resources``), as the whole string (``"docker"``);
- a built-in suite's task-id pattern (``task_id_pattern``, e.g. ``Mbpp/\\d+``).
Docstrings (a string statement on its own: a module's, class's, function's or attribute's)
and comments are prose and do not count; an f-string's literal parts count like any string.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ratchet_ray.suites import registry

ROOT = Path(__file__).resolve().parents[2]
BUILTINS = sorted(module.split(".")[2] for module in registry.BUILTIN_PLUGINS)
SCANNED = ("ratchet_ray", "jobs", "actors", "tools")
# (module, finding) -> why the module may still hold that string. Each entry must still be needed.
EXCEPTIONS = {
    ("ratchet_ray/settings/schema.py", "name 'sim'"):
        "`sim` is also the name of an LLM backend (`llm.backend: sim`, the simulated world's "
        "model), a different namespace of values: the schema lists the backends",
    ("ratchet_ray/llm/registry.py", "name 'sim'"):
        "the `sim` LLM backend's name in the backend registry (its clients are built by the "
        "module `llm.world.backend_module` names, so the llm layer imports nothing of the suite)",
    ("ratchet_ray/llm/doctor.py", "name 'sim'"):
        "the `sim` LLM backend's name in the doctor's install hints per backend",
    ("ratchet_ray/cli/export.py", "name 'swebench'"):
        "the official harness's module (`python -m swebench.harness.run_evaluation`), which "
        "export --predictions says how to run: the harness's package, not the suite",
    ("ratchet_ray/report/sections.py", "name 'sim'"):
        "the truth section's note says what the sim suite's sweep_report columns hold; it "
        "belongs in the title that hook returns (the report's own change, not this guard's)",
}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings: a string statement on its own (a
    module's, class's or function's docstring, or an attribute's after its assignment), which
    no code reads."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)}


def _message_texts(tree: ast.AST) -> set[int]:
    """ids of the string constants of a raised error's message or a ``help=`` text: what a user
    reads, where a suite may be named as an example (``e.g. results/mbpp/<run-id>``)."""
    roots = [n.exc for n in ast.walk(tree) if isinstance(n, ast.Raise) and n.exc is not None]
    roots += [k.value for n in ast.walk(tree) if isinstance(n, ast.Call)
              for k in n.keywords if k.arg == "help"]
    return {id(c) for root in roots for c in ast.walk(root) if isinstance(c, ast.Constant)}


def code_strings(source: str) -> list[tuple[int, str, bool]]:
    """``(line, text, is a message)`` of every non-docstring string constant of ``source``."""
    tree = ast.parse(source)
    skip, messages = _docstrings(tree), _message_texts(tree)
    return sorted((node.lineno, node.value, id(node) in messages) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and id(node) not in skip)


def suite_knowledge(names: list[str]) -> dict[str, list]:
    """What the plugins of ``names`` declare that only their folders may hold."""
    plugins = [registry.registration(n) for n in names]
    return {
        "names": names,
        "env_vars": sorted({v.name for p in plugins for v in p.env_vars}),
        "resources": sorted({r for p in plugins for r in
                             [*p.cluster.local_resources,
                              *(k for w in p.cluster.resources.values() for k in w)]}),
        "patterns": sorted({p.task_id_pattern for p in plugins if p.task_id_pattern}),
    }


def findings_in(source: str, knowledge: dict[str, list]) -> list[tuple[int, str]]:
    """``(line, finding)`` of each string of ``source`` that holds suite knowledge."""
    words = re.compile(rf"\b({'|'.join(map(re.escape, knowledge['names']))})\b", re.IGNORECASE)
    module_path = re.compile(r"^ratchet_ray\.suites\.\w+(\.\w+)*(:\w+)?$")
    found = []
    for line, text, message in code_strings(source):
        hits = []
        if not (message or module_path.match(text)):
            hits += [f"name {m.group(1).lower()!r}" for m in words.finditer(text)]
        hits += [f"env var {v!r}" for v in knowledge["env_vars"]
                 if v in text or (len(text) >= 4 and text.endswith("_") and v.startswith(text))]
        hits += [f"resource {r!r}" for r in knowledge["resources"] if text == r]
        hits += [f"task-id pattern {p!r}" for p in knowledge["patterns"] if p in text]
        found += [(line, hit) for hit in dict.fromkeys(hits)]
    return found


def suite_modules(name: str) -> list[Path]:
    """The built-in suite ``name``'s own modules: its folder, its command module in the CLI
    layer and its modules in the loop's layer."""
    return sorted([*(ROOT / "ratchet_ray" / "suites" / name).rglob("*.py"),
                   *(ROOT / "ratchet_ray" / "cli").glob(f"{name}.py"),
                   *(ROOT / "ratchet_ray" / "loop").glob(f"{name}_*.py")])


def checked_modules() -> list[Path]:
    own = {f for name in BUILTINS for f in suite_modules(name)}
    files = [f for top in SCANNED for f in (ROOT / top).rglob("*.py")]
    return sorted(f for f in files if f not in own)


def test_the_builtin_suites_are_the_registrys_folders():
    assert BUILTINS == ["mbpp", "mbpp_oracle", "sim", "swebench"]
    for name in BUILTINS:
        assert (ROOT / "ratchet_ray" / "suites" / name / "registration.py").is_file()
    # the modules its registration names from the layers above are its own, and only those
    assert [p.relative_to(ROOT).as_posix() for p in suite_modules("swebench")
            if "suites" not in p.parts] == ["ratchet_ray/cli/swebench.py",
                                            "ratchet_ray/loop/swebench_nodes.py",
                                            "ratchet_ray/loop/swebench_validation.py"]


def test_the_builtins_declare_what_the_check_looks_for():
    knowledge = suite_knowledge(BUILTINS)
    assert {"MBPP_OVERRIDE_PATH", "DOCKER_HOST"} <= set(knowledge["env_vars"])
    assert knowledge["resources"] == ["docker"]
    assert r"Mbpp/\d+" in knowledge["patterns"]


def test_no_module_outside_a_suites_folder_knows_a_builtin_suite():
    modules = checked_modules()
    assert len(modules) > 100 and ROOT / "jobs" / "baseline.py" in modules
    knowledge = suite_knowledge(BUILTINS)
    findings, used = [], set()
    for path in modules:
        rel = path.relative_to(ROOT).as_posix()
        for line, hit in findings_in(path.read_text(encoding="utf-8"), knowledge):
            if (rel, hit) in EXCEPTIONS:
                used.add((rel, hit))
            else:
                findings.append(f"{rel}:{line}: {hit}")
    assert findings == [], ("modules holding a built-in suite's name, environment variable, "
                            "resource or task-id pattern; ask the suite registry instead "
                            "(ratchet_ray.suites.hooks, a SuitePlugin field declared in the "
                            "suite's registration.py):\n" + "\n".join(findings))
    stale = sorted(set(EXCEPTIONS) - used)
    assert stale == [], f"exceptions no longer needed, drop them: {stale}"


def test_the_check_sees_code_strings_and_skips_prose():
    knowledge = {"names": BUILTINS, "env_vars": ["MBPP_OVERRIDE_PATH"], "resources": ["docker"],
                 "patterns": [r"Mbpp/\d+"]}
    source = ('"""mbpp in a docstring."""\n'
              'def f(suite):\n'
              '    """sim here too."""\n'
              '    # swebench in a comment\n'
              '    x = f"{suite}-mbpp" if suite == "swebench" else "sim"\n'
              '    return {"mbpp": 1}, "mbpp+", "MBPP+ sandbox", "simulate"\n'
              'E = ("MBPP_OVERRIDE_PATH", "MBPP_", "docker", "the docker daemon")\n'
              'P = (r"Mbpp/\\d+|x", "ratchet_ray.suites.mbpp.registration", "sim environment")\n'
              'raise ValueError(f"e.g. results/mbpp/{x}, $MBPP_OVERRIDE_PATH")\n'
              'option("--n", help="100 MBPP+")\n')
    assert findings_in(source, knowledge) == [
        (5, "name 'mbpp'"), (5, "name 'sim'"), (5, "name 'swebench'"),
        (6, "name 'mbpp'"), (6, "name 'mbpp'"), (6, "name 'mbpp'"),
        (7, "env var 'MBPP_OVERRIDE_PATH'"), (7, "env var 'MBPP_OVERRIDE_PATH'"),
        (7, "resource 'docker'"),
        (8, "name 'mbpp'"), (8, "task-id pattern 'Mbpp/\\\\d+'"), (8, "name 'sim'"),
        (9, "env var 'MBPP_OVERRIDE_PATH'")]
