"""Start the sandboxed runner (``runner.py``) for one grade and read its frames, whatever it does
(the isolation and why: docs/grading.md, "The sandbox").

Modes, probed once per ``Sandbox``:
- ``bwrap`` (bubblewrap >= 0.8 and unprivileged user namespaces, no root needed; ``bwrap_argv``
  is the whole isolation): fresh namespaces (no network), no capabilities, an empty read-only
  root with read-only binds of /usr, the Python runtime, the venv's site-packages and this
  package only; writable only size-bounded private /tmp and /dev/shm; the environment rebuilt
  from an allowlist. As root, the runner starts through ``confine.py`` under a per-grade uid.
- ``weak`` (only with ``allow_weak=True``, config ``mbpp.allow_weak_sandbox``; a warning on
  every start): the runner as the grader's own user with rlimits and a scrubbed environment.
- ``refused``: nothing is run; ``start`` raises ``SandboxUnavailable`` naming the fix.

Limits in every mode (``runner.apply_limits``): ``SandboxLimits``' address space, extra tasks
(per user namespace in the bwrap mode, so per grade), CPU seconds, file size, open files; the
grader SIGKILLs the whole sandbox at the end of every grade.
"""

from __future__ import annotations

import logging
import os
import pickle
import secrets
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ratchet_ray.suites.mbpp.channel import SandboxProcess, reap_sandbox
from ratchet_ray.suites.mbpp.confine import minimal_roots
from ratchet_ray.suites.mbpp.verdict import (EVALPLUS_SPLIT_CAP_S, GT_TIME_LIMIT_FACTOR,
                                             MIN_TIME_LIMIT_S)

log = logging.getLogger(__name__)
PACKAGE_DIR = Path(__file__).resolve().parent
CONFINE_SCRIPT = PACKAGE_DIR / "confine.py"
SANDBOX_PACKAGE = "/ratchet"  # where PACKAGE_DIR appears inside the sandbox
UNIQUE_UID_FLOOR = 1_000_000_000  # same floor as confine.py; never a real account
UNIQUE_UID_SPAN = 100_000_000
BWRAP_FIX = ("install bubblewrap >= 0.8 (`sudo apt-get install -y bubblewrap`; `make run`, "
             "`make test` and cluster.yaml do this; older releases: from a checkout `sudo bash "
             ".ci/bwrap_setup.sh` builds it) and allow unprivileged user namespaces (sysctl "
             "user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1 where it exists), "
             "or set mbpp.allow_weak_sandbox=true to accept rlimits-only isolation")
"""The fix for a refused sandbox: in the refusal and as ``ratchet doctor``'s hint."""
_SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class SandboxLimits:
    budget_s: float = 20.0
    """Floor of the wall-clock budget of one grade; evalplus's per-split caps may allow more."""
    memory_mb: int = 1024
    """Address space each sandboxed process may add on top of the interpreter and inputs."""
    nproc: int = 4
    """Tasks (processes or threads) the sandbox may add beyond the runner's own."""
    fsize_mb: int = 16
    """Largest file the code may write; also the size of the private /tmp and /dev/shm."""
    grace_s: float = 10.0
    """Extra wall-clock time for the first split on top of evalplus's cap: the runner's start-up
    after its start frame (loading the code's module, evalplus's guard)."""
    startup_s: float = 60.0
    """Wall-clock time the sandbox may take to send its start frame (bubblewrap, the interpreter,
    trusted imports; not the code's budget). Generous: a loaded machine starts interpreters
    slowly. Past it: an infrastructure failure (``sandbox_setup_timeout``)."""
    split_cap_s: float = EVALPLUS_SPLIT_CAP_S
    """evalplus's cap on one split's process (``mbpp.evalplus_timeout_per_task_s``; see
    ``verdict.split_timeout``)."""
    min_time_limit_s: float = MIN_TIME_LIMIT_S
    """Floor of one test's limit (evalplus's ``--min-time-limit``; ``mbpp.min_time_limit_s``)."""
    gt_time_limit_factor: float = GT_TIME_LIMIT_FACTOR
    """evalplus's ``--gt-time-limit-factor`` (``mbpp.gt_time_limit_factor``)."""
    io_slack_s: float = 1.0
    """Per test on top of evalplus's limit (which the runner enforces on the call): encoding
    and sending the output."""
    max_frame_mb: int = 512
    """Largest encoded output of one test the grader accepts."""


class SandboxUnavailable(RuntimeError):
    """No safe way to run untrusted code here; the message names what is missing and the fix."""


def _runtime_paths() -> list[str]:
    """What the runner's interpreter needs: its prefix, plus the venv's site-packages."""
    paths = [sys.base_prefix, sys.base_exec_prefix, sysconfig.get_paths()["purelib"],
             sysconfig.get_paths()["platlib"], os.path.dirname(os.path.realpath(sys.executable))]
    return sorted({os.path.realpath(p) for p in paths if p and os.path.isdir(p)})


