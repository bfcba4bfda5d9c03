"""The sweep's arm-seeds as Ray jobs (``ray.job_submission.JobSubmissionClient``).

Contracts:
- ``run_ray_jobs`` keeps at most ``parallel`` jobs running and follows the ``attach`` ones (an
  earlier invocation's, never submitted twice); driver logs are copied into ``Job.log`` every
  ``log_every_s`` and at the end; ``jobs.json`` records each submission id as made;
  ``on_done`` gets each ``JobOutcome`` in finishing order (FAILED carries the exit code and the
  root cause from ``stopped.json``; STOPPED: returncode None). An unfinished job's cause names
  ``rerun`` (the sweep's command, ``spec.sweep_command``) as the way on: its driver says it
  (``submission``), and a cause naming no way on (an interrupt, a crash's last line) ends with
  it (``sweep_cause``), but a spent budget's, which names its own (a higher limit).
- ``--stop`` from another shell (``folder.STOP_FILE`` in ``out_dir``, written before it stops the
  running jobs): no job is submitted after it; each one not yet started is reported, not run.
- Leaving ``run_ray_jobs`` by an exception (Ctrl-C, SIGTERM) stops every job it follows, waits
  (bounded; a second Ctrl-C ends the wait), reports them and re-raises: nothing is left
  running, and a rerun resumes them. A job server that stops answering (its head died) is
  ``JobServerGone``, one line naming it and ``rerun``; nothing is left to stop then. A SIGTERM
  or Ctrl-C whose exception Python swallowed (its handler run in an at-fork hook or a
  ``__del__``) is raised again at the next poll (``loop.signals.watching_signals``): the sweep went
  on, its jobs running to the end.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
from contextlib import suppress
from pathlib import Path
from typing import Any, Callable, ContextManager, Mapping, Sequence

from ratchet_ray.loop.rundir import SWEEP_COMMAND_ENV
from ratchet_ray.loop.signals import watching_signals
from ratchet_ray.storage.fsutil import atomic_write_json, refusing_writes
from ratchet_ray.sweep.folder import STOP_FILE
from ratchet_ray.sweep.spec import Job, JobOutcome, SweepError
from ratchet_ray.suites.hooks import forwarded_env_vars

JOBS_FILE = "jobs.json"
STOP_WAIT_S = 60
"""Seconds a stopped job's driver has to wind down after its SIGINT before Ray kills it."""
TERMINAL = {"SUCCEEDED", "FAILED", "STOPPED"}
FORWARDED = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HOME",
             "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "RAY_AUTH_MODE")
SECRET_NAME = re.compile(r"KEY|SECRET|PASSWORD|CREDENTIAL|TOKEN(?!S)", re.IGNORECASE)


def job_client(address: str, timeout_s: float = 120.0) -> Any:
    """A ``JobSubmissionClient`` of ``address`` (a GCS address, ``auto`` or the dashboard URL),
    retried until it answers or ``timeout_s`` passes (then ``SweepError`` naming the address;
    at once when nothing accepts a connection)."""
    from ray.job_submission import JobSubmissionClient

    from ratchet_ray.loop.ray_address import unreachable

    fix = ("start the head there with its dashboard (`ray start --head` does by default), or give "
           "the cluster's dashboard URL (http://HOST:8265) or GCS address (HOST:6379) with "
           "--address / RAY_ADDRESS")
    why = unreachable(address)  # a refused connection is not retried for two minutes
    if why is not None:
        raise SweepError(f"no Ray job server at {address}: {why}; {fix}")
    try:
        return _asked_until(lambda: JobSubmissionClient(address), timeout_s,
                            (ConnectionError, RuntimeError, ValueError))
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise SweepError(f"the Ray job server of {address} did not answer within "
                         f"{timeout_s:.0f}s ({type(exc).__name__}: {str(exc)[:300]}); "
                         f"{fix}") from exc


