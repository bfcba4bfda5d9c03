"""Root-only launcher: give up root before starting bubblewrap; standard library only.

bubblewrap maps the sandbox to the uid that started it, so a grader running as root must not
start it as root (root is exempt from RLIMIT_NPROC and may read any file bound in).
``sandbox.Sandbox`` runs, as root, ``python -I -S -B confine.py UID RUNTIME_PATH... -- bwrap
ARGS...``, which in a private mount namespace of its own (single-threaded, so ``unshare`` works):
1. hides each directory other users may not enter that holds part of the Python runtime (e.g.
   ``/root`` for ``/root/.pyenv``) under an empty tmpfs, re-exposing only the runtime paths
   read-only (no ``~/.aws``);
2. drops every group, switches to ``UID`` (allotted to this grade alone, never a real account)
   and sets no_new_privs;
3. execs bubblewrap, which builds the real sandbox as that uid.
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys

MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
MS_NOSUID, MS_NODEV = 2, 4
CLONE_NEWNS = 0x00020000
PR_SET_NO_NEW_PRIVS = 38
UNIQUE_UID_FLOOR = 1_000_000_000  # uids allotted per grade; never a system account


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _mount(libc, source, target, fstype, flags, data=None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    if libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


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


def _cover(libc, directory: str, keep: list[str]) -> None:
    """Hide ``directory`` under a fresh tmpfs, re-exposing ``keep`` (paths inside it) read-only."""
    handles = [(path, os.open(path, os.O_PATH)) for path in keep]
    try:
        _mount(libc, "tmpfs", directory, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
        for path, handle in handles:
            if os.path.isdir(f"/proc/self/fd/{handle}"):
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                open(path, "a").close()
            _mount(libc, f"/proc/self/fd/{handle}", path, None, MS_BIND | MS_REC)
            _mount(libc, None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
        _mount(libc, None, directory, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    finally:
        for _, handle in handles:
            os.close(handle)


def main(argv: list[str]) -> int:
    split = argv.index("--")
    uid, runtime, command = int(argv[1]), argv[2:split], argv[split + 1:]
    if uid < UNIQUE_UID_FLOOR:
        raise SystemExit(f"refusing uid {uid}: below the per-grade floor {UNIQUE_UID_FLOOR}")
    libc = _libc()
    roots = minimal_roots(runtime)
    closed = minimal_roots([a for a in map(closed_ancestor, roots) if a])
    if closed:
        if libc.unshare(CLONE_NEWNS) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
        _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
        for directory in closed:
            _cover(libc, directory, [r for r in roots if _is_under(r, directory)])
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    try:
        os.execv(command[0], command)
    except OSError as exc:  # the grader shows this in the trace of an infrastructure failure
        raise SystemExit(f"confine.py: cannot run {command[0]}: {exc.strerror}") from None
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv))
