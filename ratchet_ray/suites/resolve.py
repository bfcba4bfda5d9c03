"""Resolving a run's config: the one place where a ``LoopConfig`` meets the suite registry
(``settings.schema`` is a pure schema; what depends on the registered suites happens here, once).

Contracts of ``resolve_config(data=None, /, **fields) -> LoopConfig``: ``data`` is a mapping of
config keys (``fields`` merged over it) or a ``LoopConfig`` (resolved on a deep copy; no
``fields`` then). In order, it:
  1. loads the ``suite_plugins`` (stored canonical: a file as its absolute path, so every Ray
     worker loads the same file);
  2. moves each key a suite moved (``SuitePlugin.moved_keys``) into the run suite's section
     unless the new key is set, else drops it with a warning naming the new key (none for a
     default value: an old dump); moves each top-level ``<suite>:`` mapping into
     ``suite_settings.<suite>``; any other unknown top-level key raises ``ConfigResolveError``
     (``unknown_keys``' text);
  3. validates the schema (pydantic's ``ValidationError``);
  4. checks ``suite`` is registered, else ``ConfigResolveError`` listing the valid suites;
  5. validates every ``suite_settings`` section, and the run suite's even when absent, against
     its suite's model (``SuiteRegistryError`` naming the keys), stored complete so
     ``config.yaml`` pins every value;
  6. calls the run suite's ``configure(config, settings)`` once (it may set fields, validated on
     assignment, or raise ``ValueError`` naming the fix);
  7. refuses a world backend (``sim``) as ``llm.backend`` or ``llm.embedder`` without a derived
     ``llm.world``, and fills an unset ``meta.default_file`` from the suite's meta-skill.
An unloadable plugin raises ``SuitePluginError``, every other problem a ``ValueError`` naming
the key and the fix. Resolving a resolved config gives an equal one. ``suite_sections`` and
``unknown_keys`` serve ``run_config.files`` too.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, Mapping

from ratchet_ray.settings.schema import LoopConfig, default_suite
from ratchet_ray.llm.registry import WORLD_BACKENDS
from ratchet_ray.suites import hooks, registry
from ratchet_ray.suites.plugins import resolve_plugin

log = logging.getLogger(__name__)


class ConfigResolveError(ValueError):
    """A config names an unknown top-level key or suite, or breaks a suite's rule; the message
    names it and the fix."""


def resolve_config(data: Mapping[str, Any] | LoopConfig | None = None, /,
                   **fields: Any) -> LoopConfig:
    """The run's ``LoopConfig``, checked and completed against the registered suites (module
    contracts)."""
    if isinstance(data, LoopConfig):
        if fields:
            raise TypeError("resolve_config(config): pass keys in a mapping, not beside a "
                            "LoopConfig")
        config = data.model_copy(deep=True)
        plugins = [resolve_plugin(s) for s in config.suite_plugins]
        if plugins != config.suite_plugins:
            config.suite_plugins = plugins
        registry.load_plugins(plugins)
    else:
        config = LoopConfig.model_validate(_with_sections({**(data or {}), **fields}))
    _check_suite(config)
    validated = _complete_sections(config)
    run_suite = registry.registration(config.suite)
    if run_suite.configure is not None:
        run_suite.configure(config, validated.get(config.suite))
    world_backends = {config.llm.backend, config.llm.embedder} & set(WORLD_BACKENDS)
    if world_backends and config.llm.world is None:
        # Such a backend answers from a simulated world that only its suite's configure derives.
        backend = sorted(world_backends)[0]
        key = "backend" if config.llm.backend == backend else "embedder"
        raise ConfigResolveError(
            f"suite {config.suite!r} with llm.{key} {backend!r}: the {backend} backend only "
            "answers a suite that derives its simulated world (llm.world), such as its own "
            f"suite; use another backend or configs/{backend}.yaml")
    if config.meta.default_file is None and run_suite.metaskill is not None:
        config.meta.default_file = str(run_suite.metaskill)
    return config


def _with_sections(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with canonical plugin specs (loaded now) and each top-level suite section moved
    into ``suite_settings``; unknown top-level keys raise ``ConfigResolveError``."""
    plugins = data.get("suite_plugins")
    if isinstance(plugins, (list, tuple)) and all(isinstance(s, str) for s in plugins):
        data["suite_plugins"] = plugins = [resolve_plugin(s) for s in plugins]
    else:
        plugins = ()  # not a list of specs: the schema names the type error
    sections = suite_sections(plugins)
    _move_keys(data)
    extra = [k for k in data if k not in LoopConfig.model_fields]
    if not extra:
        return data
    unknown = [k for k in extra if k not in sections]
    if unknown:
        raise ConfigResolveError(unknown_keys(unknown, sections))
    merged = dict(data.get("suite_settings") or {})
    for name in extra:
        section = data.pop(name) or {}
        if not isinstance(section, Mapping):
            raise ConfigResolveError(f"{name}: the {name} suite's section must be a mapping of "
                                     f"its settings, got {section!r}")
        merged[name] = {**(merged.get(name) or {}), **section}
    data["suite_settings"] = merged
    return data


