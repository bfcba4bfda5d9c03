"""One writer per run dir (or sweep folder): an exclusive lock on ``<folder>/.lock``.

Contracts:
- ``RunLock(folder, purpose).acquire()`` takes an exclusive ``flock`` on ``<folder>/.lock``
  without waiting, then writes the holder (pid, host, start time, purpose) into it. The kernel
  drops the lock when the holder dies, however (SIGKILL included), so a crashed run needs no
  cleanup; the next writer overwrites the stale text. ``flock`` works locally and, on Linux,
  on NFS; the descriptor is close-on-exec, so children never inherit it.
- A second writer (this process or another, on any host sharing the filesystem) gets
  ``RunDirBusy`` naming the holder and what to do; it never waits. What works meanwhile is the
  lock's ``meanwhile`` (default: a run dir's read-only commands; a sweep folder names its own).
- ``moved()`` tells a held folder deleted, moved or replaced since (None while it is there).
- ``release()`` is idempotent; ``RunLock`` is a context manager. Readers never lock:
  ``holder(folder)`` reports the current holder (or None).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

LOCK_FILE = ".lock"
RUN_MEANWHILE = ("stop it (kill {pid} on that host) and run this again; read-only commands "
                 "(ratchet query, skill list, audit) work meanwhile")
"""What a second writer of a run dir is told to do: ``{pid}`` is the holder's."""


class RunDirBusy(ValueError):
    """Another process holds the folder's writer lock; the message names it and the fix."""


def _describe(folder: Path, info: dict[str, Any] | None) -> str:
    if not info:
        return f"{folder} is locked by another writer (holder unknown: {folder / LOCK_FILE} is empty)"
    since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(info.get("since", 0)))
    return (f"{folder} is in use by pid {info.get('pid')} on host {info.get('host')} "
            f"({info.get('purpose', '?')}, since {since})")


def _read_info(path: Path) -> dict[str, Any] | None:
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):  # no file, or torn or foreign text: the holder is unknown
        return None
    return info if isinstance(info, dict) else None


class RunLock:
    """Exclusive writer lock of one folder (see module contracts)."""

    def __init__(self, folder: str | Path, purpose: str = "", meanwhile: str = RUN_MEANWHILE):
        """``meanwhile``: how to stop the holder and what works while it holds the folder, as
        told to a second writer (``{pid}`` is replaced with the holder's pid)."""
        self.folder = Path(folder)
        self.meanwhile = meanwhile
        self.path = self.folder / LOCK_FILE
        self.purpose = purpose or " ".join(sys.argv[:3])
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> "RunLock":
        if self._fd is not None:
            return self
        if not self.folder.is_dir():
            raise FileNotFoundError(f"{self.folder}: no such folder to lock")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            info = _read_info(self.path)
            raise RunDirBusy(
                f"{_describe(self.folder, info)}: only one writer at a time (two would record "
                "the same work twice). Wait for it to finish, or "
                + self.meanwhile.format(pid=info.get("pid") if info else "<pid>")) from None
        except OSError:
            os.close(fd)
            raise
        info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time(),
                "purpose": self.purpose}
        data = (json.dumps(info) + "\n").encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        os.fsync(fd)
        self._fd = fd
        return self

    def moved(self) -> str | None:
        """Where the locked folder is now when it is no longer at ``folder`` (deleted, moved,
        or replaced by a link or a copy while held): its new path (Linux tells it, following
        renames), ``""`` when deleted or unknown; None while it is still there (or not held)."""
        if self._fd is None:
            return None
        held = os.fstat(self._fd)
        if self.path.exists() and os.path.samestat(held, os.stat(self.path)):
            return None
        try:  # Linux names the file where it is now, following renames
            now = os.readlink(f"/proc/self/fd/{self._fd}")
        except OSError:
            now = ""
        return str(Path(now).parent) if held.st_nlink and now.startswith("/") else ""

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)  # an empty file says "nobody" to a reader racing the unlock
        finally:
            os.close(fd)  # closing the only descriptor drops the flock

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def holder(folder: str | Path) -> dict[str, Any] | None:
    """The live holder of ``folder``'s lock (pid, host, since, purpose), or None when free."""
    path = Path(folder) / LOCK_FILE
    if not path.is_file():
        return None
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_info(path) or {}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