def bwrap_argv(bwrap: str, limits: SandboxLimits) -> list[str]:
    size = str(limits.fsize_mb * 1024 * 1024)
    argv = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
            "--new-session", "--clearenv", "--hostname", "sandbox"]
    for name, value in _environment("/tmp").items():
        argv += ["--setenv", name, value]
    # scratch first: a runtime that lives under /tmp is then bound on top of it, not hidden
    argv += ["--size", size, "--tmpfs", "/tmp", "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    argv += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    for path in minimal_roots(_runtime_paths()):
        if not path.startswith("/usr/"):
            argv += ["--ro-bind", path, path]
    argv += ["--ro-bind", str(PACKAGE_DIR), SANDBOX_PACKAGE,
             "--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/dev/shm",
             "--remount-ro", "/dev", "--chdir", "/tmp",
             "--remount-ro", "/", "--"]
    return argv


def _environment(home: str) -> dict[str, str]:
    """Built from scratch: nothing of the grader's environment (credentials!) is copied."""
    return {"PATH": _SAFE_PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": home,
            "TMPDIR": home, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1"}


def probe_bwrap(limits: SandboxLimits) -> tuple[bool, str]:
    """Whether the strong mode works here: run the interpreter inside the full sandbox once."""
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return False, "bubblewrap (bwrap) is not installed"
    help_text = subprocess.run([bwrap, "--help"], capture_output=True, text=True,
                               check=False).stdout
    missing = [flag for flag in ("--disable-userns", "--size", "--die-with-parent")
               if flag not in help_text]
    if missing:
        return False, f"{bwrap} is too old (no {', '.join(missing)})"
    _become_subreaper()
    info_read, info_write = os.pipe()
    probe = [bwrap, "--info-fd", str(info_write), *bwrap_argv(bwrap, limits)[1:],
             _interpreter(), "-I", "-S", "-B", "-c", "pass"]
    try:
        done = subprocess.run(_as_grade_user(probe), capture_output=True, timeout=30,
                              check=False, env={"PATH": _SAFE_PATH}, pass_fds=(info_write,))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap failed to start: {exc}"
    finally:
        os.close(info_write)
        reap_sandbox(info_read)
    if done.returncode != 0:
        return False, f"bwrap refused: {done.stderr.decode(errors='replace').strip()[:300]}"
    return True, "ok"


def _interpreter() -> str:
    return os.path.realpath(sys.executable)


def _as_grade_user(argv: list[str]) -> list[str]:
    """As root: through confine.py under a fresh per-grade uid; otherwise unchanged."""
    if os.geteuid() != 0:
        return argv
    uid = UNIQUE_UID_FLOOR + secrets.randbelow(UNIQUE_UID_SPAN)
    return [_interpreter(), "-I", "-S", "-B", str(CONFINE_SCRIPT), str(uid), *_runtime_paths(),
            str(PACKAGE_DIR), "--", *argv]


def _become_subreaper() -> None:
    """Orphans of this process (the sandbox's init once bwrap is killed) are re-parented to it,
    so ``close`` reaps them itself instead of leaving zombies to a pid 1 that may not reap."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


class Sandbox:
    """One per grader; ``start(job)`` may be called repeatedly, from one thread at a time."""

    def __init__(self, limits: SandboxLimits | None = None, allow_weak: bool = False):
        _become_subreaper()
        self.limits = limits or SandboxLimits()
        self.refusal = ""
        strong, why = probe_bwrap(self.limits)
        if strong:
            self.mode = "bwrap"
        elif allow_weak:
            self.mode = "weak"
        else:
            self.mode = "refused"
            self.refusal = f"no strong sandbox for generated code: {why}; fix: {BWRAP_FIX}"
            log.error("MBPP+ grading refuses to run generated code: %s", self.refusal)
        user = "root -> per-grade uid" if os.geteuid() == 0 else f"uid {os.geteuid()}"
        self.description = f"{self.mode} ({user}; bwrap: {why})"
        if self.mode == "weak":
            log.warning("MBPP+ sandbox is WEAK by explicit opt-in (mbpp.allow_weak_sandbox): "
                        "%s; generated code runs as this user with rlimits only", why)

    def start(self, job: dict) -> "SandboxProcess":
        """Start the runner on ``job`` (see runner.py for its keys; limits are added here)."""
        if self.refusal:
            raise SandboxUnavailable(self.refusal)
        limits = self.limits
        strong = self.mode == "bwrap"
        job = {**job, "sweep": strong, "limits": {
            "memory_mb": limits.memory_mb, "nproc": limits.nproc, "fsize_mb": limits.fsize_mb,
            "cpu_s": int(job.pop("cpu_s")) + 1, "count_tasks": strong}}
        read_end, write_end = os.pipe()
        info_read, info_write = os.pipe()  # bwrap reports the pid of the sandbox's init here
        package = SANDBOX_PACKAGE if strong else str(PACKAGE_DIR)
        runner = [_interpreter(), "-I", "-S", "-B", f"{package}/runner.py", str(write_end)]
        bwrap = [*bwrap_argv(shutil.which("bwrap") or "bwrap", limits)]
        bwrap[1:1] = ["--info-fd", str(info_write)]
        argv = _as_grade_user([*bwrap, *runner] if strong else runner)
        if not strong:
            log.warning("MBPP+ grade in the WEAK sandbox (explicit opt-in)")
        # the weak mode has no private /tmp: a fresh directory stands in for it
        scratch = None if strong else tempfile.mkdtemp(prefix="ratchet-mbpp-weak-")
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, env=_environment(scratch or "/tmp"),
                                    cwd=scratch or "/", start_new_session=True,
                                    pass_fds=(write_end, info_write))
        except OSError:
            if scratch:
                shutil.rmtree(scratch, ignore_errors=True)
            raise
        finally:
            os.close(write_end)
            os.close(info_write)
        return SandboxProcess(proc, read_end, pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL),
                              limits.max_frame_mb * 1024 * 1024, self.mode, info_read, scratch)
