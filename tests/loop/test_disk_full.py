"""A full disk, as a user meets it: the run stops with ONE ``Error:`` line naming the folder it
could not write in and the ``--resume`` command, however full the disk stays (``stopped.json``
cannot be written either), with no traceback and no ``--- Logging error ---`` per log line; and
``--resume`` finishes the run once space is back. A full disk met inside an actor (the
SkillBank writing a skill) stops the run too, instead of failing a soft phase quietly and
recording the round without its skills.

Found on a real 600 KiB tmpfs: a run stopped with a traceback (in curate, or while writing
``stopped.json`` after a grader could not start), and one whose SkillBank met the full disk
went on with ``synth: FAILED (RayTaskError(OSError))`` and a logging traceback per line."""

from __future__ import annotations

import errno
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from one_line import process_error_line

ROOT = Path(__file__).resolve().parents[2]

# The driver process "fills" its disk at round 0's curate.json: that write and every later one
# of the driver (stopped.json, loop.json) gets ENOSPC, as on a disk that stays full.
FULL_FROM_CURATE = """
import errno, sys
from pathlib import Path
from ratchet_ray.storage import fsutil

real, full = fsutil.atomic_write_with, []

def writer(path, write, *, replace=True, root=None):
    if Path(path).name == "curate.json":
        full.append(path)
    if full:
        raise OSError(errno.ENOSPC, "No space left on device", str(fsutil.temp_path(Path(path))))
    return real(path, write, replace=replace, root=root)

fsutil.atomic_write_with = writer
from ratchet_ray.cli.run import run
run(sys.argv[1:], prog_name="python -m jobs.skill_loop")
"""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_TMPDIR")}


@pytest.mark.slow  # two real sim runs on a local Ray of their own (about 15 s each)
def test_a_disk_full_in_a_round_is_one_line_naming_resume_and_resume_finishes(tmp_path):
    results = tmp_path / "results"
    argv = ["sim", "--rounds", "1", "--n-train", "10", "--n-eval", "10", "--quiet",
            "--set", f"results_dir={results}"]
    done = subprocess.run([sys.executable, "-c", FULL_FROM_CURATE, *argv], cwd=ROOT,
                          env=_env(), capture_output=True, text=True, timeout=300)
    (run_dir,) = results.glob("sim/*")
    line = process_error_line(done, "run stopped: no room to write in",
                              str(run_dir / "round_00"), "No space left on device",
                              f"--resume {run_dir}")
    assert "Logging error" not in done.stderr, done.stderr[-3000:]
    assert line == done.stderr.strip().splitlines()[-1]
    assert not (run_dir / "round_00" / "summary.json").exists()  # the round is not recorded
    resumed = subprocess.run([sys.executable, "-m", "jobs.skill_loop", "--resume", str(run_dir),
                              "--quiet"], cwd=ROOT, env=_env(), capture_output=True, text=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads((run_dir / "round_00" / "summary.json").read_text())["round"] == 0
    assert not (run_dir / "stopped.json").exists()


def test_a_full_disk_an_actor_met_is_seen_through_rays_task_error():
    """Ray raises an actor's error as a ``RayTaskError`` subclass of its class whose own
    ``errno`` is empty; the OSError is its ``cause``."""
    from ray.exceptions import RayTaskError

    from ratchet_ray.storage.fsutil import disk_full, disk_full_error

    cause = OSError(errno.ENOSPC, "No space left on device", "/run/skills/.x.tmp")
    raised = RayTaskError("SkillBankProcess.commit_batch", "Traceback ...", cause)
    wrapped = raised.as_instanceof_cause()
    assert isinstance(wrapped, OSError) and wrapped.errno is None
    assert disk_full_error(wrapped) is cause and disk_full(wrapped)
    try:
        raise RuntimeError("a phase gave up") from wrapped
    except RuntimeError as outer:
        assert disk_full_error(outer) is cause
    assert not disk_full(RayTaskError("f", "tb", ValueError("x")).as_instanceof_cause())


def test_a_record_the_full_disk_keeps_out_of_run_log_is_dropped_quietly(tmp_path, capsys):
    from ratchet_ray.loop.rundir import RunDir
    from ratchet_ray.settings.schema import LoopConfig

    run = RunDir.create(LoopConfig(rounds=1, results_dir=str(tmp_path)), ["t1"], ["e1"])
    handler = run.attach_log()

    class Full:
        def __init__(self, number: int):
            self.number = number

        def write(self, _text: str) -> int:
            raise OSError(self.number, os.strerror(self.number))

        def flush(self) -> None:
            pass

        def close(self) -> None:
            pass

    try:
        handler.stream = Full(errno.ENOSPC)
        logging.getLogger("ratchet_ray.loop.driver").error("round 0: phase synth failed")
        assert capsys.readouterr().err == ""
        handler.stream = Full(errno.EIO)  # any other write error is still reported
        logging.getLogger("ratchet_ray.loop.driver").error("round 0: phase synth failed")
        assert "Logging error" in capsys.readouterr().err
    finally:
        run.detach_log(handler)
        run.release()


def test_a_stop_on_a_disk_that_stays_full_is_raised_not_hidden(tmp_path, monkeypatch):
    """``record_stop`` cannot write ``stopped.json`` on a full disk; it returns the stop to
    raise (the cause, the folder and the resume command) instead of an ``OSError``."""
    from ratchet_ray.loop import stops
    from ratchet_ray.loop.rundir import RunDir
    from ratchet_ray.settings.schema import LoopConfig

    config = LoopConfig(rounds=2, results_dir=str(tmp_path))
    run = RunDir.create(config, ["t1"], ["e1"])
    try:
        def full(path, _data):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))

        monkeypatch.setattr(stops, "atomic_write_json", full)
        cause = OSError(errno.ENOSPC, "No space left on device", str(run.path / "skills" / "x"))
        stop = stops.record_stop(run, config, RuntimeError("pool 'grader' cannot start"))
        assert type(stop) is stops.RunStopped and str(stop) == "pool 'grader' cannot start"
        try:
            raise RuntimeError("pool 'grader': an actor cannot start") from cause
        except RuntimeError as exc:
            stop = stops.record_stop(run, config, exc)
        assert isinstance(stop, stops.DiskFull) and str(stop) == (
            f"no room to write in {run.path / 'skills'} (No space left on device): free space "
            f"on that disk (df -h {run.path / 'skills'}), then continue with --resume "
            f"{run.path}")
        assert not (run.path / "stopped.json").exists()
    finally:
        run.release()


