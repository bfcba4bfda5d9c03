"""``--stop`` from another shell: the recorded jobs still running are stopped and waited for (one
that outlives the wait is named), and the sweep's own process submits no further job."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from fake_jobs import FakeJobClient
from ratchet_ray.sweep.jobs import (recorded_status, run_ray_jobs, stop_recorded_jobs,
                                    submission)
from ratchet_ray.sweep.spec import Job, SweepError
from sweep_helpers import RERUN, sleeper
from waiting import wait_for


def test_stop_recorded_jobs_stops_what_still_runs(tmp_path: Path):
    client = FakeJobClient()
    client.submit_job(submission_id="a", **submission(sleeper(tmp_path, "a", 60), {}, RERUN))
    client.submit_job(submission_id="b", **submission(sleeper(tmp_path, "b", 0), {}, RERUN))
    (tmp_path / "jobs.json").write_text('{"a": {"job_id": "a"}, "b": {"job_id": "b"}, '
                                        '"c": {"job_id": "gone"}}')
    # Stopped once its SIGINT handler is in place (the "start" line comes after it) and b ended.
    wait_for(lambda: "start" in client.get_job_logs("a")
             and client.get_job_status("b") == "SUCCEEDED", 60, "job a to start, b to end")
    assert stop_recorded_jobs(client, tmp_path, wait_s=30) == ["a"]
    assert recorded_status(client, tmp_path) == {"a": "STOPPED", "b": "SUCCEEDED",
                                                 "c": "UNKNOWN"}
    assert "interrupted: released the run" in client.get_job_logs("a")  # unwound, not killed


def test_stop_recorded_jobs_names_a_job_that_outlives_the_wait(tmp_path: Path):
    client = FakeJobClient()
    stubborn = [sys.executable, "-c", "import signal, time; "
                "signal.signal(signal.SIGINT, signal.SIG_IGN); print('start', flush=True); "
                "time.sleep(60)"]
    job = Job("a", "new", stubborn, tmp_path / "logs" / "a.log", tmp_path / "runs" / "a")
    client.submit_job(submission_id="a", **submission(job, {}, RERUN))
    (tmp_path / "jobs.json").write_text('{"a": {"job_id": "a"}}')
    wait_for(lambda: "start" in client.get_job_logs("a"), 60, "job a to start")
    with pytest.raises(SweepError, match=r"asked a to stop, still running 1s later.*ray job"):
        stop_recorded_jobs(client, tmp_path, wait_s=1)
    assert client.get_job_status("a") == "RUNNING"
    os.killpg(client.procs["a"].pid, signal.SIGKILL)


def test_stop_from_another_shell_ends_the_sweep_not_only_its_running_jobs(tmp_path):
    """``--stop`` stops the running jobs; the sweep's own process then submitted the next
    pending ones, so the sweep went on. Now it submits none after the request, reports each as
    not started, and the next invocation (``lock_sweep``) runs again."""
    from ratchet_ray.sweep.folder import STOP_FILE, lock_sweep

    client, seen = FakeJobClient(), []
    jobs = [sleeper(tmp_path, f"j{i}", 60) for i in range(3)]

    def stop_from_another_shell(line: str) -> None:  # what `--stop` does, in its order
        job_id = client.submitted[0]["submission_id"]  # stopped once its SIGINT handler is in
        wait_for(lambda: "start" in client.get_job_logs(job_id), 60, "job j0 to start")
        (tmp_path / STOP_FILE).write_text("{}")
        stop_recorded_jobs(client, tmp_path, wait_s=30)

    outcomes = run_ray_jobs(client, jobs, 1, {}, tmp_path, scope="s", rerun=RERUN,
                            on_done=seen.append, on_start=stop_from_another_shell, poll_s=0.05)
    assert len(client.submitted) == 1 and outcomes == seen
    by_name = {o.name: o for o in outcomes}
    assert sorted(by_name) == ["j0", "j1", "j2"] and not any(o.ok for o in outcomes)
    assert by_name["j1"].cause == ("not started: --stop stopped the sweep; rerun the sweep to "
                                   f"resume it: `{RERUN}`")
    lock_sweep(tmp_path).release()
    assert not (tmp_path / STOP_FILE).exists()


def test_a_job_server_that_stops_answering_is_one_line_naming_the_rerun(tmp_path):
    """The head died mid-sweep: the job client's ``requests`` ConnectionError was a traceback,
    raised again by the stop on the way out, and the sweep's exit then blocked on the dead GCS
    until Ray ended the process a minute later (100% CPU, no line of the sweep's own)."""
    from requests.exceptions import ConnectionError as RequestsConnectionError

    class HeadDies(FakeJobClient):
        _address = "http://127.0.0.1:8265"
        dead = False

        def get_job_status(self, job_id):
            if self.dead:
                raise RequestsConnectionError("('Connection aborted.', ConnectionResetError(104"
                                              ", 'Connection reset by peer'))")
            return super().get_job_status(job_id)

        def stop_job(self, job_id):
            if self.dead:
                raise RequestsConnectionError("Connection refused")
            return super().stop_job(job_id)

    client = HeadDies()
    job = sleeper(tmp_path, "a", 60)

    def head_dies(line: str) -> None:
        client.dead = True

    try:
        with pytest.raises(SweepError) as gone:  # one line: what the sweep prints
            run_ray_jobs(client, [job], 1, {}, tmp_path, scope="s", rerun=RERUN,
                         on_start=head_dies, poll_s=0.05)
    finally:
        for proc in client.procs.values():
            os.killpg(proc.pid, signal.SIGKILL)
    text = str(gone.value)
    assert text.startswith("the Ray job server at http://127.0.0.1:8265 stopped answering "
                           "(ConnectionError: ('Connection aborted.'"), text
    assert text.endswith(f"start the head again (or reach it) and rerun the sweep: `{RERUN}`")
    assert "\n" not in text


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowing
def test_a_sigterm_whose_exception_was_swallowed_stops_the_sweep_and_its_jobs(tmp_path):
    """The sweep's SIGTERM handler run where Python swallows its exception (an at-fork hook, a
    ``__del__``: "Exception ignored", as CI met during ray.init): the sweep went on, following
    its jobs to their end. Now the next poll raises it again: the job is stopped and reported,
    and the sweep leaves with the handler's exit code."""
    from ratchet_ray.cli.options import exit_on_signal

    class SignalledInDel:
        def __del__(self):
            signal.raise_signal(signal.SIGTERM)

    client, seen = FakeJobClient(), []
    job = sleeper(tmp_path, "a", 30)

    def swallowed(line: str) -> None:  # once the job runs (its SIGINT handler in place)
        wait_for(lambda: "start" in client.get_job_logs(client.submitted[0]["submission_id"]),
                 60, "job a to start")
        SignalledInDel()

    previous = signal.signal(signal.SIGTERM, exit_on_signal)  # the sweep's own (cli.ablations)
    try:
        with pytest.raises(SystemExit) as left:
            run_ray_jobs(client, [job], 1, {}, tmp_path, scope="s", rerun=RERUN,
                         on_done=seen.append, on_start=swallowed, poll_s=0.05)
    finally:
        signal.signal(signal.SIGTERM, previous)
        for proc in client.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    assert left.value.code == 128 + signal.SIGTERM
    [outcome] = seen
    assert outcome.returncode is None and outcome.message.startswith("stopped"), outcome
    assert "interrupted: released the run" in client.get_job_logs(outcome.job_id)