def _asked_until(call: Callable[[], Any], timeout_s: float, errors: tuple[type[Exception], ...],
                 again: Callable[[Exception], bool] = lambda _exc: True) -> Any:
    """``call()``, asked again every second while it raises one of ``errors`` that ``again``
    accepts, for at most ``timeout_s`` seconds; past them, or refused by ``again``, the error
    is raised as it came."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return call()
        except errors as exc:
            if not again(exc) or time.monotonic() > deadline:
                raise
            time.sleep(1.0)


AGENT_NOT_READY = "No available agent to submit job"
"""The job server's answer (HTTP 500) while no node's job agent has registered yet: a head that
has just started says it for a while, and it asks to be tried again."""


def submit_when_ready(client: Any, timeout_s: float = 120.0, **submission_kwargs: Any) -> str:
    """``client.submit_job(**submission_kwargs)``, asked again while the job server says no
    agent is ready yet (``AGENT_NOT_READY``), at most ``timeout_s`` seconds; any other refusal,
    or that one past the deadline, is raised as it came."""
    return _asked_until(lambda: client.submit_job(**submission_kwargs), timeout_s,
                        (RuntimeError,), lambda exc: AGENT_NOT_READY in str(exc))


_GCS_PROBE = ("import ray; ray.init(log_to_driver=False); "
              "print('RATCHET_GCS_ADDRESS=' + ray.get_runtime_context().gcs_address, flush=True)")


def is_dashboard_url(address: str) -> bool:
    """Whether ``address`` is the job server's URL (``http://HOST:8265``, the form of ``ray job
    submit``) rather than the cluster's GCS address (``HOST:6379`` or ``auto``)."""
    return address.startswith(("http://", "https://"))


def gcs_address(client: Any, address: str, env: Mapping[str, str], timeout_s: float = 120.0,
                python: str = sys.executable) -> str:
    """The GCS address of the cluster behind the job server ``client`` (of ``address``, a
    dashboard URL): a driver joins a cluster only by its GCS address, and the job server
    publishes none, so one small Ray job prints its own. ``SweepError`` naming the address and
    the fix when it does not."""
    job_id = f"ratchet-gcs-probe-{time.time_ns() // 1_000_000}"
    submit_when_ready(client, submission_id=job_id,
                      entrypoint=f"{shlex.quote(python)} -c {shlex.quote(_GCS_PROBE)}",
                      runtime_env={"env_vars": forwarded_env(env)})  # the Ray auth mode
    _wait_ended(client, [job_id], timeout_s)
    status = _status(client, job_id)
    logs = client.get_job_logs(job_id) if status in TERMINAL else ""
    found = re.search(r"^RATCHET_GCS_ADDRESS=(\S+)$", logs, re.MULTILINE)
    if status != "SUCCEEDED" or found is None:
        if status not in TERMINAL:
            client.stop_job(job_id)
        tail = (logs.strip().splitlines() or [f"no output within {timeout_s:.0f}s"])[-1][:300]
        raise SweepError(f"--address {address}: a probe job ({job_id}, {status}) could not tell "
                         f"the cluster's GCS address ({tail}); give that address instead "
                         "(HOST:6379, or auto on the head)")
    return found.group(1)


def forwarded_env(env: Mapping[str, str]) -> dict[str, str]:
    """The caller's settings variables a job's driver needs: ``RATCHET_*``, the suites'
    ``forward`` variables, HF offline switches, AWS region / profile, Ray auth mode; never a
    secret-named one."""
    names = {*FORWARDED, *forwarded_env_vars()}
    return {k: v for k, v in env.items()
            if (k.startswith("RATCHET_") or k in names) and not SECRET_NAME.search(k)}


def submission(job: Job, env: Mapping[str, str], rerun: str) -> dict[str, Any]:
    """``submit_job`` keyword arguments of ``job``: the entrypoint runs ``argv`` (this venv's
    Python first) from ``job.cwd``; the ``runtime_env`` carries ``forwarded_env`` and ``rerun``
    as ``SWEEP_COMMAND_ENV`` (the driver then names the sweep's command wherever a run names
    ``--resume RUN``), and makes a stop a SIGINT with ``STOP_WAIT_S`` before Ray kills it."""
    entrypoint = f"cd {shlex.quote(str(job.cwd))} && exec {shlex.join(job.argv)}"
    env_vars = {**forwarded_env(env), SWEEP_COMMAND_ENV: rerun, "RAY_JOB_STOP_SIGNAL": "SIGINT",
                "RAY_JOB_STOP_WAIT_TIME_S": str(STOP_WAIT_S)}
    return {"entrypoint": entrypoint, "runtime_env": {"env_vars": env_vars}}


