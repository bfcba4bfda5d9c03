"""A Ray head on 127.0.0.1 for the length of a ``with`` block (used by ``python -m jobs.ablations``).

Contracts:
- ``ray_cluster(...)`` yields the variables children need to join: ``RAY_ADDRESS`` when set
  (that cluster is reused and left alone), else (``local`` too: a Ray of the caller's own) the
  address of a head it starts (``ray start --head --block`` on 127.0.0.1, its own process
  group, usage stats off) with its dashboard on a free loopback port as
  ``RAY_API_SERVER_ADDRESS``. Such a head uses token authentication
  (``ensure_auth_token``), so ``RAY_AUTH_MODE=token`` is set and yielded unless the caller's
  environment names a mode.
- The head is ready when the block starts (``ray status`` answers, the runtime has started). A
  port of its own taken between choosing and binding it (``PORT_TAKEN``) is retried on fresh
  ports up to ``START_ATTEMPTS`` times; any other death, or no readiness within
  ``ready_timeout_s``, raises ``RayHeadError`` (``_HEAD_FAILURES`` names the causes it tells)
  with where the details are: the head's log, and Ray's own logs of that start, copied beside
  it (``session_logs(log)``) before its session folder goes.
- Leaving the block stops only the head it started (``_Head.stop``). A SIGTERM or Ctrl-C
  whose exception Python swallowed while the head started is raised again once it is up
  (``loop.signals.watching_signals``), the head stopped on the way out.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

from ratchet_ray.loop.ray_address import LOCAL
from ratchet_ray.loop.signals import watching_signals

START_ATTEMPTS = 3
STARTED = "Ray runtime started."  # what ``ray start`` prints once every process is up
SLOW_FIX = ("this machine may be too busy: rerun when it is less so, or start a head yourself "
            "(`ray start --head`) and give the sweep its address with --address")
# Ray's words for the dashboard's port taken: by ``ray start``'s check before it starts the
# dashboard, and by the dashboard itself when the port went between that check and its bind.
DASHBOARD_PORT_TAKEN = ("because it's already occupied", "Failed to find a valid port for dashboard")
# ... and for a gRPC server's port taken (the GCS's, given by ``--port``): ``ray start`` exits.
PORT_TAKEN = (*DASHBOARD_PORT_TAKEN, "Failed to start the grpc server. The specified port is")


class RayHeadError(RuntimeError):
    """The local Ray head could not start; the message is one line: the cause, the fix, and
    where its log is."""


class DashboardPortTaken(RayHeadError):
    """The head's dashboard could not bind the port chosen for it: another process took it."""


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports. Every socket stays bound until all are chosen:
    ports asked for one at a time can repeat (a port closed is offered again), and two services
    of one node on one port stop ``ray start``."""
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


def ray_executable() -> str:
    """The ``ray`` CLI next to this Python (a venv), else the one on PATH."""
    beside = Path(sys.executable).parent / "ray"
    found = str(beside) if beside.is_file() else shutil.which("ray")
    if found is None:
        raise RayHeadError("the `ray` command is not installed next to this Python or on PATH; "
                           "pip install 'ray[default]' or set RAY_ADDRESS to a running cluster")
    return found


def ensure_auth_token(env: Mapping[str, str]) -> None:
    """Under ``RAY_AUTH_MODE=token`` in ``env``, generate ``~/.ray/auth_token`` (``ray
    get-auth-token --generate``) when Ray would find no token: ``ray start --head`` never makes
    one, so a fresh machine's head would refuse to start. ``RayHeadError`` quotes Ray's failure."""
    if env.get("RAY_AUTH_MODE", "").lower() != "token" or _has_auth_token(env):
        return
    done = subprocess.run([ray_executable(), "get-auth-token", "--generate"], env=dict(env),
                          stdout=subprocess.DEVNULL,  # the token itself: never logged
                          stderr=subprocess.PIPE, text=True, timeout=120)
    if done.returncode != 0:
        raise RayHeadError(f"no Ray auth token could be made for RAY_AUTH_MODE=token "
                           f"(`ray get-auth-token --generate` exited with {done.returncode}: "
                           f"{_last_line(done.stderr)}); set RAY_AUTH_TOKEN or "
                           f"RAY_AUTH_TOKEN_PATH, or RAY_AUTH_MODE=disabled for a loopback head")


def _has_auth_token(env: Mapping[str, str]) -> bool:
    """Whether Ray would find a token under ``env`` (where its loader looks), read without
    starting the ``ray`` CLI: most head starts find one, and that CLI costs seconds of CPU."""
    if env.get("RAY_AUTH_TOKEN"):
        return True
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    path = env.get("RAY_AUTH_TOKEN_PATH") or home / ".ray" / "auth_token"
    return Path(path).is_file()


def _last_line(text: str, limit: int = 300) -> str:
    """The last non-blank line of ``text``, cut to ``limit`` characters ("nothing" if none)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:limit] if lines else "nothing"


