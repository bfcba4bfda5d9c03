"""Dependencies point one way: plain library -> actors -> loop -> sweep -> cli / jobs
(``tools.import_graph.layer_of``).

A module's layer is its folder's: a suite's package is plain library, whole; its own commands
(``ratchet_ray/cli/<suite>.py``) and its code that runs over the Ray cluster
(``ratchet_ray/loop/<suite>_*.py``) stand in their layers, and its registration names them by
string, so nothing imports them back up.

Every check discovers the modules on disk (``import_graph.project_modules``), so a module added
later is covered without touching this file.
- The plain library (``ratchet_ray`` minus ``loop/`` and ``cli/``) imports in a fresh process
  where ``ray`` and ``actors`` cannot be imported at all.
- No import, lazy ones included, points from a lower layer to a higher one, and only
  ``actors/`` and above import ``ray``.
- No module imports itself back through others (module cycles), and no plain-library package
  does through another package (package cycles); there is no list of tolerated back-edges.
  ``ratchet_ray.settings.schema`` is a pure schema that imports no suite: checking a config against the
  registered suites is ``ratchet_ray.suites.resolve``. The suites' settings modules that the
  suite registry imports stay leaves.
"""

from __future__ import annotations

import json
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from tools.import_graph import (LAYERS, cycle_path, import_cycles, import_graph, imported_roots,
                                layer_of, project_modules)

ROOT = Path(__file__).resolve().parents[2]
SUITE_SETTINGS = re.compile(r"ratchet_ray\.suites\.\w+\.settings")


BLOCKER = """
import importlib, json, sys

class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("ray", "actors"):
            raise ImportError(f"{name} is blocked: the plain library must not import it")
        return None

sys.meta_path.insert(0, Blocked())
failures = {}
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
    except Exception as exc:
        failures[name] = f"{type(exc).__name__}: {exc}"
leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("ray", "actors"))
print(json.dumps({"failures": failures, "leaked": leaked}))
"""


def plain_library() -> list[str]:
    return sorted(m for m in project_modules(ROOT)
                  if m.startswith("ratchet_ray") and layer_of(m) == "plain library")


def test_module_discovery_finds_every_layer():
    modules = project_modules(ROOT)
    assert "ratchet_ray.llm.registry" in modules and "ratchet_ray.suites" in modules
    assert {layer_of(m) for m in modules} == set(LAYERS)
    assert "ratchet_ray.loop.driver" not in plain_library()
    assert layer_of("ratchet_ray.cli.swebench") == "cli/jobs"
    assert layer_of("ratchet_ray.loop.swebench_nodes") == "loop"
    assert {layer_of(m) for m in modules if m.startswith("ratchet_ray.suites")} == {
        "plain library"}
    assert layer_of("ratchet_ray.suites.swebench.docker.images") == "plain library"


