"""The project's import graph, read from the source with ``ast`` (nothing is imported).

Contracts:
- ``project_modules(root)`` names every module of the packages in ``PACKAGES`` found on disk
  now (``pkg/__init__.py`` is ``pkg``), so modules added later are covered without a list.
- ``import_graph(root)`` maps each module to the project modules it imports, at any depth of
  the file: a lazy import inside a function still ties the two modules together, so it counts.
  Imports under ``if TYPE_CHECKING:`` never run and do not count. ``from pkg import name`` is an
  edge to ``pkg.name`` when that is a module, else to ``pkg``. Importing ``a.b`` is an edge to
  ``a.b`` only (not to the package ``a`` Python also initialises): a package's ``__init__``
  re-exporting its submodules is not a cycle.
- ``imported_roots(root)`` maps each module to the top-level names it imports (third-party
  ones included), with the same rules.
- ``import_cycles(graph)`` returns each strongly connected component of more than one module
  (or a module importing itself), sorted; empty when the graph is acyclic.
- ``layer_of(module)`` is the module's layer, one of ``LAYERS`` (lowest first); an import may
  only point to the same layer or one below (``tests/architecture/test_layers.py`` checks it,
  ``docs_imports`` draws it).

Used by the architecture tests and the generated architecture map (``make docs``). Run
``python -m tools.import_graph`` to print the cycles (exit 1 when any).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGES = ("ratchet_ray", "actors", "jobs")
TOOLING = ("tools",)
"""The repository's own code (not shipped, in no layer): checked for length and duplicates."""
LAYERS = {"plain library": 0, "actors": 1, "loop": 2, "sweep": 3, "cli/jobs": 4}


def layer_of(module: str) -> str:
    """The layer of ``module`` (a key of ``LAYERS``), decided by its folder alone: a suite's
    package is plain library, whole; its commands and Ray code live in ``cli/`` and ``loop/``,
    which its registration names by string."""
    parts = module.split(".")
    if parts[0] == "actors":
        return "actors"
    if parts[0] == "jobs" or parts[:2] == ["ratchet_ray", "cli"]:
        return "cli/jobs"
    if parts[:2] == ["ratchet_ray", "loop"]:
        return "loop"
    if parts[:2] == ["ratchet_ray", "sweep"]:
        return "sweep"
    return "plain library"


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Module name -> source file for every ``.py`` under ``packages`` (the shipped ones by
    default; the code checks add ``TOOLING``)."""
    modules: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            modules[_module_name(root, path)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, list[str]]]:
    """(imported module, names taken from it) for every import statement that can run."""
    found: list[tuple[str, list[str]]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.append((base, [alias.name for alias in node.names]))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the project modules it imports (see module contracts)."""
    modules = project_modules(root)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: set[str] = set()
        for target, names in _imports(tree, module, path.name == "__init__.py"):
            submodules = [f"{target}.{name}" for name in names if f"{target}.{name}" in modules]
            edges.update(submodules)
            if target in modules and (not names or len(submodules) < len(names)):
                edges.add(target)
        graph[module] = edges
    return graph


def imported_roots(root: Path) -> dict[str, set[str]]:
    """Module -> the top-level names of everything it imports (``ray``, ``numpy``,
    ``ratchet_ray``)."""
    roots: dict[str, set[str]] = {}
    for module, path in project_modules(root).items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        roots[module] = {target.split(".")[0]
                         for target, _ in _imports(tree, module, path.name == "__init__.py")}
    return roots


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with a cycle (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    cycles: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    cycles.append(sorted(component))
    return sorted(cycles)


def cycle_path(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """The shortest loop from ``component[0]`` back to itself (breadth-first), for messages."""
    members, start = set(component), component[0]
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise ValueError(f"{component} is not a cycle of the graph")


def main(root: Path) -> int:
    graph = import_graph(root)
    cycles = import_cycles(graph)
    for component in cycles:
        print(" -> ".join(cycle_path(graph, component)))
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main(Path(__file__).resolve().parents[1]))
