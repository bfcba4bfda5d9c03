"""docker-py and swebench are imported only under ``serial_imports`` in the shipped packages.

Both packages' modules import each other in cycles, and the SWE-bench grader imports them lazily
from several threads at once, where two threads inside one cycle raise ``_DeadlockError``
(``ratchet_ray/suites/swebench/imports.py`` says why). How it decides: every Python module of
the shipped packages is parsed, and each ``import``/``from`` of either package, and each
``importlib.import_module`` of a literal name in either, must sit lexically inside a
``with serial_imports:`` block. The container-side sentinel plugin runs in its own interpreter
and imports neither.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ratchet_ray", "jobs", "actors")
GUARDED = ("docker", "swebench")


def _guarded_name(name: str | None) -> bool:
    return bool(name) and name.split(".")[0] in GUARDED


def _imported(node: ast.AST) -> str | None:
    """The guarded package name ``node`` imports, if it imports one."""
    if isinstance(node, ast.Import):
        return next((a.name for a in node.names if _guarded_name(a.name)), None)
    if isinstance(node, ast.ImportFrom) and node.level == 0 and _guarded_name(node.module):
        return node.module
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module" and node.args
            and isinstance(node.args[0], ast.Constant) and _guarded_name(str(node.args[0].value))):
        return node.args[0].value
    return None


def _unguarded(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, guarded: bool) -> None:
        name = _imported(node)
        if name and not guarded:
            found.append((node.lineno, name))
        inside = guarded or (isinstance(node, ast.With) and any(
            isinstance(item.context_expr, ast.Name) and item.context_expr.id == "serial_imports"
            for item in node.items))
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(tree, False)
    return found


def test_every_import_of_docker_or_swebench_is_serialised():
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for line, name in _unguarded(ast.parse(path.read_text(), str(path))):
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not offenders, ("import these under `with serial_imports:` "
                           "(ratchet_ray.suites.swebench.imports):\n" + "\n".join(offenders))


def test_the_rule_sees_each_spelling():
    """The checker is not blind: each spelling outside the block is caught, none inside it."""
    source = ("import docker\nfrom swebench.harness import grading\n"
              "def f():\n    import docker.errors\n    importlib.import_module('swebench.x')\n"
              "    with serial_imports:\n        import docker\n        from swebench import y\n"
              "        importlib.import_module('docker.errors')\n    import json\n")
    assert _unguarded(ast.parse(source)) == [(1, "docker"), (2, "swebench.harness"),
                                             (4, "docker.errors"), (5, "swebench.x")]