def session_logs(log: Path) -> Path:
    """Where Ray's own logs of a head start that failed are kept: beside the head's ``log``."""
    return log.parent / f"{log.stem}_session_logs"


# What a failed start's output says, as (pattern, cause, fix), the first match winning; the
# pattern's first group fills ``{0}``. Ray's own words (its sources, Ray 2.x), else Python's;
# with none of them, the last error line the output holds.
_HEAD_FAILURES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"already running at (\S+?)\.?\s"), "another Ray head already runs at {0}",
     "stop it (`ray stop`), or run on it with --address {0} (RAY_ADDRESS)"),
    (re.compile(r"The specified port is (\d+)"), "port {0} is in use by another process",
     "rerun (each start chooses fresh ports), or free it (`lsof -i :{0}`; a head left "
     "running: `ray stop`)"),
    (re.compile(r"([Aa]ddress already in use)"), "a port it was given is in use by another "
     "process", "rerun (each start chooses fresh ports), or stop what holds it (a head left "
     "running: `ray stop`)"),
    (re.compile("(" + "|".join(map(re.escape, DASHBOARD_PORT_TAKEN)) + ")"),
     "its dashboard's port was taken by another process on every start",
     "rerun (each start chooses fresh ports)"),
    (re.compile(r"(No space left on device)"), "the disk of its session folder under /tmp is "
     "full", "free space in /tmp, then rerun"),
    (re.compile(r"Permission denied: '([^']+)'"), "it may not write {0}",
     "make that path writable (or free /tmp of another user's files), then rerun"),
    (re.compile(r"(?i)(no authentication token (?:was )?found|invalid authentication token)"),
     "it found no usable auth token (RAY_AUTH_MODE=token)", "set RAY_AUTH_TOKEN or "
     "RAY_AUTH_TOKEN_PATH, or RAY_AUTH_MODE=disabled for a loopback head"),
)
# An error line of Python (``RuntimeError: ...``) or of Ray's C++ processes (`` E ...``).
_ERROR_LINE = re.compile(r"^\w*(Error|Exception)\b.*|.*\b(Check failed|ERROR)\b.*", re.M)


def _cause_and_fix(said: str) -> tuple[str, str]:
    """What a failed start's output ``said`` names as its cause, and the fix (module contract)."""
    for pattern, cause, fix in _HEAD_FAILURES:
        found = pattern.search(said)
        if found:
            return cause.format(found.group(1)), fix.format(found.group(1))
    errors = [found.group(0) for found in _ERROR_LINE.finditer(said)]
    last = _last_line(errors[-1] if errors else said)
    return (f"its last words: {last}", "fix what they name and rerun, or run the sweep on a "
            "running cluster with --address (RAY_ADDRESS)")


def own_port_flags() -> list[str]:
    """``ray start`` flags giving every service of a head a free port of its own: the defaults of
    the dashboard agent and metrics exporter are fixed, so a second runtime on this machine
    would otherwise collide with the first and come up without a working agent."""
    services = ("dashboard-agent-listen-port", "dashboard-agent-grpc-port", "metrics-export-port",
                "runtime-env-agent-port", "node-manager-port", "object-manager-port",
                "ray-client-server-port")
    return [f"--{name}={port}" for name, port in zip(services, free_ports(len(services)))]


