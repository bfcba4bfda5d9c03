"""The suite registry: it holds ``SuitePlugin`` objects (``contract.py``), and nothing else.

Contracts:
- ``register(plugin, *, replace=False)`` adds a plugin; ``register(name, factory, **fields)``
  takes its fields as keywords. A bad field raises ``SuiteRegistryError`` at once, and so does a
  taken name unless it is the same factory again (a module imported twice) or ``replace=True``.
- ``discover()``, once per process before the first lookup, registers every entry point of the
  group ``ratchet_ray.suites`` (name = suite name, value = ``module:Factory``) and every plugin
  in ``$RATCHET_SUITES`` (``os.pathsep``-separated); a failed discovery is retried, and
  reported, on the next lookup.
- ``load_plugins(specs)`` imports, once per process, modules that call ``register`` (a ``.py``
  path or a dotted module name); a missing file, a failing import or a module that registers
  nothing raises ``SuitePluginError`` naming the spec and the fix. ``resolve_config`` and, in
  each Ray worker, ``suite_for(config)`` load a config's ``suite_plugins`` through it.
- Everything else the generic code asks of a suite goes through ``hooks.py``. Registrations,
  loaded plugins and discovery are per-process module state.
"""

from __future__ import annotations

import importlib
import os
from importlib.metadata import entry_points
from typing import Any, Callable, Iterable

from ratchet_ray.suites.contract import (BUILTIN_OUTPUT_KINDS, CRITIC_FLAVOURS, Cluster,
                                         SuitePlugin, SuiteRegistryError, check_shape)
from ratchet_ray.suites.plugins import (ENTRY_POINT_GROUP, ENV_VAR, SuitePluginError,
                                        entry_point_factory, import_plugin, plugin_key)

__all__ = ["BUILTIN_OUTPUT_KINDS", "CRITIC_FLAVOURS", "ENTRY_POINT_GROUP", "ENV_VAR",
           "SuitePlugin", "SuitePluginError", "SuiteRegistryError"]

_REGISTRY: dict[str, SuitePlugin] = {}
_LOADED: dict[str, tuple[str, ...]] = {}  # plugin key -> suite names it registered
_DISCOVERED = False


def _target(factory: Callable[[], Any] | str) -> str:
    """``module:attr`` of a factory; an entry point's loader names the target it loads."""
    if isinstance(factory, str):
        return factory
    return getattr(factory, "suite_target", None) or (
        f"{getattr(factory, '__module__', None)}:{getattr(factory, '__qualname__', id(factory))}")


def register(plugin: SuitePlugin | str, factory: Callable[[], Any] | str | None = None, *,
             replace: bool = False, **fields: Any) -> SuitePlugin:
    """Add a suite (module contracts): a ``SuitePlugin``, or its name, factory and fields as
    keywords. Returns the plugin registered."""
    if isinstance(plugin, SuitePlugin):
        if factory is not None or fields:
            raise SuiteRegistryError(f"suite {plugin.name!r}: register(plugin) takes no other "
                                     "fields; set them on the SuitePlugin")
        name, factory = plugin.name, plugin.factory
    else:
        name = plugin
        unknown = sorted(set(fields) - set(SuitePlugin.field_names()))
        moved = [f for f in unknown
                 if f in Cluster.__dataclass_fields__ or f == "cluster_node_types"]
        if moved:
            raise SuiteRegistryError(f"suite {name!r}: {', '.join(moved)} moved into the Cluster "
                                     "extension; pass cluster=Cluster(...) "
                                     "(ratchet_ray.suites.contract)")
        if unknown:
            valid = sorted(set(SuitePlugin.field_names()) - {"name", "factory"})
            raise SuiteRegistryError(f"suite {name!r}: unknown register() argument(s) "
                                     f"{', '.join(unknown)}; valid fields: {', '.join(valid)}")
    old = _REGISTRY.get(name) if isinstance(name, str) else None
    # The same target again is no clash: a module imported twice, or an entry point's module
    # that also calls register() for itself when the entry point loads it.
    if old is not None and not replace and not (old.factory is factory
                                                or _target(old.factory) == _target(factory)):
        raise SuiteRegistryError(f"suite {name!r} is already registered by {old.origin}; "
                                 "choose another name, or pass replace=True to override it on "
                                 "purpose")
    if not isinstance(plugin, SuitePlugin):
        plugin = SuitePlugin(name, factory, **fields)
    _REGISTRY[plugin.name] = plugin
    return plugin


def unregister(name: str) -> None:
    """Remove ``name`` (tests and interactive sessions); unknown names raise ``SuiteRegistryError``."""
    if _REGISTRY.pop(name, None) is None:
        raise SuiteRegistryError(f"suite {name!r} is not registered")


def load_plugins(specs: Iterable[str], *, source: str = "suite_plugins") -> list[str]:
    """Import each plugin once; return the suite names they registered (module contracts)."""
    names: list[str] = []
    for spec in specs:
        key, path = plugin_key(spec)
        if key not in _LOADED:
            before = set(_REGISTRY)
            module_name = import_plugin(key, path, source)
            # A module imported before (by the user's own code) registered its suites then.
            added = tuple(sorted(set(_REGISTRY) - before)) or tuple(sorted(
                n for n, r in _REGISTRY.items()
                if getattr(r.factory, "__module__", None) == module_name))
            if not added:
                raise SuitePluginError(
                    f"suite plugin {key} (from {source}) registered no suite; call "
                    "ratchet_ray.suites.register('<name>', <SuiteClass>) at module level")
            _LOADED[key] = added
        names.extend(_LOADED[key])
    return names


