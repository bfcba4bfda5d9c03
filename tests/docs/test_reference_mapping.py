"""docs/reference-mapping.md maps the reference implementation's scripts, flags, commands and
run-dir files onto this project, and every row holds against the code: each reference name the
paper's README documents has a row, each command here exists with its flags, each governance
flag maps to the setting that gives the paper's value (the retirement threshold's sign
included), and the files said to keep their names do."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from doc_names import unknown_flags
from ratchet_ray.run_config.files import layered_files, load_config
from ratchet_ray.run_config.profiles import PAPER, profile_files

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reference-mapping.md"

# What the reference's README documents (its Quickstart, Run, CLI and Run output sections).
REFERENCE_SCRIPTS = {"run_skill_loop.py", "baseline_mbpp.py", "baseline_swebench.py",
                     "select_hard_subset.py", "run_ablations.py", "plot_skill_loop.py"}
SHARED_FLAGS = {"--rounds", "--n-train", "--n-eval", "--subset", "--tag", "--no-synth",
                "--meta-every"}
GOVERNANCE_FLAGS = {"--skill-retire-contribution-threshold", "--skill-retire-min-tasks",
                    "--skill-bank-max", "--rollback-threshold", "--rollback-consecutive",
                    "--db-mode"}
REFERENCE_COMMANDS = {"doctor", "skill list", "skill load", "meta list", "audit", "curate",
                      "capsule prune", "solver-cache list", "synth metaskills"}
REFERENCE_FILES = {"config.json", "train_ids.json", "eval_ids.json", "loop.json", "run.log",
                   "history.db", "skills/", "meta-skills/", "checkpoints/", "solver_cache/",
                   "eval.json", "train.json", "*_capsules.jsonl", "synth_skills.json",
                   "synth_metaskills.json", "curate.json", "bank_skills.yaml",
                   "bank_metaskills.yaml"}


def rows(section: str) -> list[tuple[str, str]]:
    """(reference cell, here cell) of the table under ``## <section>``."""
    text = PAGE.read_text()
    body = re.search(rf"^## {re.escape(section)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert body, f"{PAGE.name} has no section '## {section}'"
    found = []
    for line in body.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 2 and not set(cells[0]) <= set("-") \
                and cells[0] != "reference":
            found.append((cells[0], cells[1]))
    assert found, f"section '## {section}' holds no table rows"
    return found


def spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def ratchet_command(words: list[str]) -> click.Command | None:
    """The (sub)command ``ratchet ...`` names, None when a word names no command."""
    from ratchet_ray.cli import main

    current: click.Command = main
    words = list(words)
    while words:
        word = words.pop(0)
        if word == "--db":
            words.pop(0)
        elif isinstance(current, click.Group) and not word.startswith("-"):
            if word not in current.commands:
                return None
            current = current.commands[word]
        else:
            break
    return current


def here_commands(section: str) -> list[str]:
    return [s for _, here in rows(section) for s in spans(here)
            if s.startswith(("ratchet ", "python -m jobs."))]


@pytest.mark.parametrize("section", ["Scripts", "Commands"])
def test_every_command_here_exists_with_its_flags(section):
    commands = here_commands(section)
    assert commands
    for command in commands:
        assert unknown_flags(command) == [], command
        words = shlex.split(command.replace("...", ""))
        if words[0] == "ratchet":
            found = ratchet_command(words[1:])
            assert found is not None and not isinstance(found, click.Group), command


def test_every_script_and_command_of_the_reference_has_a_row():
    scripts = {Path(w).name for ref, _ in rows("Scripts") for s in spans(ref)
               for w in s.split() if w.startswith("scripts/")}
    assert scripts == REFERENCE_SCRIPTS
    listed = set()
    for ref, _ in rows("Commands"):
        words, names = spans(ref)[0].split()[1:], []
        while words:  # a flag and its value are no command name (every flag here takes one)
            word = words.pop(0)
            if word.startswith("-"):
                words = words[1:]
            else:
                names.append(word)
        listed.add(" ".join(names))
    assert listed == REFERENCE_COMMANDS
    none_here = [here for ref, here in rows("Commands") if "synth metaskills" in ref]
    assert none_here and "--meta-every" in none_here[0]


def test_the_shared_flags_are_flags_of_the_run():
    from ratchet_ray.cli.run import run

    text = PAGE.read_text()
    known = {o for p in run.params for o in p.opts}
    for flag in SHARED_FLAGS:
        assert f"`{flag}`" in text, flag
        assert flag in known, flag


def test_each_governance_flag_maps_to_the_setting_holding_the_papers_value():
    paper = load_config(layered_files("mbpp", profile_files([PAPER], "mbpp")), [])
    mapped = {}
    for ref, here in rows("Flags of `run_skill_loop.py`"):
        flag = spans(ref)[0].split()[0].split("=")[0]
        sets = [s.removeprefix("--set ").split("=", 1) for s in spans(here)
                if s.startswith("--set ")]
        assert sets, f"{flag}: no --set in its row"
        mapped[flag] = (spans(ref)[0], sets)
    assert set(mapped) == GOVERNANCE_FLAGS
    for flag, (ref, sets) in mapped.items():
        for key, value in sets:
            load_config([], [f"{key}={value}"])  # a real setting taking that value
            if flag == "--db-mode":
                continue
            resolved = paper
            for part in key.split("."):
                resolved = getattr(resolved, part)
            assert float(value) == resolved, (flag, key, value, resolved)
            # The reference's value is the paper's too; only the threshold's sign flips.
            reference = float(ref.split()[1])
            sign = -1 if flag == "--skill-retire-contribution-threshold" else 1
            assert sign * reference == float(value), (flag, ref, value)


def test_the_files_said_to_keep_their_names_do():
    from ratchet_ray.loop import phases, rundir

    listed = set()
    for ref, here in rows("Run dir"):
        for name in spans(ref):
            listed.add(name.removeprefix("round_NN/"))
        if "the same" in here:
            for name in spans(ref):
                base = name.removeprefix("round_NN/")
                assert base in {rundir.TRAIN_IDS_FILE, rundir.EVAL_IDS_FILE, rundir.LOOP_FILE,
                                rundir.RUN_LOG_FILE, phases.SYNTH_FILE, phases.META_FILE,
                                phases.CURATE_FILE, "eval.json", "train.json", "skills/",
                                "meta-skills/", "solver_cache/"}, base
    assert listed == REFERENCE_FILES
    assert rundir.CONFIG_FILE == "config.yaml"


def test_the_renamed_environment_variables_exist():
    text = PAGE.read_text()
    source = (ROOT / "ratchet_ray/settings/backends.py").read_text()
    for name in re.findall(r"`(RATCHET_BEDROCK_\w+)`", text):
        assert name in source, name
    assert "RATCHET_SUITES" in (ROOT / "docs/suites.md").read_text()


def test_the_page_is_linked_from_the_readme_and_the_docs_index():
    for index in ("README.md", "docs/README.md"):
        assert "reference-mapping.md" in (ROOT / index).read_text(), index


def test_a_brought_skill_needs_intent_and_description_and_nothing_else_the_page_lists():
    from ratchet_ray.bank.skill_io import SkillFileError, parse_skill

    guidance = {"applies_when": "a fixed-size span", "key_insight": "keep a running window",
                "common_pitfalls": ["off by one"], "verify_before_returning": "length constant"}
    whole = {"id": "sliding_window", "name": "sliding_window", "intent": "Sum a window",
             "description": "Tasks over a fixed-size contiguous span", "guidance": guidance}
    import yaml

    skill = parse_skill(yaml.safe_dump(whole), "s.yaml")
    assert skill.signals_match == skill.tags == skill.preconditions == []
    assert not skill.do_not_retire
    for field in ("intent", "description"):
        with pytest.raises(SkillFileError, match=f"'{field}'"):
            parse_skill(yaml.safe_dump({k: v for k, v in whole.items() if k != field}), "s.yaml")
    assert parse_skill(yaml.safe_dump({**whole, "do_not_retire": True}), "s.yaml").do_not_retire
