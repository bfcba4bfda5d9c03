"""Config files: the layering of YAML files and ``key.sub=value`` overrides into one ``LoopConfig``
(the schema itself is ``ratchet_ray.settings.schema``).

Contracts:
- ``load_config(files, overrides)`` merges the files in order, then the overrides, and resolves
  the result (``suites.resolve_config``); any problem raises ``ConfigError`` naming the file or
  override, the key, and the valid keys or values (an unloadable plugin: the registry's line).
- ``suite_files(suite)`` is the suite's own layer (``configs/<suite>.yaml``); every entry point
  layers Default -> suite file -> ``--config`` / arm files -> flags and ``--set``
  (``layered_files``), so a suite's paper values (20 SWE-bench rounds) hold under every arm,
  the baseline and the subset selection.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import yaml
from pydantic import BaseModel, ValidationError

from ratchet_ray.settings import resources
from ratchet_ray.settings.schema import LoopConfig, read_config_file, yaml_problem
from ratchet_ray.storage.fsutil import cannot_read
from ratchet_ray.suites.hooks import moved_keys
from ratchet_ray.suites.plugins import SuitePluginError
from ratchet_ray.suites.resolve import (did_you_mean, resolve_config, suite_sections,
                                        unknown_keys)

CONFIGS_DIR = resources.configs_dir()  # the checkout's, or the copy a wheel ships


def suite_files(suite: str, configs_dir: Path = CONFIGS_DIR) -> list[Path]:
    """The suite's layer on top of the Default: ``configs/<suite>.yaml`` if it exists."""
    path = configs_dir / f"{suite}.yaml"
    return [path] if path.is_file() else []


def layered_files(suite: str, files: Iterable[str | Path] = ()) -> list[Path]:
    """Default -> suite file -> ``files`` (``--config`` or an arm's file), in that order."""
    return [*suite_files(suite), *(Path(f) for f in files)]


class ConfigError(ValueError):
    """A config file or override is invalid; the message names where, what and the valid choices."""


def _parse_override(text: str) -> tuple[list[str], Any]:
    if "=" not in text:
        raise ConfigError(f"override {text!r}: expected key.sub=value, e.g. curator.active_cap=100")
    key, raw = text.split("=", 1)
    try:
        return key.strip().split("."), yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"override {text!r}: the value is not valid YAML "
                          f"({yaml_problem(exc)}); quote it, e.g. --set 'key=\"text\"'") from exc


def _set_path(tree: dict, path: list[str], value: Any, origin: str) -> None:
    if ".".join(path) in moved_keys():  # a key a suite moved: resolve_config moves it on
        _set_free(tree, path, value, origin)
        return
    if path[0] not in LoopConfig.model_fields:
        plugins = tree.get("suite_plugins")
        sections = suite_sections(plugins if isinstance(plugins, (list, tuple)) else ())
        if path[0] not in sections:
            raise ConfigError(f"{origin}: {unknown_keys([path[0]], sections)}")
        path = ["suite_settings", *path]  # ``swebench.memory_mb``: that suite's section
    model: type[BaseModel] | None = LoopConfig
    for i, part in enumerate(path):
        if model is None:  # the key before this part holds a value, not a section of keys
            holder = ".".join(path[:i])
            raise ConfigError(f"{origin}: {holder} is not a section; set it as {holder}=VALUE")
        fields = model.model_fields
        if part not in fields:
            where = ".".join(path[:i]) or "top level"
            raise ConfigError(
                f"{origin}: unknown key {'.'.join(path[: i + 1])!r} at {where}"
                f"{did_you_mean([part], fields)}; valid keys: {', '.join(sorted(fields))}"
            )
        annotation = fields[part].annotation
        if getattr(annotation, "__origin__", None) is dict:
            # Free-form section (suite_settings): resolve_config checks it against its suite.
            _set_free(tree, path[i:], value, origin)
            return
        model = _section(model, part)
        if i == len(path) - 1:
            tree[part] = value
        else:
            tree = tree.setdefault(part, {})
            if not isinstance(tree, dict):
                holder = ".".join(path[: i + 1])
                raise ConfigError(f"{origin}: {holder} is not a section; set it as {holder}=VALUE")