def test_plain_library_imports_with_ray_and_actors_blocked():
    modules = plain_library()
    out = subprocess.run([sys.executable, "-c", BLOCKER, json.dumps(modules)], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["failures"] == {}, (
        "plain-library modules that need ray or actors (or fail to import): "
        + json.dumps(report["failures"], indent=1))
    assert report["leaked"] == []
    assert len(modules) > 50  # the whole library, not an empty discovery


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(ROOT)


def test_imports_point_down_the_layers(graph):
    upward = sorted(f"{src} ({layer_of(src)}) -> {dst} ({layer_of(dst)})"
                    for src, targets in graph.items() for dst in targets
                    if LAYERS[layer_of(dst)] > LAYERS[layer_of(src)])
    assert upward == [], "imports against the layer order:\n" + "\n".join(upward)
    ray_users = sorted(m for m, roots in imported_roots(ROOT).items()
                       if "ray" in roots and layer_of(m) == "plain library")
    assert ray_users == [], f"plain-library modules importing ray (even lazily): {ray_users}"


def test_no_module_import_cycles(graph):
    cycles = [" -> ".join(cycle_path(graph, c)) for c in import_cycles(graph)]
    assert cycles == [], "import cycles (lazy imports count):\n" + "\n".join(cycles)


def _package(module: str) -> str:
    """``ratchet_ray.<sub>`` for the plain library's subpackages and top-level modules."""
    return ".".join(module.split(".")[:2])


def test_no_package_cycles_in_the_plain_library(graph):
    packages: dict[str, set[str]] = {}
    for src, targets in graph.items():
        if layer_of(src) == "plain library" and src.startswith("ratchet_ray."):
            packages.setdefault(_package(src), set()).update(
                _package(dst) for dst in targets
                if layer_of(dst) == "plain library" and dst.startswith("ratchet_ray."))
    for src in packages:
        packages[src].discard(src)
    assert "ratchet_ray.suites" not in packages["ratchet_ray.settings"]  # a pure schema
    assert "ratchet_ray.suites" in packages["ratchet_ray.run_config"]  # resolves through them
    cycles = [" -> ".join(cycle_path(packages, c)) for c in import_cycles(packages)]
    assert cycles == [], "plain-library packages importing each other:\n" + "\n".join(cycles)


TOP_LEVEL = {"ratchet_ray.types", "ratchet_ray.seeding", "ratchet_ray.redact",
             "ratchet_ray.metrics", "ratchet_ray.arm_summary"}
BOTTOM_PACKAGES = ("ratchet_ray.settings", "ratchet_ray.storage")


def test_the_top_of_the_library_holds_only_what_no_package_can():
    """Every module of the library lives in a package but five, each at the top for the reason
    docs/architecture.md#packages gives (the vocabulary, two rules every layer applies, two
    result readers that no package holds without a cycle)."""
    top = {m for m, path in project_modules(ROOT).items()
           if path.parent == ROOT / "ratchet_ray" and path.name != "__init__.py"}
    assert top == TOP_LEVEL, (
        f"new at the top of ratchet_ray/: {sorted(top - TOP_LEVEL)}, gone: "
        f"{sorted(TOP_LEVEL - top)}; put a module in the package of its concern, or say in "
        "docs/architecture.md#packages why it must stay at the top and list it here")


def test_the_schema_and_storage_import_no_other_project_module(graph):
    """``settings/`` (the schema every layer reads) and ``storage/`` (crash-safe writes, the run
    lock, the artifact store) stand at the bottom: an import from them into another package
    would tie nearly the whole library to it."""
    assert {_package(m) for m in graph} >= set(BOTTOM_PACKAGES)
    leaks = sorted(f"{m} -> {t}" for m, targets in graph.items()
                   if _package(m) in BOTTOM_PACKAGES
                   for t in targets if _package(t) != _package(m))
    assert leaks == [], "the bottom packages import other project modules:\n" + "\n".join(leaks)


def test_suite_settings_modules_are_leaves(graph):
    settings = sorted(m for m in graph if SUITE_SETTINGS.fullmatch(m))
    assert "ratchet_ray.suites.swebench.settings" in settings
    # A suite over another suite's world extends its settings: importing another settings
    # module (a leaf itself, checked here too) cannot close a cycle either.
    imports = {m: sorted(t for t in graph[m] if t not in settings) for m in settings}
    imports = {m: targets for m, targets in imports.items() if targets}
    assert imports == {}, ("suite settings modules must import no project module but other "
                           f"suites' settings modules: {imports}")


def test_jobs_are_entry_points_over_the_cli_never_imported(graph):
    """``jobs/`` -> ``ratchet_ray.cli``, one direction: the library never imports ``jobs``."""
    back = sorted(f"{m} -> {t}" for m, targets in graph.items() if not m.startswith("jobs")
                  for t in targets if t == "jobs" or t.startswith("jobs."))
    assert back == [], back
    jobs = [m for m in graph if m.startswith("jobs.")]
    assert jobs and all(any(t.startswith("ratchet_ray.cli") for t in graph[m]) for m in jobs), \
        {m: sorted(graph[m]) for m in jobs}


def test_repository_tooling_is_neither_imported_nor_shipped(monkeypatch):
    """``tools/`` (the docs generator, this import graph) serves the checkout only: no shipped
    module imports it, and setup.py's package list (what a wheel holds) leaves it out."""
    users = sorted(m for m, roots in imported_roots(ROOT).items() if "tools" in roots)
    assert users == [], f"shipped modules importing the repository's tools/: {users}"
    import setuptools

    captured: dict = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kwargs: captured.update(kwargs))
    monkeypatch.chdir(ROOT)  # setup.py finds its packages relative to the checkout
    runpy.run_path(str(ROOT / "setup.py"))
    packages = captured["packages"]
    assert {"ratchet_ray.cli", "actors", "jobs"} <= set(packages)  # the real list, not an empty one
    assert [p for p in packages if p.split(".")[0] == "tools"] == []


def test_cycle_detection_finds_lazy_and_relative_imports(tmp_path):
    """The checker itself: a lazy import closing a loop and a relative import both count, a
    TYPE_CHECKING import does not."""
    pkg = tmp_path / "ratchet_ray"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from ratchet_ray.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..a import x\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from ratchet_ray import a\n")
    graph = import_graph(tmp_path)
    assert graph["ratchet_ray.sub.b"] == {"ratchet_ray.a"}
    assert graph["ratchet_ray.c"] == set()
    assert import_cycles(graph) == [["ratchet_ray.a", "ratchet_ray.sub.b"]]
    assert cycle_path(graph, ["ratchet_ray.a", "ratchet_ray.sub.b"]) == [
        "ratchet_ray.a", "ratchet_ray.sub.b", "ratchet_ray.a"]
