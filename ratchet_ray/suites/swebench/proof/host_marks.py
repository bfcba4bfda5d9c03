"""Host state a session could leave for the next one, cleared before each session where the
grader can (why, and the timings: docs/grading.md, "No mark survives between sessions"): the
page cache over the image's read-only layers (and Docker's init binary), which a process can
evict and time page by page, and the host's dentry and inode caches, which name lookups fill.
No call drops the dentries of one folder, so the host's unused ones are dropped
(``/proc/sys/vm/drop_caches``, 2). Sessions that overlap in time can still signal live; the
order bounds what that gains (``order``).

Contracts:
- ``PageCacheEviction(client).evict(image)`` -> ``Evicted``: files evicted and seconds, or why
  none could be (``layer_dirs`` empty: another storage driver than overlay2; layer folders not
  on this host or not readable). An image's files are listed once per process.
- ``drop_dentries(path=DROP_CACHES)`` -> ``Dropped``: seconds, or why not (not root, or
  ``/proc/sys`` read-only).
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Evicted:
    files: int
    seconds: float
    reason: str = ""
    """Why nothing was evicted; empty when it was."""

    def describe(self) -> str:
        if self.reason:
            return f"page cache NOT cleared before the session: {self.reason}"
        return (f"page cache of the image's {self.files} layer files cleared before the session "
                f"in {self.seconds:.2f}s")


DROP_CACHES = "/proc/sys/vm/drop_caches"


@dataclass(frozen=True)
class Dropped:
    seconds: float
    reason: str = ""
    """Why nothing was dropped; empty when the caches were."""

    def describe(self) -> str:
        if self.reason:
            return f"dentry and inode caches NOT dropped before the session: {self.reason}"
        return f"host's dentry and inode caches dropped before the session in {self.seconds:.2f}s"


def drop_dentries(path: str = DROP_CACHES) -> Dropped:
    """Module contract. ``2`` frees reclaimable slab objects only: the page cache is left to
    ``PageCacheEviction``, which touches the image's files alone."""
    started = time.monotonic()
    try:
        with open(path, "w") as control:
            control.write("2\n")
    except OSError as exc:
        return Dropped(time.monotonic() - started,
                       f"cannot write {path} ({exc.strerror or exc}): the grader must run as root "
                       "on the node, outside a container, or set swebench.clear_dentry_cache=false")
    return Dropped(time.monotonic() - started)


def layer_dirs(image_attrs: dict[str, Any]) -> list[str]:
    """overlay2's ``UpperDir`` and every ``LowerDir`` of the image; empty for another driver."""
    driver = image_attrs.get("GraphDriver") or {}
    if driver.get("Name") not in (None, "overlay2", "overlay"):
        return []
    data = driver.get("Data") or {}
    lower = [d for d in (data.get("LowerDir") or "").split(":") if d]
    return [d for d in (data.get("UpperDir"), *lower) if d]


def _evict(path: str) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False  # a symlink, a socket, a file root cannot open
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return True
    finally:
        os.close(fd)


class PageCacheEviction:
    """Module contract."""

    def __init__(self, client: Any):
        self.client = client
        self._lock = threading.Lock()
        self._listed: dict[str, list[str] | str] = {}

    def _list(self, image: str) -> list[str] | str:
        attrs = self.client.images.get(image).attrs
        key = attrs.get("Id") or image
        with self._lock:
            if key in self._listed:
                return self._listed[key]
        dirs = layer_dirs(attrs)
        if not dirs:
            listed: list[str] | str = (f"the image's storage driver "
                                       f"{(attrs.get('GraphDriver') or {}).get('Name')!r} is not "
                                       "overlay2, whose layer folders the grader reads")
        elif not all(os.path.isdir(d) and os.access(d, os.R_OK | os.X_OK) for d in dirs):
            listed = (f"the image's layer folders ({dirs[0]}, ...) are not readable on this host "
                      "(a remote Docker daemon, or a grader that is not root)")
        else:
            listed = [os.path.join(folder, name) for d in dirs
                      for folder, _, names in os.walk(d) for name in names]
            init = self._init_binary()
            listed += [init] if init else []
        with self._lock:
            self._listed[key] = listed
        return listed

    def _init_binary(self) -> str | None:
        try:
            name = self.client.info().get("InitBinary") or "docker-init"
        except Exception:  # noqa: BLE001 - the layers are what matters; the init binary is extra
            name = "docker-init"
        path = name if os.path.isabs(name) else shutil.which(name)
        return os.path.realpath(path) if path else None  # the file the daemon bind-mounts

    def evict(self, image: str) -> Evicted:
        started = time.monotonic()
        listed = self._list(image)
        if isinstance(listed, str):
            return Evicted(0, time.monotonic() - started, listed)
        files = sum(_evict(path) for path in listed)
        return Evicted(files, time.monotonic() - started)