def discover(*, force: bool = False) -> None:
    """Register entry-point suites and load ``$RATCHET_SUITES`` plugins (once per process)."""
    global _DISCOVERED
    if _DISCOVERED and not force:
        return
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(getattr(ep, "dist", None), "name", "?")
        origin = f"entry point {ep.name} = {ep.value} of package {dist}"
        try:
            register(ep.name, entry_point_factory(ep, dist), origin=origin)
        except SuiteRegistryError as exc:
            raise SuitePluginError(f"{origin} (group {ENTRY_POINT_GROUP}): {exc}") from exc
    specs = [s for s in os.environ.get(ENV_VAR, "").split(os.pathsep) if s.strip()]
    load_plugins(specs, source=f"${ENV_VAR}")
    _DISCOVERED = True  # only once everything loaded: a failure is reported on every lookup


def suite_names() -> list[str]:
    """Every registered suite name, sorted (after discovery)."""
    discover()
    return sorted(_REGISTRY)


def registered_so_far() -> list[SuitePlugin]:
    """The suites registered in this process until now, without discovery (by name)."""
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def registration(name: str) -> SuitePlugin:
    """A suite's plugin; an unknown name lists the registered ones and how to add one."""
    discover()
    if name not in _REGISTRY:
        raise SuiteRegistryError(
            f"unknown suite {name!r}; valid suites: {', '.join(sorted(_REGISTRY))}. Add one with "
            f"ratchet_ray.suites.register() in a module named in the config's suite_plugins, in "
            f"${ENV_VAR}, or in an entry point of group {ENTRY_POINT_GROUP}")
    return _REGISTRY[name]


def registered(name: str) -> SuitePlugin | None:
    """The registration of ``name``, or None when no suite of that name is registered."""
    discover()
    return _REGISTRY.get(name)


def resolve(target: Callable[..., Any] | str) -> Callable[..., Any]:
    """A callable, or the one a ``"module:attr"`` string names (imported now)."""
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)
    return target


def get_suite(name: str) -> Any:
    """Instantiate the suite called ``name`` and check its shape; unknown names list the valid
    ones."""
    suite = resolve(registration(name).factory)()
    check_shape(name, suite)
    return suite


def suite_for(config: Any) -> Any:
    """The suite of a run: loads ``config.suite_plugins`` in this process, then ``get_suite``."""
    load_plugins(getattr(config, "suite_plugins", ()))
    return get_suite(config.suite)


def validate_settings(name: str, section: Any) -> Any:
    """The suite's settings model validated from ``section`` (a dict, or None for defaults)."""
    reg = registration(name)
    if reg.settings is None:
        raise SuiteRegistryError(f"suite_settings.{name}: suite {name!r} registered no settings "
                                 "model; remove the section or pass settings= to register()")
    try:
        return reg.settings.model_validate(section or {})
    except ValueError as exc:  # pydantic's ValidationError: name the section and its keys
        errors = exc.errors() if hasattr(exc, "errors") else [{"loc": (), "msg": str(exc)}]
        problems = "; ".join(f"{'.'.join((name, *map(str, e['loc'])))}: {e['msg']}"
                             for e in errors)
        raise SuiteRegistryError(f"{problems} (valid keys of the {name} section: "
                                 f"{', '.join(sorted(reg.settings.model_fields))})") from None


def settings_for(config: Any, name: str | None = None) -> Any:
    """The one reader of a suite's settings: the validated ``suite_settings.<name>`` section of
    ``config`` (``name``: the run's suite), the registered model's defaults when the config has no
    such section; then, when the model defines ``for_run(config)``, what it returns: the run-wide
    options that override the section (SWE-bench's ``dataset_path`` over ``dataset_name``)."""
    load_plugins(getattr(config, "suite_plugins", ()))
    name = name or config.suite
    settings = validate_settings(name, (getattr(config, "suite_settings", None) or {}).get(name))
    for_run = getattr(settings, "for_run", None)
    return for_run(config) if callable(for_run) else settings


def settings_sections() -> list[str]:
    """Names of the registered suites that have a settings model (their config sections)."""
    discover()
    return sorted(n for n, r in _REGISTRY.items() if r.settings is not None)


BUILTIN_ORIGIN = "ratchet_ray (built in)"
BUILTIN_PLUGINS = (
    "ratchet_ray.suites.mbpp.registration",
    "ratchet_ray.suites.swebench.registration",
    "ratchet_ray.suites.sim.registration",
    "ratchet_ray.suites.mbpp_oracle.registration",
)
"""The built-in suites: each registers itself in its own folder, the way a plugin does (the one
place outside the suites' folders that names them); config and the generic code know none."""

for _module in BUILTIN_PLUGINS:
    importlib.import_module(_module)