def test_a_baseline_whose_disk_fills_is_one_line_naming_the_rerun(tmp_path, monkeypatch):
    """The baseline's rows file filling (the driver), or a grader that cannot start on a full
    workdir (an actor, through the pool): a traceback, or ``an actor cannot start: OSError``
    with no fix."""
    from click.testing import CliRunner

    from actors.pools import PoolError
    from ratchet_ray.cli import baseline

    out = tmp_path / "baselines" / "sim.jsonl"
    full = OSError(errno.ENOSPC, "No space left on device", str(out))
    for raised in (full, PoolError("pool 'grader': an actor cannot start: OSError: [Errno 28]")):
        if raised is not full:
            raised.__cause__ = full

        def run_baseline(*_args, _raised=raised, **_kwargs):
            raise _raised

        monkeypatch.setattr(baseline, "run_baseline", run_baseline)
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
        result = CliRunner().invoke(baseline.main, ["sim", "--limit", "2", "--out", str(out)])
        assert result.exit_code == 1 and result.exception.__class__ is SystemExit, result.output
        assert result.output.strip().splitlines()[-1] == (
            f"Error: baseline stopped: no room to write in {out.parent} (No space left on "
            f"device): free space on that disk, then rerun the same command (it keeps the "
            f"probes written to {out} and runs the rest)")


@pytest.mark.parametrize("args, words", [
    (["--report-only"], ["cannot write the sweep's report: No space left on device",
                         "then rerun the same command (the runs finished are kept)"]),
    ([], ["cannot write the sweep's files into", "(or pass another --out)"]),
], ids=["report", "sweep-file"])
def test_a_sweep_whose_disk_is_full_is_one_line(tmp_path, monkeypatch, args, words):
    """``jobs.ablations`` writing sweep.json before its jobs, or ablations.md after them, on a
    full disk: OSError's traceback (after every arm-seed had run, for the report)."""
    from pathlib import Path as PathType

    from click.testing import CliRunner

    from ratchet_ray.cli import ablations
    from ratchet_ray.storage import fsutil

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    out = tmp_path / "sweep"
    out.mkdir()
    if "--report-only" in args:  # a sweep folder (a folder that is none is refused first)
        (out / "sweep.json").write_text("{}")
    monkeypatch.setattr(fsutil, "atomic_write_bytes", full)
    monkeypatch.setattr(PathType, "write_text", full)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    result = CliRunner().invoke(ablations.main, ["sim", "--arms", "default", "--seeds", "1",
                                                 "--rounds", "1", "--out", str(out), *args])
    assert result.exit_code == 1 and result.exception.__class__ is SystemExit, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("Error: ") and all(w in line for w in words), line