@contextmanager
def ray_cluster(num_cpus: int, log: Path, env: Mapping[str, str] | None = None,
                ready_timeout_s: float = 180.0) -> Iterator[dict[str, str]]:
    """``RAY_ADDRESS`` (and ``RAY_AUTH_MODE``) of the given cluster or of a local head started
    here (see module contracts)."""
    env = dict(os.environ if env is None else env)
    if env.get("RAY_ADDRESS") == LOCAL:  # "a Ray of one's own": this head, not a cluster's
        del env["RAY_ADDRESS"]
    if env.get("RAY_ADDRESS"):
        yield {"RAY_ADDRESS": env["RAY_ADDRESS"]}
        return
    env.setdefault("RAY_AUTH_MODE", "token")
    ensure_auth_token(env)
    # No idle workers started ahead for the first driver: the runs' actors carry environments of
    # their own and never use them (loop.runtime.LOCAL_RAY_SYSTEM_CONFIG says the same to Ray).
    env.setdefault("RAY_prestart_worker_first_driver", "0")
    env.setdefault("RAY_worker_niceness", "0")  # workers at the driver's priority (the same)
    log.parent.mkdir(parents=True, exist_ok=True)
    with watching_signals() as again:
        for attempt in range(1, START_ATTEMPTS + 1):
            head = _Head.start(num_cpus, log, env)
            try:
                # `ray start` first says it started (a dashboard that failed never lets it),
                # then the GCS must answer
                head.wait_started(ready_timeout_s)
                head.wait_ready(env, ready_timeout_s)
                again()  # stopped as if the signal's exception had got out, the head with it
                break
            except BaseException as exc:
                taken = isinstance(exc, RayHeadError) and head.port_taken(PORT_TAKEN)
                head.stop(graceful=False)
                if not taken or attempt == START_ATTEMPTS:
                    raise
    try:
        yield {"RAY_ADDRESS": head.address, "RAY_AUTH_MODE": env["RAY_AUTH_MODE"],
               "RAY_API_SERVER_ADDRESS": f"http://127.0.0.1:{head.dashboard_port}"}
    finally:
        head.stop()


