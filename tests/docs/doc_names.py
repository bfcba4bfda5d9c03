"""What the documentation names that the code must have: config settings and pip extras.

- ``setting_mentions(text, html=False)``: the dotted config keys a page names: every
  ``--set KEY=...`` and every backticked ``section.key`` (``<code>section.key</code>`` too with
  ``html``) whose first part is a config section (a ``LoopConfig`` field or a suite's section,
  e.g. ``swebench``) and whose last part is not a file extension (``sweep.json``).
- ``unknown_setting(key)``: True when the config refuses ``key`` as an unknown key (its value
  aside: ``KEY=null`` is loaded, and only an "unknown key" refusal counts) and no module of
  ``ratchet_ray`` is named that way with that attribute (``curator.apply_cheat_rule`` is the
  function of ``governance/curator.py``, not a setting).
- ``extras_named(text)``: the extras a page installs or lists: ``ratchet-ray[a,b]``, ``.[a,b]``
  and the backticked names of a sentence starting "The extras are".
- ``pyproject_extras()``: the keys of ``[project.optional-dependencies]``.
- ``unknown_flags(command)``: the ``--flags`` of a ``python -m jobs.X`` / ``ratchet`` command
  line that its command does not have (the docs' commands, checked without running them).
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
import shlex
import tomllib
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_FILE_EXTENSIONS = {"json", "jsonl", "yaml", "yml", "md", "py", "html", "log", "parquet", "png",
                    "db", "lock", "txt", "gz", "tmp", "csv"}
_KEY = r"[a-z_]+(?:\.[a-z0-9_]+)+"


@cache
def _sections() -> frozenset[str]:
    from ratchet_ray.settings.schema import LoopConfig
    from ratchet_ray.suites import suite_names

    return frozenset(LoopConfig.model_fields) | frozenset(suite_names())


def setting_mentions(text: str, html: bool = False) -> set[str]:
    """The config keys ``text`` names (module contracts)."""
    patterns = [rf"`({_KEY})(?:=[^`]*)?`", r"--set[ =]([a-z_][a-z0-9_.]*)="]
    if html:
        patterns.append(rf"<code>({_KEY})(?:=[^<]*)?</code>")
    found = set()
    for pattern in patterns:
        for key in re.findall(pattern, text):
            parts = key.split(".")
            if parts[0] in _sections() and parts[-1] not in _FILE_EXTENSIONS:
                found.add(key)
    return found


@cache
def _modules_named() -> dict[str, list[str]]:
    import ratchet_ray

    named: dict[str, list[str]] = {}
    for module in pkgutil.walk_packages(ratchet_ray.__path__, "ratchet_ray."):
        named.setdefault(module.name.rsplit(".", 1)[-1], []).append(module.name)
    return named


def _code_reference(key: str) -> bool:
    first, *rest = key.split(".")
    for name in _modules_named().get(first, []):
        obj = importlib.import_module(name)
        for part in rest:
            if hasattr(obj, part):
                obj = getattr(obj, part)
            elif hasattr(obj, "__path__") and importlib.util.find_spec(f"{obj.__name__}.{part}"):
                obj = importlib.import_module(f"{obj.__name__}.{part}")  # a submodule
            else:
                break
        else:
            return True
    return False


@cache
def unknown_setting(key: str) -> bool:
    """Whether no setting (and no code) is named ``key`` (module contracts)."""
    from ratchet_ray.run_config.files import ConfigError, load_config

    try:
        load_config([], [f"{key}=null"])
        return False
    except ConfigError as exc:
        if "unknown key" not in str(exc):
            return False  # the key exists; null is just not a value it takes
    return not _code_reference(key)


def extras_named(text: str) -> set[str]:
    """The pip extras ``text`` installs or lists (module contracts)."""
    found = set()
    for group in re.findall(r"(?:ratchet-ray|\.)\[([a-z0-9_,\- ]+)\]", text):
        found.update(e.strip() for e in group.split(","))
    for sentence in re.findall(r"[Tt]he extras are (.*?)\.(?:\s|$)", text, re.S):
        found.update(re.findall(r"`([a-z0-9_-]+)`", sentence))
    return found


def pyproject_extras() -> set[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return set(data["project"]["optional-dependencies"])


def _click_command(words: list[str]):
    """The click command a ``python -m jobs.X`` / ``ratchet`` command line runs (its group for
    ``ratchet``), and the words after the program; None for any other program."""
    if words[:2] == ["python", "-m"] and words[2].startswith("jobs."):
        module = importlib.import_module(words[2])
        found = [v for v in vars(module).values() if isinstance(v, __import__("click").Command)]
        return (found[0], words[3:]) if len(found) == 1 else None
    if words and Path(words[0]).name == "ratchet":
        from ratchet_ray.cli import main

        return main, words[1:]
    return None


def unknown_flags(command: str) -> list[str]:
    """The ``--flags`` of a ``python -m jobs.X`` or ``ratchet`` command line (after any
    ``VAR=value`` words) that its (sub)command does not have; [] for other programs.
    Subcommands are the words naming one of the current group's commands; a flag counts for
    the command it follows (``ratchet --db RUN skill list --status all``)."""
    import click

    words = shlex.split(command, comments=True)
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):  # VAR=value python -m ...
        words = words[1:]
    found = _click_command(words)
    if found is None:
        return []
    current, words = found
    known = {o for p in current.params for o in p.opts + p.secondary_opts}
    unknown = []
    for word in words:
        if isinstance(current, click.Group) and word in current.commands:
            current = current.commands[word]  # a group's options go before its subcommand
            known = {o for p in current.params for o in p.opts + p.secondary_opts}
        elif word.startswith("--") and word != "--":
            flag = word.split("=", 1)[0]
            if flag not in known | {"--help"}:
                unknown.append(flag)
        elif word == "--":
            break
    return unknown