def read_jobs(out_dir: Path) -> dict[str, dict[str, Any]]:
    """Arm-seed -> its latest job (``jobs.json``; empty when there is none). ``SweepError``
    naming the file and the fix when it is no such record (a hand edit, a damaged disk)."""
    path = out_dir / JOBS_FILE
    if not path.is_file():
        return {}
    try:
        jobs = json.loads(path.read_text())
        if isinstance(jobs, dict) and all(isinstance(e, dict) and "job_id" in e
                                          for e in jobs.values()):
            return jobs
        why = "not a record of the sweep's jobs"
    except (OSError, ValueError) as exc:
        why = str(exc)
    raise SweepError(f"{path} is unreadable ({why}); move it away and rerun (the jobs it named "
                     "are then neither followed nor stopped: `ray job list` on the cluster shows "
                     "any still running, `ray job stop <id>` stops one)")


def _status(client: Any, job_id: str) -> str:
    status = client.get_job_status(job_id)  # one request per poll, not two
    return str(getattr(status, "value", status))


def recorded_status(client: Any, out_dir: Path) -> dict[str, str]:
    """Arm-seed -> its latest job's status (``UNKNOWN`` when this cluster does not know it:
    another cluster, a restarted head)."""
    found = {}
    for name, entry in sorted(read_jobs(out_dir).items()):
        try:
            found[name] = _status(client, entry["job_id"])
        except RuntimeError:
            found[name] = "UNKNOWN"
    return found


def live_jobs(client: Any, out_dir: Path) -> dict[str, str]:
    """Arm-seed -> submission id of the recorded jobs that have not ended on this cluster."""
    jobs = read_jobs(out_dir)
    return {name: jobs[name]["job_id"] for name, status in recorded_status(client, out_dir).items()
            if status != "UNKNOWN" and status not in TERMINAL}


def stop_recorded_jobs(client: Any, out_dir: Path, wait_s: float = STOP_WAIT_S + 30) -> list[str]:
    """Stop every recorded job still running and wait until each has ended; returns their
    names. Raises ``SweepError`` naming the jobs still running ``wait_s`` seconds later (never
    reports a job stopped that is not)."""
    live = live_jobs(client, out_dir)
    for job_id in live.values():
        client.stop_job(job_id)
    running = _wait_ended(client, list(live.values()), wait_s)
    if running:
        names = sorted(name for name, job_id in live.items() if job_id in running)
        raise SweepError(f"asked {', '.join(names)} to stop, still running {wait_s:.0f}s later; "
                         f"`ray job status <id>` / `ray job stop <id>` on the cluster: "
                         f"{', '.join(running)}")
    return sorted(live)


def _wait_ended(client: Any, job_ids: Sequence[str], wait_s: float,
                poll_s: float = 0.2) -> list[str]:
    """Wait until every job has ended or ``wait_s`` passed; returns those still not ended."""
    deadline = time.monotonic() + wait_s
    while True:
        running = [j for j in job_ids if _status(client, j) not in TERMINAL]
        if not running or time.monotonic() >= deadline:
            return running
        time.sleep(poll_s)


def sweep_cause(text: str, rerun: str) -> str:
    """``text`` (an arm-seed's cause), ending with ``rerun`` in backticks unless it names it
    already (its driver does, ``submission``)."""
    return text if f"`{rerun}`" in text else f"{text}; rerun the sweep to resume it: `{rerun}`"


def _stopped_record(job: Job, since: float) -> dict[str, Any] | None:
    """The ``stopped.json`` the job's run wrote after ``since`` (epoch seconds), if any."""
    if job.results_dir is None:
        return None
    for stopped in sorted(Path(job.results_dir).glob("*/*/stopped.json")):
        if stopped.stat().st_mtime >= since:
            try:
                return json.loads(stopped.read_text())
            except (OSError, ValueError) as exc:
                return {"cause": f"{stopped} is unreadable ({exc}); see {job.log}"}
    return None


