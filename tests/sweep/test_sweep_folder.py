"""The sweep folder's records and what goes wrong with them: ``sweep.json`` (the shared flags and
the command that continues the sweep), ``status.json``, ``jobs.json``, its writer lock, and the
folder deleted or unwritable mid-sweep (its jobs are stopped, none runs on unrecorded)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from fake_jobs import FakeJobClient
from ratchet_ray.sweep.jobs import live_jobs, run_ray_jobs
from ratchet_ray.sweep.folder import check_sweep_file, with_recorded_budget
from ratchet_ray.sweep.spec import Job, SweepError, SweepSpec
from sweep_helpers import RERUN, sleeper


def test_rerun_with_other_flags_is_refused(tmp_path: Path):
    check_sweep_file(SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=3))
    check_sweep_file(SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=3))  # same flags: fine
    with pytest.raises(SweepError, match="rerun with those flags to resume it .only --set "
                                         "budget.. may change., or give a new"):
        check_sweep_file(SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=5))


def test_sweep_json_records_the_command_that_continues_the_sweep_and_a_rerun_is_told_it(tmp_path):
    check_sweep_file(SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=3), RERUN)
    assert json.loads((tmp_path / "sweep.json").read_text())["command"] == RERUN
    with pytest.raises(SweepError) as raised:
        check_sweep_file(SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=5), RERUN)
    assert f"rerun with those flags to resume it (it last ran as `{RERUN}`)" in str(raised.value)
    (tmp_path / "sweep.json").write_text("[1, 2")  # a hand edit gone wrong
    for call in (lambda: check_sweep_file(SweepSpec(suite="mbpp", out_dir=tmp_path)),
                 lambda: with_recorded_budget(SweepSpec(suite="mbpp", out_dir=tmp_path))):
        with pytest.raises(SweepError, match=r"sweep\.json is unreadable .*; move it away and "
                                             r"rerun the sweep's command"):
            call()
    (tmp_path / "sweep.json").write_text("[1, 2]")  # JSON, but no record
    with pytest.raises(SweepError, match=r"sweep\.json holds no sweep record; move it away and "
                                         r"rerun the sweep's command with the flags it was "
                                         r"started with \(it is written again\)$"):
        with_recorded_budget(SweepSpec(suite="mbpp", out_dir=tmp_path))


def test_a_failed_arm_is_marked_failed_in_status_with_its_cause(tmp_path):
    from ratchet_ray.sweep.folder import write_status

    results = tmp_path / "runs" / "A1_s42"
    child = ("import json, pathlib, sys; d = pathlib.Path(sys.argv[1]) / 'mbpp' / 'run1'; "
             "d.mkdir(parents=True); (d / 'stopped.json').write_text(json.dumps({'cause': "
             "'round 0 eval: 4 of 4 tasks failed on infrastructure ... Connection error.'})); "
             "print('Error: run stopped'); sys.exit(1)")
    job = Job("A1_s42", "new", [sys.executable, "-c", child, str(results)],
              tmp_path / "logs" / "A1_s42.log", results)
    from fake_jobs import FakeJobClient
    from ratchet_ray.sweep.jobs import run_ray_jobs

    (outcome,) = run_ray_jobs(FakeJobClient(), [job], 1, {}, tmp_path, scope="s", rerun=RERUN,
                              poll_s=0.05)
    status = json.loads(write_status(tmp_path, [outcome]).read_text())["A1_s42"]
    assert status["ok"] is False and status["returncode"] == 1
    assert status["cause"].startswith("round 0 eval: 4 of 4 tasks failed on infrastructure")


def test_a_sweep_folder_deleted_mid_sweep_stops_its_jobs_in_one_line(tmp_path):
    """The folder goes while a job runs: the next log copy cannot be written, and the sweep
    stops every job it follows (none runs on unrecorded) and names the folder and the rerun;
    it was a FileNotFoundError traceback."""
    import shutil

    out = tmp_path / "sweep"
    client = FakeJobClient()
    jobs = [sleeper(out, "j0", 60)]
    started = []

    def delete(line: str) -> None:
        started.append(line)
        shutil.rmtree(out)

    with pytest.raises(SweepError) as raised:
        run_ray_jobs(client, jobs, 1, {}, out, scope="s", rerun=RERUN, on_start=delete,
                     poll_s=0.05, log_every_s=0.0)
    said = str(raised.value)
    assert said.startswith(f"cannot write the sweep's files in {out}: No such file or directory")
    assert "deleted or made read-only while the sweep ran" in said and said.endswith(f"`{RERUN}`")
    (job_id,) = client.procs
    assert client.get_job_status(job_id) == "STOPPED"


def test_a_job_whose_submission_cannot_be_recorded_is_stopped_not_left_running(tmp_path):
    """``jobs.json`` cannot be written once a job is submitted (here a folder is in its way): the
    job was left running, unrecorded, and a rerun would have submitted it a second time."""
    client = FakeJobClient()
    (tmp_path / "jobs.json").mkdir()
    with pytest.raises(SweepError, match=r"cannot write the sweep's files in .*jobs\.json"):
        run_ray_jobs(client, [sleeper(tmp_path, "j0", 60)], 1, {}, tmp_path, scope="s",
                     rerun=RERUN, poll_s=0.05)
    assert [client.get_job_status(j) for j in client.procs] == ["STOPPED"]


def test_a_sweep_file_it_may_not_read_mid_sweep_still_names_the_rerun(tmp_path, monkeypatch):
    """A job's log this user may not read (its copy opens it to read and write) is told as a
    read refused, as every such file is (``fsutil.cannot_write``): that line dropped the rerun
    and that the jobs were stopped, which the sweep's refusal said of any other cause."""
    from ratchet_ray.storage import fsutil
    from ratchet_ray.sweep.jobs import _sweep_files

    log = tmp_path / "logs" / "j0.log"
    log.parent.mkdir()
    log.write_text("")
    monkeypatch.setattr(fsutil, "may_read", lambda path: Path(path) != log)  # root reads all
    with pytest.raises(SweepError) as raised, _sweep_files(tmp_path, RERUN):
        raise PermissionError(13, "Permission denied", str(log))
    said = str(raised.value)
    assert said.startswith(f"{log}: cannot read it: Permission denied; fix: give this user read "
                           "access"), said
    assert "its jobs were stopped" in said and said.endswith(f"`{RERUN}`"), said


