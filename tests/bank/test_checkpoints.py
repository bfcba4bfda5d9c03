"""Bank snapshots (``bank/checkpoints.py``) that met a door: the run dir gone before a snapshot,
a file where a snapshot folder belongs, and a snapshot that lost files or whose manifest is
garbled or another run's. Each used to end silently wrong (a half run dir made again, a
rollback restoring fewer skills) or in a traceback; now one line names it and the fix, and
nothing is replaced."""

from __future__ import annotations

import errno
import json
import shutil

import pytest
from fakes import HashEmbedder
from skill_builders import TOPICS, make_skill

from ratchet_ray.bank.checkpoints import (CheckpointError, checkpoint_dir, read_snapshot,
                                          snapshot_problem)
from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.types import MetaSkill


def _bank(run_dir) -> SkillBank:
    run_dir.mkdir(parents=True, exist_ok=True)  # as in a run: the bank finds its run dir
    bank = SkillBank(run_dir, embedder=HashEmbedder(), config=LoopConfig(), run_id=run_dir.name)
    for i, name in enumerate(("a", "b", "c")):
        bank.add(make_skill(name, TOPICS[i]), round_=0)
    bank.add_metaskill(MetaSkill(id="m1", suite="mbpp", body="# m"), round_=0)
    return bank


def test_a_snapshot_of_a_run_dir_gone_is_refused_naming_it_and_makes_nothing(run_dir):
    """Was: ``checkpoints/round_01`` made again, with the run dir above it (a half run dir)."""
    bank = _bank(run_dir)
    shutil.rmtree(run_dir)
    with pytest.raises(FileNotFoundError) as raised:
        bank.snapshot(1)
    assert str(raised.value) == (
        f"the run dir {run_dir} is gone (deleted or moved while the run ran): the bank snapshot "
        "of round 1 is not written, so nothing makes it again")
    assert not run_dir.exists()


@pytest.mark.parametrize("where", ["checkpoints", "round"])
def test_a_file_where_a_snapshot_folder_belongs_is_named_and_kept(run_dir, where):
    """Was: ``FileExistsError`` for ``checkpoints``; for ``round_01`` the file was renamed to
    ``round_01.prev`` and the swap's clean-up failed on it (a traceback, the file moved)."""
    bank = _bank(run_dir)
    target = run_dir / "checkpoints" if where == "checkpoints" else checkpoint_dir(run_dir, 1)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("mine")
    with pytest.raises(NotADirectoryError) as raised:
        bank.snapshot(1)
    assert raised.value.errno == errno.ENOTDIR and raised.value.filename == str(target)
    assert target.read_text() == "mine"
    assert [p.name for p in target.parent.iterdir() if p.name.startswith((".", target.name))
            ] == [target.name]  # no temp folder nor .prev left beside it


def test_a_snapshot_that_lost_files_is_refused_naming_them(run_dir):
    """Was: ``read_snapshot`` (and so a rollback) brought back the skills left, silently."""
    bank = _bank(run_dir)
    folder = bank.snapshot(1)
    assert snapshot_problem(run_dir, 1, run_dir.name) is None
    (folder / "skills" / "b.yaml").unlink()
    (folder / "meta-skills" / "m1.md").unlink()
    with pytest.raises(CheckpointError) as raised:
        read_snapshot(run_dir, 1, run_dir.name)
    said = str(raised.value)
    assert "\n" not in said
    assert said.startswith(f"the bank snapshot of round 1 ({folder}) is damaged: "
                           f"{folder / 'skills'} holds 2 skill file(s) where its manifest lists "
                           f"3 (missing: b); {folder / 'meta-skills'} holds 0 meta-skill file(s) "
                           "where its manifest lists 1 (missing: m1)")
    assert said.endswith("put it back from a copy of the run dir (the bank files under skills/ "
                         "and the skill_event evidence are unaffected)")
    bank.retire("b", round_=2, reason="test")
    before = {s.id: s.status for s in bank.all()}
    with pytest.raises(CheckpointError, match="missing: b"):
        bank.restore(1, current_round=3)
    assert {s.id: s.status for s in bank.all()} == before  # nothing restored half


def test_a_file_added_to_a_snapshot_is_named(run_dir):
    bank = _bank(run_dir)
    folder = bank.snapshot(1)
    shutil.copy(folder / "skills" / "a.yaml", folder / "skills" / "z.yaml")
    assert snapshot_problem(run_dir, 1) == (
        f"the bank snapshot of round 1 ({folder}) is damaged: {folder / 'skills'} holds 4 skill "
        "file(s) where its manifest lists 3 (not listed: z)")


def test_an_older_manifest_names_the_active_skills_missing(run_dir):
    """A snapshot written before the manifest listed every id: its counts and active ids."""
    bank = _bank(run_dir)
    folder = bank.snapshot(1)
    manifest = json.loads((folder / "manifest.json").read_text())
    for key in ("skill_ids", "meta_skill_ids"):
        del manifest[key]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert snapshot_problem(run_dir, 1) is None
    (folder / "skills" / "c.yaml").unlink()
    assert snapshot_problem(run_dir, 1) == (
        f"the bank snapshot of round 1 ({folder}) is damaged: {folder / 'skills'} holds 2 skill "
        "file(s) where its manifest lists 3 (missing: c)")


def test_a_manifest_missing_garbled_or_anothers_is_named(run_dir):
    bank = _bank(run_dir)
    folder = bank.snapshot(1)
    path = folder / "manifest.json"
    good = json.loads(path.read_text())
    head = f"the bank snapshot of round 1 ({folder})"
    cases = {
        "": f"{head} is damaged: its manifest {path} cannot be read (Expecting value: line 1 "
            "column 1 (char 0))",
        "[1, 2]": f"{head} is damaged: its manifest {path} lacks round, run_id, skills, "
                  "meta_skills, active",
        json.dumps({**good, "round": 4}): f"{head} is damaged: its manifest is round 4's, not 1's",
        json.dumps({**good, "run_id": "other"}): f"{head} is another run's: its manifest names "
                                                 f"run other, not {run_dir.name}",
    }
    for text, said in cases.items():
        path.write_text(text)
        assert snapshot_problem(run_dir, 1, run_dir.name) == said
        with pytest.raises(CheckpointError):
            read_snapshot(run_dir, 1, run_dir.name)
    path.unlink()
    assert snapshot_problem(run_dir, 1) == f"{head} is damaged: its manifest {path} is missing"


def test_the_prev_a_cut_swap_left_is_read_and_checked(run_dir):
    bank = _bank(run_dir)
    folder = bank.snapshot(1)
    prev = folder.with_name("round_01.prev")
    folder.rename(prev)
    skills, metas = read_snapshot(run_dir, 1, run_dir.name)
    assert [s.id for s in skills] == ["a", "b", "c"] and [m.id for m in metas] == ["m1"]
    (prev / "skills" / "a.yaml").unlink()
    assert snapshot_problem(run_dir, 1) == (
        f"the bank snapshot of round 1 ({prev}) is damaged: {prev / 'skills'} holds 2 skill "
        "file(s) where its manifest lists 3 (missing: a)")
    bank.snapshot(1)  # the next write moves the .prev back and replaces it whole
    assert not prev.exists() and snapshot_problem(run_dir, 1) is None


def test_a_file_where_a_snapshot_is_read_is_named(run_dir):
    _bank(run_dir)
    target = checkpoint_dir(run_dir, 2)
    target.parent.mkdir(parents=True)
    target.write_text("mine")
    with pytest.raises(CheckpointError, match=r"round_02\) is a file, not a snapshot folder"):
        read_snapshot(run_dir, 2)
