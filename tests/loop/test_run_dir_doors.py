"""The run dir changed under a running run: deleted (``rm -rf``, a cleanup job), moved, replaced
by a link, made unwritable (a read-only mount, a file where a folder was), or a finished round's
folder and the evidence deleted. The run stops on one line naming what happened and the fix,
and nothing makes the run dir again.

Found by trying each on a sim run: deleted before round 0's train, the run went on and finished
with exit 0, every writer (evidence parts, round files, the bank's skills and checkpoints,
loop.json) making a bare run dir again (no config.yaml, round 0 without eval.json) that the next
report listed; moved, the same at the old path; a file where ``evidence/`` was, a traceback;
round_00/ and evidence/ deleted before round 1, a run that finished recording round 1 without
what round 0 had found (no verdicts to learn from) and a loop.json without round 0."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from one_line import process_error_line

ROOT = Path(__file__).resolve().parents[2]

# A sim run whose run dir meets DOOR just before round 0's train (round 1's for "records").
DOOR_BEFORE_TRAIN = """
import shutil, sys
from ratchet_ray.loop import driver

door = sys.argv.pop(1)

def at_train(ctx, round_, summary, _train=driver.phases.train):
    run = ctx.run.path
    if door == "deleted":
        shutil.rmtree(run)
    elif door == "records" and round_ == 1:  # a finished round's folder and the evidence
        shutil.rmtree(run / "round_00")
        shutil.rmtree(run / "evidence")
    elif door == "refused":  # a file where the evidence folder was: a write refused for good
        shutil.rmtree(run / "evidence")
        (run / "evidence").write_text("not a folder")
    return _train(ctx, round_, summary)

driver.ROUND_PHASES = tuple(driver.Phase(p.name, at_train, p.critical, p.spends, p.rerunnable)
                            if p.name == "train" else p for p in driver.ROUND_PHASES)
from ratchet_ray.cli.run import run
run(sys.argv[1:], prog_name="python -m jobs.skill_loop")
"""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_TMPDIR")}


@pytest.mark.slow  # three real sim runs on a local Ray of their own (about 15 s each)
def test_a_run_dir_deleted_or_made_unwritable_mid_round_stops_on_one_line(tmp_path):
    for door in ("deleted", "refused", "records"):
        results = tmp_path / door
        done = subprocess.run(
            [sys.executable, "-c", DOOR_BEFORE_TRAIN, door, "sim", "--rounds", "2", "--n-train",
             "10", "--n-eval", "10", "--quiet", "--set", f"results_dir={results}"],
            cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)
        if door == "deleted":
            run_dir = Path(done.stderr.split("run dir: ", 1)[1].split("\n", 1)[0])
            process_error_line(done, f"run stopped: the run dir {run_dir} was deleted while the "
                                     "run ran", "start the run anew")
            assert list((results / "sim").iterdir()) == []  # nothing made again
        elif door == "records":  # the run went on, recording rounds without what they read
            (run_dir,) = (results / "sim").iterdir()
            process_error_line(done, "file(s) of the run dir were deleted while the run ran",
                               "restore them from a copy of the run dir and continue with "
                               f"--resume {run_dir}")
            assert not (run_dir / "round_01" / "summary.json").exists()
        else:
            (run_dir,) = (results / "sim").iterdir()
            process_error_line(done, "run stopped: cannot write into the run dir: Not a directory",
                               str(run_dir / "evidence"), f"make {run_dir} writable and whole "
                               f"again, then continue with --resume {run_dir}")
            assert not (run_dir / "round_00" / "summary.json").exists()


# A sim run whose rollback gate fires in round 1 (any drop below round 0 fires it: threshold 0,
# one round), stopped there by a door, its bank snapshots then pruned and the run resumed.
STOP_AT_ROUND_1_ROLLBACK = """
import sys
from ratchet_ray.loop import driver
from ratchet_ray.loop.breaker import RunStopped

def at_rollback(ctx, round_, summary, _rollback=driver.phases.rollback_check):
    if round_ == 1:
        raise RunStopped("stopped before round 1's rollback")
    return _rollback(ctx, round_, summary)

driver.ROUND_PHASES = tuple(driver.Phase(p.name, at_rollback, p.critical, p.spends, p.rerunnable)
                            if p.name == "rollback" else p for p in driver.ROUND_PHASES)
