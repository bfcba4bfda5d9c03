"""The sweep's Ray-jobs runner against ``fake_jobs.FakeJobClient`` (real subprocesses as the
jobs): the parallel limit holds, a failing job does not stop the others, what a job's
environment carries, a submission asked again while no agent is ready, and an interrupt (one
Ctrl-C or two, or during a submission) stops every job, while a rerun follows live ones."""

from __future__ import annotations

import os
import shlex
import signal
import sys
from pathlib import Path

import pytest

from fake_jobs import FakeJobClient
from ratchet_ray.sweep.jobs import (forwarded_env, live_jobs, read_jobs, recorded_status,
                                    run_ray_jobs, stop_recorded_jobs, submission)
from ratchet_ray.sweep.spec import Job
from sweep_helpers import RERUN, sleeper


def test_ray_jobs_keep_the_parallel_limit_survive_a_failure_and_copy_the_logs(tmp_path: Path):
    client = FakeJobClient()
    jobs = [sleeper(tmp_path, f"j{i}", 0.6, 3 if i == 1 else 0) for i in range(4)]
    seen, started = [], []
    outcomes = run_ray_jobs(client, jobs, 2, {"RATCHET_OPENAI_MODEL": "m", "OPENAI_API_KEY": "s"},
                            tmp_path, scope="sweep_t", rerun=RERUN, on_done=seen.append,
                            on_start=started.append, poll_s=0.05)
    assert sorted(o.name for o in outcomes) == ["j0", "j1", "j2", "j3"] and seen == outcomes
    failed = [o for o in outcomes if not o.ok]
    assert [(o.name, o.returncode) for o in failed] == [("j1", 3)]
    assert "exit 3: boom: bad input" in failed[0].message and "j1.log" in failed[0].message
    # No stopped.json: the log's last line, and the command that continues the sweep.
    assert failed[0].cause == f"boom: bad input; rerun the sweep to resume it: `{RERUN}`"
    spans = []
    for job in jobs:
        lines = dict(line.split() for line in job.log.read_text().splitlines()
                     if line.startswith(("start", "end")))
        spans.append((float(lines["start"]), float(lines["end"])))
    peak = max(sum(s <= t < e for s, e in spans) for t, _ in spans)
    assert peak == 2  # two at once, never three
    assert job.log.read_text().startswith("\n=== ") and "(Ray job ratchet-sweep_t-j3-" in \
        job.log.read_text()
    recorded = read_jobs(tmp_path)
    assert sorted(recorded) == ["j0", "j1", "j2", "j3"]
    assert {o.job_id for o in outcomes} == {e["job_id"] for e in recorded.values()}
    sent = client.submitted[0]
    # The venv's Python runs the job, from the folder the sweep was started in (relative paths
    # in its flags mean what they meant to the caller): nothing needs activating on the head.
    assert jobs[0].cwd == Path.cwd()
    assert sent["entrypoint"] == f"cd {shlex.quote(str(jobs[0].cwd))} && exec " \
                                 f"{shlex.join(jobs[0].argv)}"
    assert jobs[0].argv[0] == sys.executable
    env_vars = sent["runtime_env"]["env_vars"]
    assert env_vars["RATCHET_OPENAI_MODEL"] == "m" and "OPENAI_API_KEY" not in env_vars
    assert env_vars["RAY_JOB_STOP_SIGNAL"] == "SIGINT" and started[0].startswith("new    j0:")
    assert env_vars["RATCHET_SWEEP_COMMAND"] == RERUN  # its driver names it as the way on
    assert recorded_status(client, tmp_path) == {"j0": "SUCCEEDED", "j1": "FAILED",
                                                 "j2": "SUCCEEDED", "j3": "SUCCEEDED"}


def test_an_interrupt_stops_every_job_cleanly_and_a_rerun_follows_live_ones(tmp_path: Path):
    client = FakeJobClient()
    jobs = [sleeper(tmp_path, f"j{i}", 60) for i in range(3)]

    def interrupt(line: str) -> None:
        if line.startswith("new    j1"):
            raise KeyboardInterrupt

    seen = []
    with pytest.raises(KeyboardInterrupt):
        run_ray_jobs(client, jobs, 2, {}, tmp_path, scope="s", rerun=RERUN, on_done=seen.append,
                     on_start=interrupt, poll_s=0.05)
    assert [(o.name, o.returncode, o.ok) for o in sorted(seen, key=lambda o: o.name)] == [
        ("j0", None, False), ("j1", None, False)]  # j2 was never submitted
    for name in ("j0", "j1"):  # SIGINT (a Ctrl-C) reached the driver, which wound down
        assert "interrupted: released the run" in (tmp_path / "logs" / f"{name}.log").read_text()
    assert live_jobs(client, tmp_path) == {}

    # A job an earlier invocation submitted and that still runs is followed, not resubmitted.
    live = sleeper(tmp_path, "j2", 0.3)
    client.submit_job(submission_id="old-j2", **submission(live, {}, RERUN))
    (tmp_path / "jobs.json").write_text('{"j2": {"job_id": "old-j2", "action": "new"}}')
    assert live_jobs(client, tmp_path) == {"j2": "old-j2"}
    (outcome,) = run_ray_jobs(client, [live], 1, {}, tmp_path, scope="s", rerun=RERUN,
                              attach=live_jobs(client, tmp_path), poll_s=0.05)
    assert (outcome.action, outcome.job_id, outcome.ok) == ("attach", "old-j2", True)
    assert len(client.submitted) == 3 and stop_recorded_jobs(client, tmp_path) == []