def _set_free(tree: dict, path: list[str], value: Any, origin: str) -> None:
    for i, part in enumerate(path[:-1]):
        tree = tree.setdefault(part, {})
        if not isinstance(tree, dict):
            raise ConfigError(f"{origin}: {'.'.join(path[: i + 1])} is not a section")
    tree[path[-1]] = value


def _section(model: type[BaseModel] | None, key: str) -> type[BaseModel] | None:
    """The settings model of field ``key`` of ``model`` when it is a section, else None."""
    field = model.model_fields.get(key) if model else None
    annotation = field.annotation if field else None
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _flatten(data: dict, prefix: tuple[str, ...] = (),
             model: type[BaseModel] | None = None) -> Iterable[tuple[list[str], Any]]:
    # Sections are walked key by key; a mapping-valued field (llm.prices) is one value, and so
    # is anything under an unknown key (``_set_path`` names it).
    model = LoopConfig if not prefix and model is None else model
    for key, value in data.items():
        path = (*prefix, str(key))
        section = _section(model, str(key))
        if isinstance(value, dict) and value and (section is not None or model is None
                                                  or str(key) not in model.model_fields):
            yield from _flatten(value, path, section)
        else:
            yield list(path), value


def _explain(err: ValidationError, origin: str, set_by: dict[str, str] | None = None
             ) -> ConfigError:
    """One line per error; ``set_by`` (key -> the file or override that gave its value last)
    names where a bad value came from, as a user with layered files and ``--set`` needs."""
    lines = []
    for item in err.errors():
        loc = ".".join(str(p) for p in item["loc"])
        expected = item.get("ctx", {}).get("expected")
        hint = f" (valid: {expected})" if expected else ""
        source = (set_by or {}).get(loc.removeprefix("suite_settings."))
        hint += f" (from {source})" if source else ""
        msg = item["msg"].removeprefix("Value error, ")  # pydantic's label, not the problem
        lines.append(f"{origin}: {loc + ': ' if loc else ''}{msg}{hint}")
    return ConfigError("\n".join(lines))


def load_config(files: Iterable[str | Path] = (), overrides: Iterable[str] = ()) -> LoopConfig:
    """Merge YAML ``files`` in order, then ``overrides`` (``key.sub=value``); resolve once."""
    try:
        return _load_config(files, overrides)
    except SuitePluginError as exc:  # a suite_plugins / $RATCHET_SUITES module: its own line
        raise ConfigError(str(exc)) from exc


def _load_config(files: Iterable[str | Path], overrides: Iterable[str]) -> LoopConfig:
    tree: dict[str, Any] = {}
    set_by: dict[str, str] = {}
    for file in files:
        path = Path(file)
        try:
            data = read_config_file(path)
        except ValueError as exc:  # names the file and the fix
            if isinstance(exc.__cause__, OSError):  # the read doors' words, with their fix
                raise ConfigError(f"{path}: {cannot_read(path, exc.__cause__)}") from exc
            raise ConfigError(str(exc)) from exc
        for key_path, value in _flatten(data):
            _set_path(tree, key_path, value, str(path))
            set_by[".".join(key_path)] = str(path)
    for text in overrides:
        key_path, value = _parse_override(text)
        _set_path(tree, key_path, value, f"override {text!r}")
        set_by[".".join(key_path)] = f"--set {text}"
    try:
        return resolve_config(tree)
    except ValidationError as exc:
        raise _explain(exc, "config", set_by) from exc
    except ValueError as exc:  # a suite's rule, or an environment default (each names itself)
        raise ConfigError(f"config: {exc}") from exc


def dump_config(config: LoopConfig, path: str | Path) -> None:
    """Write the resolved config, backend settings included; ``load_config([path])`` gives back
    an equal config, except that a ``llm.base_url`` with user info is written without it (no
    secret is ever written; see ``ratchet_ray.settings.backends``)."""
    from ratchet_ray.storage.fsutil import atomic_write_text

    atomic_write_text(path, config_text(config))


def config_text(config: LoopConfig) -> str:
    """The YAML ``dump_config`` writes (what ``--dry-run`` prints)."""
    from ratchet_ray.redact import redact_url

    data = config.model_dump(mode="json")
    if data["llm"].get("base_url"):
        data["llm"]["base_url"] = redact_url(data["llm"]["base_url"])
    return yaml.safe_dump(data, sort_keys=False)
