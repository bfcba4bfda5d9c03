"""A resume or rollback meeting a bank snapshot that is not what the run wrote: files missing
inside it, a manifest garbled or another run's, or round 0's snapshot gone after the bank moved
on. Each used to go on silently wrong (a rollback restoring fewer skills; round 0's snapshot
made again from the later bank); now the resume (and its dry run: ``RunDir.check_bank``) or
the rollback stops on one line naming the snapshot, what is wrong and the fix."""

from __future__ import annotations

import json
import shutil
import time
from types import SimpleNamespace

import fakes
import pytest
import ray
import ray.cloudpickle
import skill_builders
from skill_builders import TOPICS, make_skill, routed_capsules

from actors.skill_bank import launch_skill_bank
from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.governance.rollback import RollbackGate
from ratchet_ray.loop.breaker import RunStopped
from ratchet_ray.loop.phases import rollback_check
from ratchet_ray.loop.rundir import RunDir
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.types import RoundSummary

ray.cloudpickle.register_pickle_by_value(fakes)
ray.cloudpickle.register_pickle_by_value(skill_builders)


def _run(tmp_path) -> tuple[RunDir, SkillBank]:
    run = RunDir.create(LoopConfig(rounds=3, results_dir=str(tmp_path)), ["t1"], ["e1"])
    bank = SkillBank(run.path, embedder=fakes.HashEmbedder(), config=LoopConfig(),
                     run_id=run.run_id)
    bank.ensure_default_metaskill("mbpp")
    return run, bank


def test_a_resume_refuses_a_damaged_snapshot_naming_it_and_a_pruned_one_is_fine(tmp_path):
    run, bank = _run(tmp_path)
    for i, name in enumerate(("a", "b")):
        bank.add(make_skill(name, TOPICS[i]), round_=0)
    bank.snapshot(0)
    folder = bank.snapshot(1)
    run.check_bank()
    (folder / "skills" / "a.yaml").unlink()
    with pytest.raises(ValueError) as raised:
        run.check_bank()
    assert str(raised.value) == (
        f"the bank snapshot of round 1 ({folder}) is damaged: {folder / 'skills'} holds 1 skill "
        "file(s) where its manifest lists 2 (missing: a); a rollback to that round would "
        "restore another bank than the one it ran with: put it back from a copy of the run "
        f"dir, or move it out of {run.path / 'checkpoints'} (only the best round's snapshot is "
        "ever restored, and a rollback that needs a missing one stops naming it), then "
        "--resume again")
    shutil.rmtree(folder)  # pruned: only a rollback that needs it stops
    run.check_bank()


def test_a_file_where_the_snapshots_folder_belongs_is_refused(tmp_path):
    """Was: the resume ran its round, then stopped at the round's snapshot."""
    run, _bank = _run(tmp_path)
    (run.path / "checkpoints").write_text("mine")
    with pytest.raises(ValueError) as raised:
        run.check_bank()
    assert str(raised.value) == (
        f"{run.path / 'checkpoints'} is a file where the bank snapshots' folder belongs: move "
        "it out of the run dir and --resume again")


def test_a_snapshot_copied_from_another_run_is_refused(tmp_path):
    run, bank = _run(tmp_path)
    bank.snapshot(0)
    other = SkillBank(tmp_path / "other" / "run9", embedder=fakes.HashEmbedder(),
                      config=LoopConfig(), run_id="run9")
    shutil.rmtree(run.path / "checkpoints" / "round_00")
    shutil.copytree(other.snapshot(0), run.path / "checkpoints" / "round_00")
    with pytest.raises(ValueError, match=r"round_00\) is another run's: its manifest names run "
                                         rf"run9, not {run.run_id}; a rollback"):
        run.check_bank()


def test_a_renamed_run_dir_is_left_to_check_name(tmp_path):
    """Its snapshots name the run id its evidence holds, so ``check_name`` tells the rename."""
    run, bank = _run(tmp_path)
    bank.snapshot(0)
    EvidenceStore(run.path).append("capsule", 0, routed_capsules(run.run_id, "a", 0, 1, 0))
    moved = RunDir(run.path.rename(run.path.with_name("renamed")))
    moved.check_bank()
    with pytest.raises(ValueError, match="holds the evidence of run"):
        moved.check_name()


def test_round_0s_snapshot_gone_after_the_bank_moved_on_is_refused(tmp_path):
    """Was: the resume made ``checkpoints/round_00`` again from the bank round 0's synth had
    changed, which a rollback to round 0 would then restore."""
    run, bank = _run(tmp_path)
    bank.snapshot(0)
    shutil.rmtree(run.path / "checkpoints")
    run.check_bank()  # not begun: the bank is round 0's start, made again exactly
    time.sleep(0.01)
    EvidenceStore(run.path).append("capsule", 0, routed_capsules(run.run_id, "x", 0, 1, 1))
    run.check_bank()  # begun, the bank unchanged since: made again exactly
    time.sleep(0.01)
    bank.add(make_skill("learned", TOPICS[0]), round_=0)  # round 0's synth
    with pytest.raises(ValueError) as raised:
        run.check_bank()
    snapshot = run.path / "checkpoints" / "round_00"
    assert str(raised.value) == (
        f"the bank snapshot round 0 started from ({snapshot}) is missing, and the bank has "
        "changed since round 0 began (its metasynth, synth or curate ran): a resume would make "
        "that snapshot again from the later bank, which a rollback to round 0 would restore; "
        f"put {snapshot} back from a copy of the run dir and --resume again, or start the run "
        "anew")
    (run.path / "round_00").mkdir()
    (run.path / "round_00" / "summary.json").write_text("{}")
    run.check_bank()  # a finished round: the driver makes no snapshot again (the rollback says)


def test_a_rollback_to_a_damaged_snapshot_stops_on_one_line(ray_local, tmp_path):
    """On the run's SkillBank actor: was, the restore brought back the skills left, silently."""
    run, bank = _run(tmp_path)
    for i, name in enumerate(("a", "b", "c")):
        bank.add(make_skill(name, TOPICS[i]), round_=0)
    folder = bank.snapshot(0)
    (folder / "skills" / "b.yaml").unlink()
    handle = launch_skill_bank(run.path, embedder=fakes.HashEmbedder, config=LoopConfig(),
                               run_id=run.run_id, num_cpus=0)
    try:
        gate = RollbackGate.from_history([(0, 0.9)], threshold=0.0, consecutive=1)
        ctx = SimpleNamespace(gate=gate, run=run, actors=SimpleNamespace(bank=handle))
        summary = RoundSummary(round=1, eval={"split": "eval", "round": 1, "total": 10,
                                                "resolved": 1})
        with pytest.raises(RunStopped) as raised:
            rollback_check(ctx, 1, summary)
        assert str(raised.value) == (
            "round 1: the rollback gate fired and must restore the bank of round 0 (the best "
            f"round), but the bank snapshot of round 0 ({folder}) is damaged: "
            f"{folder / 'skills'} holds 2 skill file(s) where its manifest lists 3 (missing: b); "
            "a restore from it would bring back another bank than that round's, so put the "
            f"snapshot back from a copy of the run dir and continue with --resume {run.path}")
        assert not summary.rollback_fired and not (run.path / "round_01").exists()
    finally:
        ray.kill(handle, no_restart=True)