from ratchet_ray.cli.run import run
run(sys.argv[1:], prog_name="python -m jobs.skill_loop")
"""


@pytest.mark.slow  # a real sim run and two resumes on a local Ray of their own (about 40 s each)
def test_a_rollback_whose_snapshot_was_pruned_stops_on_one_line_and_others_may_go(tmp_path):
    """Found on a sim run: with ``checkpoints/`` deleted before ``--resume``, the resume made
    round 0's snapshot again from its later bank, and the rollback "restored" that, silently; a
    needed snapshot deleted mid-run was a traceback (``read_snapshot``'s, through Ray)."""
    def sim(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], cwd=ROOT, env=_env(), capture_output=True,
                              text=True, timeout=300)

    results = tmp_path / "results"
    done = sim("-c", STOP_AT_ROUND_1_ROLLBACK, "sim", "--rounds", "2", "--n-train", "10",
               "--n-eval", "10", "--quiet", "--set", f"results_dir={results}",
               "--set", "rollback.threshold=0", "--set", "rollback.consecutive=1")
    process_error_line(done, "stopped before round 1's rollback")
    (run_dir,) = (results / "sim").iterdir()
    kept = tmp_path / "kept"
    shutil.move(run_dir / "checkpoints", kept)  # every snapshot pruned
    done = sim("-m", "jobs.skill_loop", "--resume", str(run_dir), "--quiet")
    process_error_line(done, "round 1: the rollback gate fired and must restore the bank of "
                             "round 0", str(run_dir / "checkpoints" / "round_00"),
                       "is missing (snapshots left: rounds none); put it back from a copy of "
                       f"the run dir and continue with --resume {run_dir}")
    assert not (run_dir / "round_01" / "summary.json").exists()
    # Round 0's snapshot back, round 1's (never restored) left pruned: the run goes on.
    (run_dir / "checkpoints").mkdir(exist_ok=True)
    shutil.move(kept / "round_00", run_dir / "checkpoints" / "round_00")
    done = sim("-m", "jobs.skill_loop", "--resume", str(run_dir), "--quiet")
    assert done.returncode == 0, done.stderr[-3000:]
    rollback = json.loads((run_dir / "round_01" / "rollback.json").read_text())
    assert rollback["fire"] and rollback["restore_round"] == 0
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["round_00", "round_02"]


def _held(tmp_path: Path):
    from ratchet_ray.loop.rundir import RunDir
    from ratchet_ray.settings.schema import LoopConfig

    run = RunDir.create(LoopConfig(rounds=1, results_dir=str(tmp_path)), ["t1"], ["e1"])
    run.acquire("test")
    return run


def test_a_run_dir_moved_deleted_or_replaced_is_told_while_held(tmp_path):
    run = _held(tmp_path)
    try:
        assert run.lost() is None
        moved = run.path.with_name("elsewhere")
        run.path.rename(moved)
        assert run.lost() == (
            f"the run dir {run.path} was moved to {moved} while the run ran: nothing more is "
            f"recorded; move it back (its name is the run's id) and continue with --resume "
            f"{run.path}")
        run.path.symlink_to(moved)  # a link to where it went is the same folder
        assert run.lost() is None
        run.path.unlink()
        other = tmp_path / "other"
        shutil.copytree(moved, other)
        run.path.symlink_to(other)  # a copy is another folder (and another lock)
        assert "was moved to" in run.lost()
        shutil.rmtree(moved)
        assert run.lost() == (f"the run dir {run.path} was deleted while the run ran: nothing "
                              "more is recorded, nor the folder made again; start the run anew")
    finally:
        run.release()


def test_the_run_dirs_writers_never_make_it_again(tmp_path):
    """Each writer of a run dir (its round files and loop.json, an evidence part, an artifact, a
    file of the bank's) raises rather than make a deleted run dir again."""
    from ratchet_ray.evidence.store import EvidenceStore
    from ratchet_ray.storage.artifacts import ArtifactStore
    from ratchet_ray.storage.fsutil import atomic_write_json

    run = _held(tmp_path)
    store, artifacts = EvidenceStore(run.path), ArtifactStore(run.path)
    config = run.config()
    shutil.rmtree(run.path)
    writes = [lambda: run.write_round_json(0, "eval.json", {}),
              lambda: run.write_loop_json(config, []),
              lambda: store.append("round", 0, [{"round": 0, "run_id": run.run_id}]),
              lambda: artifacts.put("logs/sim/x.log", b"x"),
              lambda: atomic_write_json(run.path / "skills" / "s.yaml", {}, root=run.path)]
    for write in writes:
        with pytest.raises(FileNotFoundError):
            write()
        assert not run.path.exists()
    run.release()
    fresh = tmp_path / "fresh" / "a" / "b.json"  # without a root, folders are made as before
    atomic_write_json(fresh, {})
    assert fresh.is_file()