def _move_keys(data: dict[str, Any]) -> None:
    """Each old key a suite moved (``hooks.moved_keys``) taken out of ``data``: into the new
    key's top-level section when the run's suite reads it there, else dropped with a warning."""
    moved = hooks.moved_keys()
    if not moved:
        return
    suite = data.get("suite") if isinstance(data.get("suite"), str) else default_suite()
    for old, targets in moved.items():
        head, leaf = old.split(".")
        section = data.get(head)
        if not isinstance(section, Mapping) or leaf not in section:
            continue
        section = dict(section)
        value = section.pop(leaf)
        data[head] = section
        new = targets.get(suite)
        if new is None:
            if not all(_is_default(target, value) for target in targets.values()):
                # A dumped default (an old run dir's config.yaml) is not worth a line each load.
                log.warning("%s is no longer a setting of the %s section: it is %s now, which "
                            "suite %s does not read; ignored", old, head,
                            " / ".join(sorted(set(targets.values()))), suite)
            continue
        dest, key = new.split(".")
        stored = (data.get("suite_settings") or {}).get(dest) or {}
        given = data.get(dest) if isinstance(data.get(dest), Mapping) else {}
        if key not in stored and key not in given:  # the new key, when set, wins
            data[dest] = {**given, key: value}


def _is_default(key: str, value: Any) -> bool:
    """Whether ``value`` is the default of the suite-section ``key`` (``suite.field``)."""
    suite, field = key.split(".")
    model = getattr(registry.registered(suite), "settings", None)
    info = getattr(model, "model_fields", {}).get(field)
    return info is not None and info.get_default(call_default_factory=True) == value


def _check_suite(config: LoopConfig) -> None:
    names = registry.suite_names()
    if config.suite not in names:
        raise ConfigResolveError(
            f"suite {config.suite!r} is not registered; valid suites: {', '.join(names)} (a "
            f"plugin suite needs its module in suite_plugins or ${registry.ENV_VAR})")


def _complete_sections(config: LoopConfig) -> dict[str, Any]:
    """Each suite section validated by its suite's model (by suite name), stored complete."""
    wanted = set(config.suite_settings)
    if registry.registration(config.suite).settings is not None:
        wanted.add(config.suite)
    validated = {name: registry.validate_settings(name, config.suite_settings.get(name))
                 for name in sorted(wanted)}
    complete = {name: settings.model_dump(mode="json") for name, settings in validated.items()}
    if complete != config.suite_settings:
        config.suite_settings = complete
    return validated


def suite_sections(plugins: Iterable[str] = ()) -> list[str]:
    """Top-level keys that are suites' sections: the registered suites with a settings model,
    after loading ``plugins`` (a ``suite_plugins`` list)."""
    registry.load_plugins(plugins)
    return registry.settings_sections()


def unknown_keys(keys: list[str], sections: list[str]) -> str:
    """The error text for top-level ``keys`` that are neither fields nor suite sections."""
    valid = [*LoopConfig.model_fields, *sections]
    return (f"unknown key{'s' if len(keys) > 1 else ''} {', '.join(map(repr, keys))} at top "
            f"level{did_you_mean(keys, valid)}; valid keys: "
            f"{', '.join(sorted(LoopConfig.model_fields))}; suite sections: {', '.join(sections)}")


def did_you_mean(keys: list[str], valid: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the first of ``keys`` close to a ``valid`` one, else ``""``."""
    import difflib

    for key in keys:
        close = difflib.get_close_matches(key, list(valid), n=1, cutoff=0.6)
        if close:
            return f" (did you mean {close[0]!r}?)"
    return ""
