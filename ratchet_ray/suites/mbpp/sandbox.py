"""Start the sandbox process (``harness.py``) for one grade; collect its verdict, whatever it does.

Isolation modes, probed once per ``Sandbox``:
- ``namespaces`` (root and ``unshare`` permitted): new network namespace (only a downed loopback),
  pid namespace (killing its init kills every process the code made) and mount namespace (all
  mounts read-only, private tmpfs scratch, /root and other closed dirs hidden; see confine.py);
  the code runs under a uid allotted to this grade alone, with no_new_privs.
- ``uid`` (root, namespaces refused, e.g. Docker's default capabilities): the per-grade uid and
  rlimits; the network is reachable and world-writable dirs are writable.
- ``rlimits`` (not root): the grader's own user with rlimits; the weakest, logged as a warning.
- ``refused`` (root, but no unprivileged uid can run the interpreter and no namespaces): nothing
  is run; ``run`` raises ``SandboxUnavailable`` naming the fix (fail closed).
In every mode: a fresh temporary working dir, an environment rebuilt from an allowlist (no
credentials can leak: nothing from the grader's environment is copied), rlimits on address
space, CPU, processes and file size, a wall-clock deadline after which the whole process group
is SIGKILLed, and capped reads of the child's output.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)
HARNESS_SCRIPT = Path(__file__).with_name("harness.py")
RESULT_MARK = b"RATCHET-RESULT "
STAGE_MARK = b"RATCHET-STAGE untrusted"
NAMESPACE_FLAGS = ("--net", "--pid", "--mount", "--fork", "--kill-child", "--mount-proc")
UNIQUE_UID_FLOOR = 1_000_000_000  # same floor as confine.py; never a real account
UNIQUE_UID_SPAN = 100_000_000
NOBODY_UID = 65534
# The most the harness may extend a budget for a slow reference solution (harness.time_budget):
# two evalplus splits of at most 60 + 2 s, plus the failure probe.
MAX_TASK_BUDGET_S = 2 * (60.0 + 2.0) + 12.0
_SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class SandboxLimits:
    budget_s: float = 20.0
    """Wall-clock budget for grading inside the sandbox (base + plus tests + diagnosis); raised
    per task up to ``MAX_TASK_BUDGET_S`` when evalplus itself would allow more (slow references)."""
    memory_mb: int = 1024
    """Address space the solution may add on top of the loaded test data."""
    nproc: int = 32
    """Processes the sandbox uid may own at once (bounds fork bombs)."""
    fsize_mb: int = 16
    """Largest file the code may write."""
    grace_s: float = 10.0
    """Extra wall-clock time for interpreter start-up and loading test data."""
    output_cap: int = 256 * 1024
    """Bytes of the child's stdout kept (the tail, where the result line is)."""


@dataclass
class SandboxRun:
    result: dict | None
    timed_out: bool
    returncode: int | None
    reached_untrusted: bool
    stderr_tail: str
    wall_s: float
    mode: str
    notes: list[str] = field(default_factory=list)


