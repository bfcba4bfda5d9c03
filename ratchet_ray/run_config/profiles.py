"""Named profiles: ready-made settings a command takes with ``--profile NAME`` (repeatable).

Contracts:
- A profile is ``configs/profiles/<name>.yaml`` (every suite) or a folder
  ``configs/profiles/<name>/`` of ``all.yaml`` and one ``<suite>.yaml`` per suite it covers.
  ``profile_files(names, suite)`` lists the files of ``names`` in order; an unknown name, or a
  suite a profile does not cover, raises ``ConfigError`` naming the valid choices.
- ``PAPER`` (``paper``) is the paper's setting: Bedrock Claude Opus 4.7 + Cohere embed-v4, the
  hard subset, the paper's rounds and Default; ``PAPER_SEEDS`` its sweep's seeds. ``HARDENED``
  (``hardened``) turns on the rules beyond the paper (tampering rule, cheat probe).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from ratchet_ray.settings import resources

PAPER = "paper"
HARDENED = "hardened"
PAPER_SEEDS = (42, 7, 13)
"""The seeds of the paper's runs (every table: mean ± std over these three)."""
PROFILES_DIR = "profiles"
_ALL = "all.yaml"


def profiles_dir() -> Path:
    """``configs/profiles`` (the checkout's or the installed copy)."""
    return resources.configs_dir() / PROFILES_DIR


def profile_names() -> list[str]:
    """Every shipped profile's name, sorted."""
    root = profiles_dir()
    names = {p.stem for p in root.glob("*.yaml")} | {p.name for p in root.iterdir()
                                                     if (p / _ALL).is_file()}
    return sorted(names)


def profile_suites(name: str) -> list[str] | None:
    """The suites a folder profile covers; None for a file profile (every suite)."""
    folder = profiles_dir() / name
    if not folder.is_dir():
        return None
    return sorted(p.stem for p in folder.glob("*.yaml") if p.name != _ALL)


def profile_files(names: Iterable[str], suite: str) -> list[Path]:
    """The files of the profiles ``names``, in order, for ``suite`` (module contracts)."""
    from ratchet_ray.run_config.files import ConfigError

    files: list[Path] = []
    for name in names:
        root = profiles_dir()
        if (root / f"{name}.yaml").is_file():
            files.append(root / f"{name}.yaml")
            continue
        suites = profile_suites(name)
        if suites is None:
            raise ConfigError(f"--profile {name}: no such profile; valid: "
                              f"{', '.join(profile_names())}")
        if suite not in suites:
            raise ConfigError(f"--profile {name} has no setting for suite {suite!r} (it covers "
                              f"{', '.join(suites)}); fix: drop --profile or run one of those")
        files += [root / name / _ALL, root / name / f"{suite}.yaml"]
    return files
