"""Importing suite plugins: spec parsing, module import and the errors a user sees.

Contracts:
- A plugin spec is a ``.py`` file path (made absolute) or a dotted module name;
  ``resolve_plugin(spec)`` is its canonical form (stored in a resolved config's
  ``suite_plugins``, so every Ray worker loads the same file), ``plugin_key(spec)`` that form
  and the file's path (None for a module). Any other spec raises ``SuitePluginError``.
- ``import_plugin(key, path, source)`` imports it once per process (a file under a name derived
  from its absolute path) and returns the module name; a missing file or a failing import raises
  ``SuitePluginError`` naming the spec, ``source``, the plugin's failing line when known, and the
  fix.
- ``entry_point_factory(ep, dist)`` is a suite factory loading an installed package's entry point
  on first use; a failing load raises ``SuitePluginError`` naming it, its package and the fix.

No registry state lives here: ``registry.load_plugins`` and ``registry.discover`` use it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable

ENTRY_POINT_GROUP = "ratchet_ray.suites"
ENV_VAR = "RATCHET_SUITES"
MODULE_NAME = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*")


class SuitePluginError(ImportError):
    """A suite plugin (path, module or entry point) cannot be loaded; names it and the fix."""


def plugin_key(spec: str) -> tuple[str, Path | None]:
    """The canonical form of ``spec`` and, for a file, its absolute path (module contracts)."""
    spec = str(spec).strip()
    if spec.endswith(".py") or os.sep in spec or "/" in spec:
        path = Path(spec).expanduser().resolve()
        return str(path), path
    if not MODULE_NAME.fullmatch(spec):
        raise SuitePluginError(f"suite plugin {spec!r}: neither a .py file path nor a dotted "
                               "module name; name e.g. path/to/my_suite.py or my_pkg.suite")
    return spec, None


def resolve_plugin(spec: str) -> str:
    """The canonical form of a plugin spec: an absolute path for files, else the module name."""
    return plugin_key(spec)[0]


def import_plugin(key: str, path: Path | None, source: str) -> str:
    """Import the plugin; return its module name (module contracts)."""
    origin = f"plugin {key} (from {source})"
    try:
        if path is None:
            importlib.import_module(key)
            return key
        if not path.is_file():
            raise SuitePluginError(f"suite plugin {path} (from {source}): no such file; fix the "
                                   "path (relative paths are taken from the working directory)")
        digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
        module_name = f"ratchet_suite_plugin_{path.stem}_{digest}"
        if module_name in sys.modules:
            return module_name
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(module_name, None)
            raise
        return module_name
    except SuitePluginError:
        raise
    except Exception as exc:  # a user's module may fail in any way; name it and the cause
        where = _failure_site(exc, path)
        cause = " ".join(f"{type(exc).__name__}: {exc}".split())  # one line, whatever it holds
        probe = f"python {path}" if path is not None else f"python -c 'import {key}'"
        raise SuitePluginError(f"suite {origin} failed to import: {cause}{where}; fix the "
                               f"module (`{probe}` shows the traceback) or remove it from "
                               f"{source}") from exc


def _failure_site(exc: BaseException, path: Path | None) -> str:
    """`` (at FILE:LINE)`` of the plugin's own line that failed (its last frame in ``path``, or
    a syntax error's position), else ``""``."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f" (at {exc.filename}:{exc.lineno})"
    site = ""
    frame = exc.__traceback__
    while frame is not None:
        name = frame.tb_frame.f_code.co_filename
        if path is not None and name == str(path):
            site = f" (at {name}:{frame.tb_lineno})"
        frame = frame.tb_next
    return site


def entry_point_factory(ep: Any, dist: str) -> Callable[[], Any]:
    """A factory that loads the entry point ``ep`` (of package ``dist``) when first called."""
    def load() -> Any:
        try:
            factory = ep.load()
        except Exception as exc:  # the installed package's module may fail in any way
            raise SuitePluginError(
                f"suite entry point {ep.name} = {ep.value} (package {dist}, group "
                f"{ENTRY_POINT_GROUP}) failed to load: {type(exc).__name__}: {exc}; reinstall "
                "or fix that package") from exc
        return factory()

    load.suite_target = ep.value  # type: ignore[attr-defined]
    return load