def test_a_write_refused_in_a_run_dir_given_relatively_is_the_run_dirs(tmp_path, monkeypatch):
    """``--resume results/sim/RUN`` keeps the path as given; a refused write names it in full."""
    import errno

    from ratchet_ray.loop.stops import refused_in_run_dir
    from ratchet_ray.loop.rundir import RunDir

    monkeypatch.chdir(tmp_path)
    run = RunDir(Path("results/sim/run"))
    inside = OSError(errno.EROFS, "Read-only file system", str(tmp_path / run.path / "loop.json"))
    elsewhere = OSError(errno.EACCES, "Permission denied", str(tmp_path / "sandbox" / "x"))
    try:
        raise RuntimeError("a phase failed") from inside
    except RuntimeError as exc:
        assert refused_in_run_dir(run, exc) is inside
    assert refused_in_run_dir(run, elsewhere) is None
    assert refused_in_run_dir(run, OSError(errno.EROFS, "Read-only file system")) is None


def test_evidence_parts_deleted_under_a_cached_store_stay_told_after_a_rebuild(tmp_path):
    """The driver's long-lived store rebuilds its cache from what is left when parts go (the
    critic's query after ``rm -rf evidence/capsule`` did): the run then went on without them."""
    from ratchet_ray.evidence.store import EvidenceStore

    store = EvidenceStore(tmp_path, cached=True)
    assert store.vanished() == []
    part = store.append("round", 0, [{"round": 0, "run_id": "r"}])
    store.connect().execute("select count(*) from round").fetchall()
    assert store.vanished() == []
    part.unlink()
    assert store.connect().execute("select count(*) from round").fetchone() == (0,)
    assert store.vanished() == [part]


def test_a_resume_removes_the_temps_of_writes_a_kill_cut_short(tmp_path):
    """Was: each kill mid-write left a ``.<name>.<hex>.tmp`` (a round file, loop.json, a bank
    snapshot folder under checkpoints/, an evidence part) that no resume removed: they piled up.
    Now the writer that takes the run's lock removes those no write touched for a minute; a
    fresh one (a straggler's write in flight) and every other file stay."""
    from ratchet_ray.loop.rundir import STALE_TEMP_S, RunDir
    from ratchet_ray.settings.schema import LoopConfig
    from ratchet_ray.storage.fsutil import temp_path

    run = RunDir.create(LoopConfig(rounds=1, results_dir=str(tmp_path)), ["t1"], ["e1"])
    (run.path / "round_00").mkdir()
    (run.path / "checkpoints").mkdir()
    (run.path / "evidence" / "capsule" / "round=0").mkdir(parents=True)
    stale = [temp_path(run.path / "loop.json"), temp_path(run.path / "round_00" / "summary.json"),
             temp_path(run.path / "evidence" / "capsule" / "round=0" / "part-x.parquet")]
    for path in stale:
        path.write_text("half")
    snapshot = temp_path(run.path / "checkpoints" / "round_00")  # write_snapshot's temp folder
    (snapshot / "skills").mkdir(parents=True)
    (snapshot / "skills" / "s.yaml").write_text("id: s\n")
    stale.append(snapshot)
    fresh = temp_path(run.path / "round_00" / "eval.json")
    fresh.write_text("in flight")
    mine = run.path / ".notes.tmp"  # not a write's temp name: never touched
    mine.write_text("a user's")
    old = os.stat(run.path).st_mtime - STALE_TEMP_S - 5
    for path in [*stale, snapshot / "skills", snapshot / "skills" / "s.yaml", mine]:
        os.utime(path, (old, old))
    before = sorted(p for p in run.path.rglob("*") if p not in stale and snapshot not in p.parents)
    run.acquire("test")
    try:
        assert not any(p.exists() for p in stale)
        assert sorted(p for p in run.path.rglob("*") if p.name != ".lock") == before
        assert fresh.read_text() == "in flight" and mine.read_text() == "a user's"
    finally:
        run.release()