def probe_namespaces() -> tuple[bool, str]:
    """Whether ``unshare`` can give us net+pid+mount namespaces here."""
    if os.geteuid() != 0:
        return False, "not root"
    unshare = shutil.which("unshare")
    if not unshare:
        return False, "unshare(1) not installed"
    try:
        probe = subprocess.run([unshare, *NAMESPACE_FLAGS, "--", "true"], capture_output=True,
                               timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"unshare failed: {exc}"
    if probe.returncode != 0:
        return False, f"unshare refused: {probe.stderr.decode(errors='replace').strip()[:200]}"
    return True, "ok"


def probe_uid_switch(uid: int) -> bool:
    """Whether a child can switch to ``uid`` (fails in user namespaces that do not map it)."""
    try:
        return subprocess.run(["true"], user=uid, group=uid, extra_groups=[], timeout=15,
                              check=False, env={"PATH": _SAFE_PATH}).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


class SandboxUnavailable(RuntimeError):
    """No safe way to run untrusted code here; the message names what is missing and the fix."""


def _runtime_reachable_by_others() -> bool:
    from ratchet_ray.suites.mbpp.confine import runtime_reachable

    return runtime_reachable([sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path])


class Sandbox:
    """One per grader; ``run(job)`` may be called repeatedly, from one thread at a time.

    Fails closed: as root without namespaces, code could only run as root if the Python runtime
    is not reachable by an unprivileged uid (root ignores RLIMIT_NPROC, so a fork bomb would be
    unbounded); then ``run`` raises ``SandboxUnavailable`` instead of running anything."""

    def __init__(self, limits: SandboxLimits | None = None, work_root: Path | None = None):
        self.limits = limits or SandboxLimits()
        self.work_root = work_root
        self.refusal = ""
        namespaces, why = probe_namespaces()
        self.uid_kind: str | None = None
        if os.geteuid() != 0:
            self.mode = "rlimits"
        else:
            probe = UNIQUE_UID_FLOOR + secrets.randbelow(UNIQUE_UID_SPAN)
            self.uid_kind = ("unique" if probe_uid_switch(probe)
                             else "nobody" if probe_uid_switch(NOBODY_UID) else None)
            self.mode = "namespaces" if namespaces else "uid"
            if self.uid_kind is None:
                self.refusal = "cannot switch to an unprivileged uid"
            elif not namespaces and not _runtime_reachable_by_others():
                self.refusal = (f"the Python runtime ({sys.base_prefix}) is not reachable by an "
                                f"unprivileged uid and namespaces are unavailable ({why})")
            if self.refusal:
                self.mode = "refused"
                self.refusal += ("; fix: allow unshare(1) (CAP_SYS_ADMIN), install Python in a "
                                 "world-readable location, or run the grader as a non-root user")
        self.description = f"{self.mode} (uid: {self.uid_kind or 'unchanged'}; namespaces: {why})"
        if self.refusal:
            log.error("MBPP+ sandbox refuses to run generated code as root: %s", self.refusal)
        elif self.mode != "namespaces" or self.uid_kind != "unique":
            log.warning("MBPP+ sandbox is weaker than full isolation: %s", self.description)

    def _uid(self) -> int | None:
        if self.uid_kind == "unique":
            return UNIQUE_UID_FLOOR + secrets.randbelow(UNIQUE_UID_SPAN)
        return NOBODY_UID if self.uid_kind == "nobody" else None

    def _argv(self, job_path: Path) -> list[str]:
        python = [sys.executable, "-I", "-B", str(HARNESS_SCRIPT), str(job_path)]
        if self.mode == "namespaces":
            return [shutil.which("unshare") or "unshare", *NAMESPACE_FLAGS, "--", *python]
        return python

    @staticmethod
    def _environment(workdir: Path) -> dict[str, str]:
        """Built from scratch: nothing of the grader's environment (credentials!) is copied."""
        return {"PATH": _SAFE_PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": str(workdir),
                "TMPDIR": str(workdir), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1"}

    def run(self, job: dict, extra_grace_s: float = 0.0) -> SandboxRun:
        """Grade ``job`` (see harness.py for its keys) in a fresh sandbox process."""
        if self.refusal:
            raise SandboxUnavailable(self.refusal)
        started = time.monotonic()
        scratch = Path(tempfile.mkdtemp(prefix="ratchet-mbpp-", dir=self.work_root))
        try:
            workdir = scratch / "work"
            workdir.mkdir(mode=0o700)
            limits = self.limits
            backstop = max(limits.budget_s, MAX_TASK_BUDGET_S) + limits.grace_s
            job = {**job, "mode": "namespaces" if self.mode == "namespaces" else "fallback",
                   "uid": self._uid(), "workdir": str(workdir), "budget_s": limits.budget_s,
                   "limits": {"memory_mb": limits.memory_mb, "nproc": limits.nproc,
                              "fsize_mb": limits.fsize_mb,
                              "cpu_s": int(backstop) + 1}}
            job_path = scratch / "job.pkl"
            job_path.write_bytes(pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL))
            # Only a backstop: the harness enforces the real (per-task) budget itself.
            deadline = started + backstop + extra_grace_s
            return self._execute(self._argv(job_path), workdir, deadline, started)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)  # the code may have left odd permissions
            if scratch.exists():
                log.warning("could not remove sandbox scratch dir %s", scratch)

    def _execute(self, argv: list[str], workdir: Path, deadline: float,
                 started: float) -> SandboxRun:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self._environment(workdir),
                                cwd=str(workdir), start_new_session=True, close_fds=True)
        out, err, timed_out = bytearray(), bytearray(), False
        try:
            timed_out = not self._pump(proc, out, err, deadline)
            if not timed_out:
                try:
                    proc.wait(timeout=max(0.5, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
        finally:
            self._kill_group(proc)
        result, reached = None, STAGE_MARK in out
        for line in bytes(out).splitlines():
            if line.startswith(RESULT_MARK):
                result = self._parse(line[len(RESULT_MARK):])
        return SandboxRun(result=result, timed_out=timed_out and result is None,
                          returncode=proc.returncode, reached_untrusted=reached,
                          stderr_tail=bytes(err[-4000:]).decode(errors="replace"),
                          wall_s=time.monotonic() - started, mode=self.mode,
                          notes=list((result or {}).get("notes", [])))

    def _pump(self, proc: subprocess.Popen, out: bytearray, err: bytearray,
              deadline: float) -> bool:
        """Read stdout/stderr until both close (True) or the deadline passes (False); keep tails."""
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ, (out, self.limits.output_cap))
        selector.register(proc.stderr, selectors.EVENT_READ, (err, 8000))
        try:
            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                for key, _ in selector.select(timeout=remaining):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    buffer, cap = key.data
                    buffer.extend(chunk)
                    if len(buffer) > cap:
                        del buffer[: len(buffer) - cap]
            return True
        finally:
            selector.close()

    @staticmethod
    def _kill_group(proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the child leads its own session/group
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            log.error("sandbox process %d did not exit after SIGKILL", proc.pid)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()

    @staticmethod
    def _parse(payload: bytes) -> dict | None:
        try:
            value = json.loads(payload.decode(errors="replace"))
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
