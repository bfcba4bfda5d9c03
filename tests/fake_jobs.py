"""A stand-in for ``ray.job_submission.JobSubmissionClient`` that runs each job's entrypoint as a
local shell process, as Ray's job supervisor does: its ``runtime_env`` env vars on top of the
caller's environment, stdout + stderr as the job's logs, ``stop_job`` sending the
``RAY_JOB_STOP_SIGNAL`` the job asked for (else SIGTERM) and SIGKILL after
``RAY_JOB_STOP_WAIT_TIME_S``. Used by the sweep's unit tests, which need no Ray cluster."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Info:
    status: str
    driver_exit_code: int | None


class FakeJobClient:
    def __init__(self, env: dict[str, str] | None = None):
        self.env = dict(os.environ if env is None else env)
        self.logs = Path(tempfile.mkdtemp(prefix="fakejobs"))
        self.procs: dict[str, subprocess.Popen] = {}
        self.stopped: set[str] = set()
        self.submitted: list[dict] = []

    def submit_job(self, *, entrypoint: str, submission_id: str, runtime_env=None, metadata=None):
        if submission_id in self.procs:
            raise RuntimeError(f"Job with submission_id {submission_id} already exists.")
        env_vars = (runtime_env or {}).get("env_vars", {})
        self.submitted.append({"entrypoint": entrypoint, "submission_id": submission_id,
                               "runtime_env": runtime_env, "metadata": metadata})
        with open(self.logs / submission_id, "w") as handle:
            self.procs[submission_id] = subprocess.Popen(
                entrypoint, shell=True, env={**self.env, **env_vars}, stdout=handle,
                stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[submission_id].stop_env = env_vars
        return submission_id

    def _proc(self, job_id: str) -> subprocess.Popen:
        if job_id not in self.procs:
            raise RuntimeError(f"Request failed with status code 404: Job {job_id} does not "
                               "exist.")
        return self.procs[job_id]

    def get_job_status(self, job_id: str) -> str:
        code = self._proc(job_id).poll()
        if code is None:
            return "RUNNING"
        if job_id in self.stopped:
            return "STOPPED"
        return "SUCCEEDED" if code == 0 else "FAILED"

    def get_job_info(self, job_id: str) -> Info:
        proc = self._proc(job_id)
        return Info(self.get_job_status(job_id), None if job_id in self.stopped else proc.poll())

    def get_job_logs(self, job_id: str) -> str:
        self._proc(job_id)
        return (self.logs / job_id).read_text()

    def stop_job(self, job_id: str) -> bool:
        proc = self._proc(job_id)
        if proc.poll() is not None:
            return False
        self.stopped.add(job_id)
        name = proc.stop_env.get("RAY_JOB_STOP_SIGNAL", "SIGTERM")
        wait_s = float(proc.stop_env.get("RAY_JOB_STOP_WAIT_TIME_S", 3))
        os.killpg(proc.pid, getattr(signal, name))

        def kill_late() -> None:
            deadline = time.monotonic() + wait_s
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)

        threading.Thread(target=kill_late, daemon=True).start()
        return True