@pytest.mark.parametrize("text", ["{not json", '["j0"]', '{"j0": {"id": "x"}}'])
def test_an_unreadable_jobs_json_is_one_line_naming_it(tmp_path, text):
    """It was a JSONDecodeError / TypeError / KeyError traceback at the sweep's start."""
    (tmp_path / "jobs.json").write_text(text)
    with pytest.raises(SweepError, match=r"jobs\.json is unreadable .*; move it away and rerun"):
        live_jobs(FakeJobClient(), tmp_path)


def test_a_busy_sweep_folder_names_the_sweeps_doors_not_a_runs_commands(tmp_path):
    """A second sweep on a busy ``--out`` was told the per-run commands (``ratchet query``,
    ``skill list``, ``audit``), which act on no sweep folder; a run dir still names them."""
    from ratchet_ray.storage.runlock import RunDirBusy, RunLock
    from ratchet_ray.sweep.folder import lock_sweep

    held = lock_sweep(tmp_path / "sweep")
    with pytest.raises(SweepError) as busy:
        lock_sweep(tmp_path / "sweep")
    said = str(busy.value)
    assert "\n" not in said and f"pid {os.getpid()}" in said and f"kill {os.getpid()}" in said
    assert "--status" in said and "--stop" in said and "ratchet query" not in said
    held.release()
    (tmp_path / "run").mkdir()
    with RunLock(tmp_path / "run"), pytest.raises(RunDirBusy, match="ratchet query, skill list"):
        RunLock(tmp_path / "run").acquire()