def _sweep_files(out_dir: Path, rerun: str) -> ContextManager[None]:
    """A sweep file that cannot be written mid-sweep (a log, ``jobs.json``) stops the sweep:
    ``SweepError`` naming the folder, the reason and the rerun (its jobs are stopped on the way
    out, so nothing runs on unrecorded); one it may not read (``fsutil.cannot_write``) too."""
    return refusing_writes(
        f"the sweep's files in {out_dir}", "the folder was deleted or made read-only while the "
        "sweep ran; restore it or make it writable", out_dir,
        lambda said: SweepError(f"{said}; its jobs were stopped, so rerun the sweep once that is "
                                f"fixed (it resumes what the folder holds): `{rerun}`"))


class _Followed:
    """One job being followed: its submission id and where its log goes."""

    def __init__(self, job: Job, job_id: str, action: str, rerun: str):
        self.job, self.job_id, self.action, self.rerun = job, job_id, action, rerun
        self.started, self.started_at = time.monotonic(), time.time()
        self.submitted = action == "attach"
        """Whether the cluster has it: an interrupt may cut its submission short."""
        job.log.parent.mkdir(parents=True, exist_ok=True)
        with open(job.log, "a") as handle:
            handle.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {action} (Ray job "
                         f"{job_id}): {shlex.join(job.argv)}\n")
            self.offset = handle.tell()
        self.logged_at = 0.0

    def copy_log(self, client: Any) -> None:
        text = client.get_job_logs(self.job_id)
        with open(self.job.log, "r+") as handle:
            handle.seek(self.offset)
            handle.truncate()
            handle.write(text)
        self.logged_at = time.monotonic()

    def last_line(self) -> str:
        try:
            text = self.job.log.read_text(errors="replace")[self.offset:]
        except OSError as exc:  # its folder is gone: the outcome is still reported
            return f"(its log {self.job.log} is unreadable: {exc.strerror or exc})"
        lines = [line for line in text.splitlines() if line.strip()]
        return lines[-1][:300] if lines else "(empty log)"

    def outcome(self, client: Any, status: str) -> JobOutcome:
        wall = time.monotonic() - self.started
        if status == "SUCCEEDED":
            return JobOutcome(self.job.name, self.action, 0, wall, str(self.job.log),
                              job_id=self.job_id)
        stopped = _stopped_record(self.job, self.started_at) or {}
        if status == "STOPPED":
            returncode, said, cause = None, "stopped", "stopped"
        else:
            code = getattr(client.get_job_info(self.job_id), "driver_exit_code", None)
            returncode, said = 1 if code is None else code, f"exit {code}: {self.last_line()}"
            cause = self.last_line()
        budget = stopped.get("kind") == "BudgetExhausted"  # its words name the way on: a
        # higher limit given to the sweep's command; a plain rerun would stop at once again
        cause = stopped.get("cause", cause)
        return JobOutcome(self.job.name, self.action, returncode, wall, str(self.job.log),
                          f"{said} (log: {self.job.log})",
                          cause if budget else sweep_cause(cause, self.rerun), self.job_id, budget)


class JobServerGone(SweepError):
    """The job server stopped answering mid-sweep (its head died or cannot be reached)."""


class _Answering:
    """``client`` whose calls that cannot reach the job server (``OSError``: requests'
    ``ConnectionError`` is one) raise ``JobServerGone`` naming it and ``rerun``: they were a
    traceback the sweep's own exit then never printed, Ray ending the process a minute later."""

    def __init__(self, client: Any, rerun: str):
        self._client, self._rerun = client, rerun

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._client, name)

        def asked(*args: Any, **kwargs: Any) -> Any:
            try:
                return call(*args, **kwargs)
            except OSError as exc:
                where = getattr(self._client, "_address", None) or "the cluster"
                raise JobServerGone(
                    f"the Ray job server at {where} stopped answering ({type(exc).__name__}: "
                    f"{' '.join(str(exc).split())[:200]}): its head is down or out of reach; "
                    "the runs keep every round they finished: start the head again (or reach "
                    f"it) and rerun the sweep: `{self._rerun}`") from exc
        return asked