@dataclass
class _Head:
    """One ``ray start --head --block``: its output goes to ``log`` from byte ``log_offset``."""

    process: subprocess.Popen
    address: str  # the GCS's
    dashboard_port: int
    temp: Path  # Ray's session files; the logs we keep are ours
    log: Path
    log_offset: int

    @classmethod
    def start(cls, num_cpus: int, log: Path, env: Mapping[str, str]) -> "_Head":
        """``ray start --head --block`` on fresh ports, its output appended to ``log``."""
        # Ray's socket paths must stay short, hence a fresh folder directly under /tmp.
        try:
            temp = Path(tempfile.mkdtemp(prefix="rh", dir="/tmp"))
        except OSError as exc:
            raise RayHeadError(f"the local Ray head could not start: cannot make its session "
                               f"folder under /tmp ({exc.strerror or exc}); free space in /tmp "
                               "or make it writable, or run the sweep on a running cluster with "
                               "--address (RAY_ADDRESS)") from exc
        port, dashboard_port = free_ports(2)
        with open(log, "a") as handle:
            offset = handle.tell()
            head = subprocess.Popen(
                [ray_executable(), "start", "--head", "--block", "--node-ip-address=127.0.0.1",
                 f"--port={port}", *own_port_flags(), "--include-dashboard=true",
                 "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard_port}",
                 "--disable-usage-stats",
                 # `docker`: this machine, as a local run's Ray offers it (runtime.actor_options)
                 f"--resources={{\"docker\": {num_cpus}}}",
                 f"--num-cpus={num_cpus}", f"--temp-dir={temp}"],
                cwd=temp, env=dict(env), stdout=handle, stderr=subprocess.STDOUT,
                start_new_session=True)
        return cls(head, f"127.0.0.1:{port}", dashboard_port, temp, log, offset)

    def said(self) -> str:
        """What this start has written to the log so far."""
        with open(self.log, "rb") as handle:
            handle.seek(self.log_offset)
            return handle.read().decode(errors="replace")

    def said_all(self) -> str:
        """This start's output, then its dashboard's own log (in the session folder under
        ``temp``), where a port taken from the dashboard is told."""
        dashboard_log = self.temp / "session_latest" / "logs" / "dashboard.log"
        return self.said() + (dashboard_log.read_text(errors="replace")
                              if dashboard_log.is_file() else "")

    def port_taken(self, words: tuple[str, ...] = DASHBOARD_PORT_TAKEN) -> bool:
        """Whether ``said_all`` says a port was taken (by default the dashboard's)."""
        said = self.said_all()
        return any(taken in said for taken in words)

    def failure(self, what: str, error: type[RayHeadError] = RayHeadError,
                slow: str = "") -> RayHeadError:
        """``error`` in one line: ``what`` failed, the cause and fix this start's output names
        (``slow``, when given, the fix if it names none: the head was only slow), and where
        the details are. Ray's own logs are copied beside the head's log first: its session
        folder goes when the head is stopped."""
        kept = session_logs(self.log)
        try:
            shutil.copytree(self.temp / "session_latest" / "logs", kept, dirs_exist_ok=True)
            where = f"{self.log}, Ray's logs in {kept}"
        except (OSError, shutil.Error):  # no session yet (Ray died first), or a file that went
            where = str(self.log)
        said = self.said_all()
        cause, fix = _cause_and_fix(said)
        if slow and not any(pattern.search(said) for pattern, _, _ in _HEAD_FAILURES):
            fix = slow
        return error(" ".join(f"{what}: {cause}; {fix} (details: {where})".split()))

    def wait_started(self, timeout_s: float) -> None:
        """Until ``ray start`` says its runtime started. ``DashboardPortTaken`` as soon as
        ``port_taken``; ``RayHeadError`` when the head exits first or ``timeout_s`` passes."""
        deadline = time.monotonic() + timeout_s
        while True:
            if STARTED in self.said():
                return
            if self.port_taken():
                raise self.failure("the local Ray head could not start", DashboardPortTaken)
            if self.process.poll() is not None:
                raise self.failure(f"the local Ray head exited with {self.process.returncode} "
                                   "while starting")
            if time.monotonic() > deadline:
                raise self.failure(f"the local Ray head did not finish starting within "
                                   f"{timeout_s:.0f}s", slow=SLOW_FIX)
            time.sleep(0.5)

    def wait_ready(self, env: Mapping[str, str], timeout_s: float) -> None:
        """Until the GCS answers ``ray status``; ``RayHeadError`` when the head exits first or
        ``timeout_s`` passes."""
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process.poll() is not None:
                raise self.failure(f"the local Ray head exited with {self.process.returncode} "
                                   "after starting")
            try:
                probe = subprocess.run([ray_executable(), "status", f"--address={self.address}"],
                                       env=dict(env), capture_output=True, text=True, timeout=60)
            except subprocess.TimeoutExpired as hung:  # a GCS not answering yet: asked again
                probe = subprocess.CompletedProcess(hung.cmd, -1, "",
                                                    f"no answer within {hung.timeout}s")
            if probe.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise self.failure(f"the local Ray head at {self.address} did not answer `ray "
                                   f"status` within {timeout_s:.0f}s (last answer: "
                                   f"{_last_line(probe.stderr)})", slow=SLOW_FIX)
            time.sleep(1.0)

    def stop(self, graceful: bool = True) -> None:
        """SIGTERM and a wait (``--block`` stops what it started), else or after that SIGKILL to
        the head's group (``graceful=False``, a head that failed to start: at once); then Ray's
        session files go."""
        head = self.process
        if head.poll() is not None or not graceful:
            # ``ray start`` died or failed: what it had started may live on in its group
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(head.pid, signal.SIGKILL)
            head.wait(timeout=30)
        else:
            head.send_signal(signal.SIGTERM)
            try:
                head.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(head.pid, signal.SIGKILL)  # its own group: only what this head started
                head.wait(timeout=30)
        shutil.rmtree(self.temp, ignore_errors=True)