def test_forwarded_env_keeps_settings_and_leaves_secrets_out():
    env = {"RATCHET_LOCAL_N_CTX": "4096", "RATCHET_OPENAI_API_KEY": "x", "MBPP_OVERRIDE_PATH": "/d",
           "HF_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "k", "AWS_REGION": "eu", "PATH": "/bin",
           "RAY_AUTH_MODE": "token", "RATCHET_X_MAX_TOKENS": "9"}
    assert forwarded_env(env) == {"RATCHET_LOCAL_N_CTX": "4096", "MBPP_OVERRIDE_PATH": "/d",
                                  "AWS_REGION": "eu", "RAY_AUTH_MODE": "token",
                                  "RATCHET_X_MAX_TOKENS": "9"}


def test_a_submission_is_asked_again_while_no_job_agent_is_ready_and_only_then():
    from ratchet_ray.sweep.jobs import AGENT_NOT_READY, submit_when_ready

    class Starting:
        """A job server whose agents register after two refusals."""

        def __init__(self, refusals: list[str]):
            self.refusals, self.calls = refusals, 0

        def submit_job(self, **kwargs):
            self.calls += 1
            if self.refusals:
                raise RuntimeError(self.refusals.pop(0))
            return kwargs["submission_id"]

    busy = f"Request failed with status code 500: {AGENT_NOT_READY}, please try again later."
    head = Starting([busy, busy])
    assert submit_when_ready(head, timeout_s=30, submission_id="j") == "j" and head.calls == 3
    other = Starting(["Request failed with status code 400: bad runtime_env"])
    with pytest.raises(RuntimeError, match="bad runtime_env"):
        submit_when_ready(other, timeout_s=30, submission_id="j")
    assert other.calls == 1  # any other refusal is the caller's at once


@pytest.mark.parametrize("reached", [True, False], ids=["submitted", "not-submitted"])
def test_ctrl_c_while_a_job_is_submitted_leaves_nothing_running(tmp_path, reached):
    """Ctrl-C while the job server answers a submission: a job the cluster took is stopped (it
    was left running, unrecorded); one it never took is passed over, and the interrupt is what
    the caller sees."""
    class CutShort(FakeJobClient):
        def submit_job(self, **kwargs):
            if reached:
                super().submit_job(**kwargs)
            raise KeyboardInterrupt

    client, seen = CutShort(), []
    with pytest.raises(KeyboardInterrupt):
        run_ray_jobs(client, [sleeper(tmp_path, "j0", 60), sleeper(tmp_path, "j1", 60)], 2, {},
                     tmp_path, scope="s", rerun=RERUN, on_done=seen.append, poll_s=0.05)
    assert [client.get_job_status(j) for j in client.procs] == (["STOPPED"] if reached else [])
    assert [(o.name, o.ok) for o in seen] == ([("j0", False)] if reached else [])


def test_a_second_ctrl_c_while_the_jobs_wind_down_still_reports_them(tmp_path):
    """The user presses Ctrl-C again during the wait for the stopped jobs: the wait ends, and
    every job is still reported (stopped); it ended with no outcome, and status.json empty."""
    class Impatient(FakeJobClient):
        pressed = False

        def get_job_status(self, job_id: str) -> str:
            if self.stopped and not self.pressed:
                self.pressed = True
                raise KeyboardInterrupt
            return super().get_job_status(job_id)

    client, seen = Impatient(), []
    stubborn = [sys.executable, "-c", "import signal, time; "
                "signal.signal(signal.SIGINT, signal.SIG_IGN); print('start', flush=True); "
                "time.sleep(60)"]
    job = Job("a", "new", stubborn, tmp_path / "logs" / "a.log", tmp_path / "runs" / "a")

    def interrupt(line: str) -> None:
        raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            run_ray_jobs(client, [job], 1, {}, tmp_path, scope="s", rerun=RERUN,
                         on_done=seen.append, on_start=interrupt, poll_s=0.05)
        assert [(o.name, o.returncode, o.ok) for o in seen] == [("a", None, False)]
        assert seen[0].cause == f"stopped; rerun the sweep to resume it: `{RERUN}`"
    finally:
        for proc in client.procs.values():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:  # a SIGINT before its handler was set ended it already
                pass