def run_ray_jobs(client: Any, jobs: Sequence[Job], parallel: int, env: Mapping[str, str],
                 out_dir: Path, *, scope: str, rerun: str,
                 attach: Mapping[str, str] | None = None,
                 on_done: Callable[[JobOutcome], None] | None = None,
                 on_start: Callable[[str], None] | None = None, poll_s: float = 1.0,
                 log_every_s: float = 5.0, stop_wait_s: float = STOP_WAIT_S + 30
                 ) -> list[JobOutcome]:
    """Run ``jobs`` as Ray jobs, at most ``parallel`` at once (see module contracts); ``rerun``:
    the command that continues the sweep, named by every unfinished job's cause."""
    if parallel < 1:
        raise SweepError(f"parallel must be >= 1, got {parallel}")
    client = _Answering(client, rerun)
    attach, report = dict(attach or {}), on_done or (lambda _: None)
    pending, running, outcomes = list(jobs), [], []

    def done(outcome: JobOutcome) -> None:
        outcomes.append(outcome)
        report(outcome)

    def finish(followed: _Followed, status: str, unwinding: bool = False) -> None:
        try:
            with _sweep_files(out_dir, rerun):
                followed.copy_log(client)
        except SweepError:
            if not unwinding:  # on the way out the outcome still counts, without its log
                raise
        done(followed.outcome(client, status))

    try:
        with watching_signals() as again:
            while pending or running:
                again()  # a stop whose exception Python swallowed ends the sweep here
                if pending and (out_dir / STOP_FILE).is_file():  # `--stop` from another shell
                    said = "not started: --stop stopped the sweep"
                    for job in pending:
                        done(JobOutcome(job.name, job.action, None, 0.0, str(job.log), said,
                                        sweep_cause(said, rerun)))
                    pending.clear()
                while pending and len(running) < parallel:
                    job = pending.pop(0)
                    job_id = attach.get(job.name) or \
                        f"ratchet-{scope}-{job.name}-{time.time_ns() // 1_000_000}"
                    with _sweep_files(out_dir, rerun):
                        followed = _Followed(job, job_id, "attach" if job.name in attach
                                             else job.action, rerun)
                    running.append(followed)  # from here on, stopped however this is left
                    if not followed.submitted:
                        submit_when_ready(client, submission_id=followed.job_id,
                                          metadata={"sweep": scope, "arm_seed": job.name},
                                          **submission(job, env, rerun))
                        followed.submitted = True
                        entry = {"job_id": followed.job_id, "action": job.action,
                                 "submitted_at": time.time()}
                        with _sweep_files(out_dir, rerun):
                            atomic_write_json(out_dir / JOBS_FILE, {**read_jobs(out_dir),
                                                                    job.name: entry})
                    if on_start is not None:
                        on_start(f"{followed.action:<6} {job.name}: Ray job {followed.job_id}, "
                                 f"log {job.log}")
                time.sleep(poll_s)
                for followed in list(running):
                    status = _status(client, followed.job_id)
                    if status in TERMINAL:
                        running.remove(followed)
                        finish(followed, status)
                    elif time.monotonic() - followed.logged_at > log_every_s:
                        with _sweep_files(out_dir, rerun):
                            followed.copy_log(client)
    finally:
        # Interrupted: stop what this sweep still follows, then report it. A submission an
        # interrupt cut short may never have reached the cluster: unknown there, it is dropped.
        try:
            running = [f for f in running if _stop(client, f)]
        except JobServerGone:  # the head is gone, and its jobs with it: nothing to stop
            running = []
        if running:
            with suppress(KeyboardInterrupt):  # a second Ctrl-C: wait no more, but report all
                _wait_ended(client, [f.job_id for f in running], stop_wait_s)
            for followed in running:
                status = _status(client, followed.job_id)
                # One still winding down was asked to stop: it is reported stopped.
                finish(followed, status if status in TERMINAL else "STOPPED", unwinding=True)
    return outcomes


def _stop(client: Any, followed: _Followed) -> bool:
    """Ask the cluster to stop ``followed``; False when it never had it (a submission cut short:
    the cluster does not know its id)."""
    try:
        client.stop_job(followed.job_id)
    except RuntimeError:
        if followed.submitted:
            raise
        return False
    return True
