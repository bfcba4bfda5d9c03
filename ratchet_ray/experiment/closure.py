"""The evaluator's import closure: the project modules its evaluation path imports, the data it
reads and its config, computed from the ``import`` statements, never from a list of files.

Contracts:
- ``import_closure(root, entries, stop)``: the source files of the modules ``entries`` and of
  every module under ``root`` they import, transitively (any depth, lazy and relative imports,
  ``from a import b`` as module ``a.b`` when it is one, and every package ``__init__`` on the
  way). Modules outside ``root`` are left out, and so is a module ``stop`` names, with what
  only it imports (a custom evaluator's candidate).
- ``builtin_entries(suite)``: ``YARDSTICK_ENTRIES`` (the built-in's measuring modules) plus the
  suite's package (dataset loader, grader, sandbox); the skill loop under test is no entry.
- ``builtin_inputs(suite, dataset_path)``: the existing config layers and dataset file the
  built-in evaluator reads.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Callable, Iterable

YARDSTICK_ENTRIES = ("ratchet_ray.experiment.skill_eval", "ratchet_ray.experiment.contract",
                     "ratchet_ray.experiment.manifest", "ratchet_ray.metrics",
                     "ratchet_ray.loop.rundir")


def module_file(root: Path, name: str) -> Path | None:
    """``root/a/b/__init__.py`` or ``root/a/b.py`` for ``a.b``, else None."""
    if not name or any(not part.isidentifier() for part in name.split(".")):
        return None
    base = root.joinpath(*name.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def module_name(root: Path, path: Path) -> str | None:
    """The dotted name of the module file ``path`` under ``root`` (None outside it)."""
    path, root = path.resolve(), root.resolve()
    if path.suffix != ".py" or not path.is_relative_to(root):
        return None
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) or None


def _imported(tree: ast.AST, package: str) -> Iterable[str]:
    """Every module name ``tree`` may import (``package``: its own, for relative imports)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")


def import_closure(root: Path, entries: Iterable[str],
                   stop: Callable[[Path], bool] | None = None) -> dict[str, Path]:
    """Module name -> source file of ``entries`` and all they import under ``root`` (contract)."""
    root = Path(root)
    found: dict[str, Path] = {}
    stopped: set[str] = set()
    todo = list(entries)
    while todo:
        name = todo.pop()
        if name in found or name in stopped:
            continue
        path = module_file(root, name)
        if path is None:
            continue
        if stop is not None and stop(path):
            stopped.add(name)
            continue
        found[name] = path
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # the packages' __init__
        package = name if path.name == "__init__.py" else ".".join(parts[:-1])
        try:
            tree = ast.parse(path.read_text(), str(path))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue  # still frozen itself; what it imports cannot be read
        todo += [m for m in _imported(tree, package) if m not in found]
    return found


def builtin_entries(suite: str) -> tuple[str, ...]:
    """``YARDSTICK_ENTRIES`` and the suite's package (its tasks and grading)."""
    from ratchet_ray.suites.registry import registered

    plugin = registered(suite)
    factory = plugin.factory if plugin is not None else None
    module = (factory.partition(":")[0] if isinstance(factory, str)
              else getattr(factory, "__module__", None) or f"ratchet_ray.suites.{suite}")
    return (*YARDSTICK_ENTRIES, module)


def builtin_inputs(suite: str, dataset_path: str | None) -> list[Path]:
    """The config layers and the dataset file the built-in evaluator reads (contract)."""
    from ratchet_ray.run_config.files import ConfigError, layered_files, load_config
    from ratchet_ray.settings.resources import configs_dir

    files = [configs_dir() / "default.yaml", *layered_files(suite)]
    if dataset_path is None:
        try:
            dataset_path = load_config(layered_files(suite), [f"suite={suite}"]).dataset_path
        except ConfigError:
            dataset_path = None  # an unknown suite: the evaluator's own run refuses it
    if dataset_path:
        files.append(Path(dataset_path))
    return [p.resolve() for p in files if p.is_file()]
