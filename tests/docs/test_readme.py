"""README.md cannot lie again: every command it shows is checked against the code, its first
screen carries the two commands, and every relative link of README.md and docs/ resolves."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from readme_commands import Fixtures, check, make_run_dir, readme_commands

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
COMMANDS = readme_commands(README)


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> Fixtures:
    root = tmp_path_factory.mktemp("readme")
    subset = root / "subset.json"
    subset.write_text((ROOT / "configs/subsets/mbpp_quickstart.json").read_text())
    scratch = root / "scratch"
    scratch.mkdir()
    return Fixtures(run_dir=make_run_dir(root / "results"), subset=subset, scratch=scratch)


def test_the_first_screen_has_the_two_commands_and_the_page_stays_short():
    first = "\n".join(README.splitlines()[:60])
    assert "make run" in first and "make test" in first
    assert len(README.splitlines()) <= 250, "README.md is an entry page: move details to docs/"


def test_the_readme_shows_commands_of_every_kind():
    programs = {c.split()[0] for c in COMMANDS}
    assert {"make", "ray", "python"} <= programs and ".venv/bin/ratchet" in programs
    assert len(COMMANDS) >= 20


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command(command, fixtures, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    verified = check(command, fixtures)
    print(verified)  # what was checked, shown with -s / -rA
    assert verified


@pytest.mark.parametrize("command, why", [
    ("ratchet solver-cache list", "which cache?"),                  # the issue's false example
    (".venv/bin/ratchet doctor --llm nosuchbackend", "nosuchbackend"),
    ("python -m jobs.skill_loop mbpp --no-such-flag", "no-such-flag"),
    ("python -m jobs.skill_loop mbpp --set curator.no_such_key=1", "no_such_key"),
    ("python -m jobs.skill_loop mbpp --config configs/ablations/A99.yaml", "A99.yaml"),
    ("python -m jobs.no_such_job", "no such module"),
    ("make no-such-target", "no-such-target"),
    ("bash .ci/no_such_setup.sh", "no_such_setup.sh"),
    ("kubectl apply -f cluster.yaml", "no rule checks"),
])
def test_a_false_readme_command_is_caught(command, why, fixtures, monkeypatch):
    # The checks can fail: each of these would be a lie in the README.
    monkeypatch.chdir(ROOT)
    with pytest.raises(Exception) as caught:
        check(command, fixtures)
    assert why in str(caught.value) or why in repr(caught.value), caught.value


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lowercase, punctuation but '-' and '_' dropped, spaces -> '-'."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


@pytest.mark.parametrize("page", ["README.md", *sorted(p.relative_to(ROOT).as_posix()
                                                       for p in (ROOT / "docs").glob("*.md"))])
def test_every_relative_link_resolves(page):
    path = ROOT / page
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # an external URL
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        assert linked.exists(), f"{page}: link to {target}: no such file"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked.read_text()), f"{page}: link to {target}: no such heading"


def test_claims_the_issue_found_false_stay_fixed():
    pyproject = (ROOT / "pyproject.toml").read_text()
    floor = re.search(r'requires-python = ">=3\.(\d+)"', pyproject)
    assert floor and int(floor.group(1)) >= 11, "the code imports tomllib (3.11+)"
    assert "3.10" not in README
    license_text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in license_text[:200] and "Version 2.0, January 2004" in license_text
    assert json.loads((ROOT / "configs/subsets/mbpp_quickstart.json").read_text())["eval_ids"]
