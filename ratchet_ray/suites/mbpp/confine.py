"""OS-level confinement used inside the sandbox process (``harness.py``); standard library only.

Everything here runs in the sandbox's privileged first process (root in fresh namespaces, or the
grader's own user in the weaker modes) BEFORE any untrusted code exists:

- ``private_filesystem`` (namespaces mode): every mount read-only in this mount namespace; fresh
  tmpfs over the world-writable scratch dirs (/tmp, /var/tmp, /dev/shm, /run/lock); directories that
  others may not enter (e.g. /root, 0700) replaced by an empty tmpfs holding only read-only binds of
  the Python runtime, so the unprivileged code can import the standard library and nothing else
  there (no ~/.aws, no ~/.cache) is visible.
- ``apply_rlimits``: address space, CPU seconds, file size, processes, open files, no core dumps.
- ``confine_forks``: a fork hook; each process forked afterwards (evalplus's checker, the diagnosis
  probe, whatever they fork) switches to the sandbox uid, sets no_new_privs, and gets /dev/null as
  stdin/stdout/stderr, so only the privileged process can write the result the grader reads.
- ``sweep``: SIGKILL every sandboxed process (the pid namespace's init kills all others; in uid
  mode a probe running as the unique sandbox uid kills all processes of that uid), then reap.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import stat
import time

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS = 38
SCRATCH_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
UNIQUE_UID_FLOOR = 1_000_000_000  # uids the grader allots per grade; never a system account
_SKIP_REMOUNT = ("/proc", "/sys", "/dev")
_KEEP_FLAGS = MS_NOSUID | MS_NODEV | MS_NOEXEC
_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    if _libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _remount_readonly(target: str) -> None:
    kept = os.statvfs(target).f_flag & _KEEP_FLAGS  # ST_NOSUID/NODEV/NOEXEC share MS_ bits
    _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)


def _mount_points() -> list[str]:
    points = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            point = line.split()[4].encode().decode("unicode_escape")  # \040 -> space
            points.append(point)
    return points


def _is_under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def minimal_roots(paths: list[str]) -> list[str]:
    """Existing real paths, without those nested in another one of the list."""
    real = sorted({os.path.realpath(p) for p in paths if p and os.path.exists(p)})
    return [p for p in real if not any(q != p and _is_under(p, q) for q in real)]


def closed_ancestor(path: str) -> str | None:
    """The highest ancestor directory of ``path`` that other users may not traverse."""
    parts = path.strip("/").split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        ancestor = "/" + "/".join(parts[:depth])
        if not os.stat(ancestor).st_mode & stat.S_IXOTH:
            return ancestor
    return None


def _cover(directory: str, mode: int, keep: list[str]) -> None:
    """Hide ``directory`` under a fresh tmpfs, re-exposing ``keep`` (paths inside it) read-only."""
    handles = [(path, os.open(path, os.O_PATH)) for path in keep]
    try:
        _mount("tmpfs", directory, "tmpfs", MS_NOSUID | MS_NODEV, f"size=64m,mode={mode:o}")
        for path, handle in handles:
            target = path  # same absolute path, now inside the new tmpfs
            if os.path.isdir(f"/proc/self/fd/{handle}"):
                os.makedirs(target, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                open(target, "a").close()
            _mount(f"/proc/self/fd/{handle}", target, None, MS_BIND | MS_REC)
            _remount_readonly(target)
    finally:
        for _, handle in handles:
            os.close(handle)


def private_filesystem(runtime_paths: list[str], notes: list[str]) -> None:
    """Namespaces mode only (we are root in a private mount namespace); see the module docstring."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    failed = 0
    for point in _mount_points():
        if any(_is_under(point, skip) for skip in _SKIP_REMOUNT):
            continue
        try:
            _remount_readonly(point)
        except OSError:
            failed += 1
    if failed:
        notes.append(f"{failed} mount(s) could not be made read-only")
    roots = minimal_roots(runtime_paths)
    for scratch in SCRATCH_DIRS:
        if os.path.isdir(scratch):
            _cover(scratch, 0o1777, [r for r in roots if _is_under(r, scratch)])
    closed = sorted({a for a in map(closed_ancestor, roots) if a})
    for directory in minimal_roots(closed):
        _cover(directory, 0o755, [r for r in roots if _is_under(r, directory)])


def runtime_reachable(runtime_paths: list[str]) -> bool:
    """Whether an unprivileged uid can reach every runtime path (uid mode without namespaces)."""
    return not any(closed_ancestor(p) for p in minimal_roots(runtime_paths))


def _user_process_count(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += os.stat(f"/proc/{entry}").st_uid == uid
            except OSError:
                continue
    return count


def _vm_size_bytes() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def apply_rlimits(limits: dict, dropped_uid: int | None) -> None:
    """Limits inherited by every later fork. The address-space budget is on top of what this
    process already maps (the job and expected outputs), so big test data do not eat into it."""
    mib = 1024 * 1024
    address_space = _vm_size_bytes() + int(limits["memory_mb"]) * mib
    cpu = int(limits["cpu_s"])
    if dropped_uid is not None:
        nproc = int(limits["nproc"])  # a fresh uid: only the sandbox's own processes count
    else:
        nproc = _user_process_count(os.getuid()) + int(limits["nproc"])
    for which, value in ((resource.RLIMIT_AS, address_space), (resource.RLIMIT_FSIZE,
                         int(limits["fsize_mb"]) * mib), (resource.RLIMIT_NPROC, nproc),
                         (resource.RLIMIT_NOFILE, 256), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(which, (value, value))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))  # SIGXCPU first, then SIGKILL


def confine_forks(uid: int | None) -> None:
    """Install the fork hook described in the module docstring (fails closed: a child that
    cannot drop privileges exits at once)."""

    def after_fork_in_child() -> None:
        try:
            if uid is not None and os.getuid() != uid:  # nested forks are already confined
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.close(null)
        except BaseException:
            os._exit(71)

    os.register_at_fork(after_in_child=after_fork_in_child)


def sweep(namespaces: bool, uid: int | None) -> None:
    """Kill every sandboxed process and reap what we can (see the module docstring)."""
    if namespaces and os.getpid() == 1:
        try:
            os.kill(-1, signal.SIGKILL)  # scoped to our pid namespace; init itself is exempt
        except ProcessLookupError:
            pass  # nothing left to kill
    elif uid is not None and uid >= UNIQUE_UID_FLOOR:
        killer = os.fork()  # the fork hook makes it run as the sandbox uid
        if killer == 0:
            for _ in range(3):  # forks racing the first pass are caught by the next
                try:
                    os.kill(-1, signal.SIGKILL)
                except OSError:
                    break
            os._exit(0)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.02)
