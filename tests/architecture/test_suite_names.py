"""No module outside a built-in suite's folder names a built-in suite: the generic code asks the
suite registry (``ratchet_ray.suites.hooks``), so a plugin suite gets everything a built-in one
gets, and a built-in suite can be removed by removing its folder and its line in
``ratchet_ray.suites.registry.BUILTIN_PLUGINS``.

How it decides: every module of ``ratchet_ray/`` and ``jobs/`` is parsed (``ast``), except those
under ``ratchet_ray/suites/<built-in>/``; a string constant equal to a built-in suite's name
(``mbpp``, ``swebench``, ``sim``, ``mbpp_oracle``: the folders the registry lists) is a
finding. Docstrings (a module's, class's or function's first statement) and comments are prose
and do not count; an f-string's literal parts count like any string. The built-in list names the suites' modules
(``"ratchet_ray.suites.mbpp.registration"``), never a bare name, so it needs no exception.
"""

from __future__ import annotations

import ast
from pathlib import Path

from ratchet_ray.suites.registry import BUILTIN_PLUGINS

ROOT = Path(__file__).resolve().parents[2]
BUILTINS = sorted(module.split(".")[2] for module in BUILTIN_PLUGINS)
# (module, name) -> why the module may still hold that string. Each entry must still be needed.
EXCEPTIONS = {
    ("ratchet_ray/config.py", "mbpp"):
        "the paper's Default runs MBPP+: `LoopConfig.suite` is a schema whose static default "
        "docs/configuration.md shows; the schema cannot ask the registry for it without the "
        "config -> suites import it is meant to shed",
    ("ratchet_ray/config.py", "sim"):
        "`sim` is also the name of an LLM backend (`llm.backend: sim`, the simulated world's "
        "model), a different namespace of values: the schema lists the backends",
    ("ratchet_ray/llm/registry.py", "sim"):
        "the `sim` LLM backend's name in the backend registry (its clients are built by the "
        "module `llm.world.backend_module` names, so the llm layer imports nothing of the suite)",
    ("ratchet_ray/llm/doctor.py", "sim"):
        "the `sim` LLM backend's name in the doctor's install hints per backend",
}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                found.add(id(body[0].value))
    return found


def suite_name_literals(source: str, names: list[str]) -> list[tuple[int, str]]:
    """``(line, name)`` of every non-docstring string constant of ``source`` equal to a name."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and node.value in names and id(node) not in skip)


def checked_modules() -> list[Path]:
    inside = tuple(ROOT / "ratchet_ray" / "suites" / name for name in BUILTINS)
    files = [*(ROOT / "ratchet_ray").rglob("*.py"), *(ROOT / "jobs").rglob("*.py")]
    return sorted(f for f in files if not any(f.is_relative_to(d) for d in inside))


def test_the_builtin_suites_are_the_registrys_folders():
    assert BUILTINS == ["mbpp", "mbpp_oracle", "sim", "swebench"]
    for name in BUILTINS:
        assert (ROOT / "ratchet_ray" / "suites" / name / "registration.py").is_file()


def test_no_module_outside_a_suites_folder_names_a_builtin_suite():
    modules = checked_modules()
    assert len(modules) > 100 and ROOT / "jobs" / "baseline.py" in modules
    findings, used = [], set()
    for path in modules:
        rel = path.relative_to(ROOT).as_posix()
        for line, name in suite_name_literals(path.read_text(encoding="utf-8"), BUILTINS):
            if (rel, name) in EXCEPTIONS:
                used.add((rel, name))
            else:
                findings.append(f"{rel}:{line}: {name!r}")
    assert findings == [], ("modules naming a built-in suite; ask the suite registry instead "
                            "(ratchet_ray.suites.hooks, a hook registered in the suite's "
                            "registration.py):\n" + "\n".join(findings))
    stale = sorted(set(EXCEPTIONS) - used)
    assert stale == [], f"exceptions no longer needed, drop them: {stale}"


def test_the_check_sees_code_strings_and_skips_prose():
    source = ('"""mbpp in a docstring."""\n'
              'def f(suite):\n'
              '    """sim here too."""\n'
              '    # swebench in a comment\n'
              '    x = f"{suite}-mbpp" if suite == "swebench" else "sim"\n'
              '    return {"mbpp": 1}, "mbpp+"\n')
    assert suite_name_literals(source, BUILTINS) == [(5, "sim"), (5, "swebench"), (6, "mbpp")]
