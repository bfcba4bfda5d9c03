"""Crash-safe file writes: the one atomic-write helper of the package.

Contracts:
- ``atomic_write_bytes`` / ``_text`` / ``_json`` write a hidden temp file in the target's folder,
  fsync it, ``os.replace`` it over the target and fsync the folder: after a crash a reader sees
  the old file or the new one, and once the call returns the new file survives a power cut. A
  Python error removes the temp file; a hard crash may leave a ``.<name>.*.tmp`` nothing reads.
- ``atomic_write_with(path, write)`` does the same for a writer that needs a binary handle;
  ``replace=False`` publishes with ``os.link`` and raises ``FileExistsError`` rather than
  replace a file (append-only data). A target that exists and is no regular file (a device
  such as ``/dev/null``, a fifo, a folder, or a link to one) is refused with an ``OSError``
  naming it, never replaced.
- ``cannot_write`` / ``refusing_writes``: the one wording of a write an ``OSError`` refused
  (the CLI's and the sweep's alike); ``may_read`` / ``read_access`` / ``cannot_read``: of a path
  this user may not read, its fix, and the two in words.
- ``read_tail(path, limit)``: a file's last ``limit`` bytes as text (bad bytes replaced), for
  the end of a log too big to read whole.
- ``write_target(path)``: where a write to a user's path lands, through a symbolic link (kept)
  and never replacing it; a loop of links is ``OSError(ELOOP)``.
- ``fsync_dir``, ``disk_full`` / ``disk_full_error`` / ``no_room``, ``unwritable`` and
  ``swap_dir`` (a folder swapped in so a crash leaves a complete one at ``target`` or
  ``<target>.prev``): see their docstrings.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

_NO_HARDLINKS = {errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP}
PREV_SUFFIX = ".prev"


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it wraps) is a full disk or quota: a run must stop there, not
    go on with evidence missing; free space and resume."""
    return disk_full_error(exc) is not None


WRITE_REFUSED = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR)
"""A write refused for good: a read-only mount, no permission, a file where a folder was."""


def disk_full_error(exc: BaseException | None) -> OSError | None:
    """The full disk or quota error ``exc`` is or wraps (``os_error_in``), else None."""
    return os_error_in(exc, (errno.ENOSPC, errno.EDQUOT))


def refused_write_error(exc: BaseException | None) -> OSError | None:
    """The write refused for good (``WRITE_REFUSED``) ``exc`` is or wraps, else None."""
    return os_error_in(exc, WRITE_REFUSED)


def os_error_in(exc: BaseException | None, numbers: tuple[int, ...]) -> OSError | None:
    """The ``OSError`` with an errno of ``numbers`` that ``exc`` is or wraps (its ``__cause__`` /
    ``__context__`` chain, and the ``cause`` an error raised in another process carries, as
    Ray's task errors do: their own ``errno`` is empty), else None."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        exc = todo.pop()
        if exc is None or id(exc) in seen:
            continue
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in numbers:
            return exc
        wrapped = getattr(exc, "cause", None)
        todo += [exc.__context__, exc.__cause__,
                 wrapped if isinstance(wrapped, BaseException) else None]
    return None


def no_room(full: OSError, default: Path) -> tuple[Path, str]:
    """The folder a full disk ``full`` (``disk_full_error``) kept a file out of (``default`` when
    it names none) and ``no room to write in <folder> (<reason>)``, the words every stop on a
    full disk starts with."""
    where = Path(full.filename).parent if full.filename else default
    return where, f"no room to write in {where} ({full.strerror or full})"


def may_read(path: str | Path) -> bool:
    """Whether this user may read ``path`` (a folder: list it), or it is not there at all."""
    mode = os.R_OK | (os.X_OK if os.path.isdir(path) else 0)
    return not os.path.exists(path) or os.access(path, mode)


def read_tail(path: str | Path, limit: int) -> str:
    with Path(path).open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        handle.seek(max(0, handle.tell() - limit))
        return handle.read().decode(errors="replace")


def read_access(path: str | Path) -> str:
    """The fix of a ``path`` this user may not read (``may_read``)."""
    return f"give this user read access (e.g. `chmod -R u+rX {path}`), or run as its owner"


def cannot_read(path: str | Path, exc: OSError) -> str:
    """``cannot read it: <reason>``, and ``; fix: <read_access>`` when this user may not, or
    ``; fix: name a file ...`` when ``path`` is a folder."""
    if isinstance(exc, IsADirectoryError):
        fix = "; fix: name a file, not a folder"
    else:
        fix = "" if may_read(path) else f"; fix: {read_access(path)}"
    return f"cannot read it: {exc.strerror or exc}{fix}"


def cannot_write(what: str, exc: OSError, fix: str = "", target: Any = None) -> str:
    """``cannot write WHAT: <reason> (<its file, else target>); FIX``: what a write refused by
    ``exc`` (a folder that cannot be made, a read-only place, the disk full) is told; with
    neither file nor target the parentheses are left out, with no ``fix`` its clause. A read
    refused on the way (``exc`` names a file or folder this user may not read) is told as
    ``<it>: cannot_read`` instead: no other place to write would help."""
    if isinstance(exc, PermissionError) and exc.filename and not may_read(exc.filename):
        return f"{exc.filename}: {cannot_read(exc.filename, exc)}"
    where = exc.filename or target
    return (f"cannot write {what}: {exc.strerror or exc}{f' ({where})' if where else ''}"
            f"{f'; {fix}' if fix else ''}")


@contextmanager
def refusing_writes(what: str, fix: str, target: Any,
                    error: Callable[[str], Exception]) -> Iterator[None]:
    """An ``OSError`` inside is raised as ``error`` of its ``cannot_write`` line."""
    try:
        yield
    except OSError as exc:
        raise error(cannot_write(what, exc, fix, target)) from exc


def unwritable(folder: str | Path) -> str | None:
    """Why files cannot be created in ``folder`` (or, when it does not exist yet, in its nearest
    existing parent, where it would be made), e.g. ``Read-only file system``; None when they
    can. Tried for real with a temporary file that is gone at once: permission bits say nothing
    on a read-only mount, and nothing to root."""
    here = Path(folder).absolute()
    while not here.exists() and here != here.parent:
        here = here.parent
    if not here.is_dir():
        return f"{here} is not a folder"
    try:
        with tempfile.TemporaryFile(dir=here):
            pass
    except OSError as exc:
        return f"{exc.strerror or exc} ({here})"
    return None


def write_target(path: str | Path) -> Path:
    """Where a write to ``path`` (a user's ``-o`` file or folder, or a file in an ``-o`` folder)
    lands: ``path`` itself, or where the symbolic link(s) at ``path`` lead (made when missing), so
    the link is kept and names the new file; replacing a link by a regular file left what it
    names stale. A loop of links is ``OSError(ELOOP)`` naming ``path``: nothing can be written
    through it."""
    path = Path(path)
    if not path.is_symlink():
        return path
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "a loop of symbolic links, leading nowhere",
                          str(path)) from exc
    return Path(os.path.realpath(path))


def fsync_dir(folder: str | Path) -> None:
    """fsync a folder so the entries just renamed or created in it are durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def run_dir_gone(run_dir: str | Path, not_done: str) -> str:
    """The one wording of a run dir's writer refusing to make it again (a SkillBank or artifact
    service Ray restarted, a bank snapshot): ``not_done`` says what the writer leaves undone."""
    return (f"the run dir {run_dir} is gone (deleted or moved while the run ran): {not_done}, "
            "so nothing makes it again")


def temp_path(path: Path) -> Path:
    """A hidden temp name next to ``path`` (same filesystem, so the rename is atomic)."""
    return path.parent / f".{path.name}.{uuid.uuid4().hex}.tmp"


def atomic_write_with(path: str | Path, write: Callable[[BinaryIO], None], *,
                      replace: bool = True, root: Path | None = None) -> Path:
    """Create ``path`` from what ``write(handle)`` writes, atomically and durably (module doc).
    Missing folders on the way are made; with ``root`` (a run dir) only those below it, one at a
    time, so a ``root`` deleted or moved meanwhile is never made again: ``FileNotFoundError``."""
    path = Path(path)
    if path.exists() and not path.is_file():
        # The rename would put a file where the device or folder was (-o /dev/null, run as
        # root, would leave every program a regular file at /dev/null).
        raise OSError(errno.EINVAL, "not a regular file: a write would replace it", str(path))
    if not path.parent.is_dir():
        below = () if root is None else path.parent.relative_to(root).parts
        for n in range(1, len(below) + 1):  # one level at a time: none makes ``root`` again
            folder = Path(root, *below[:n])
            if folder.exists() and not folder.is_dir():  # a file where the folder should be
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder))
            folder.mkdir(exist_ok=True)
        if root is None:
            path.parent.mkdir(parents=True, exist_ok=True)
        fsync_dir(path.parent.parent)  # the new folder's own entry must survive a power cut too
    temp = temp_path(path)
    try:
        with open(temp, "xb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(temp, path)
        else:
            _link_new(temp, path)
    finally:
        temp.unlink(missing_ok=True)  # only left after an error (or after the link above)
    fsync_dir(path.parent)
    return path


def _link_new(temp: Path, final: Path) -> None:
    try:
        os.link(temp, final)  # atomic, and refuses to replace an existing file
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            raise FileExistsError(f"refusing to overwrite {final}") from exc
        if exc.errno not in _NO_HARDLINKS:
            raise
        if final.exists():
            raise FileExistsError(f"refusing to overwrite {final}") from exc
        os.rename(temp, final)


def atomic_write_bytes(path: str | Path, data: bytes, root: Path | None = None) -> Path:
    return atomic_write_with(path, lambda handle: handle.write(data), root=root)


def atomic_write_text(path: str | Path, text: str, root: Path | None = None) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"), root)


def atomic_write_json(path: str | Path, data: Any, root: Path | None = None) -> Path:
    """JSON with sorted keys and a trailing newline (values it cannot encode become ``str``)."""
    text = json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"
    return atomic_write_text(path, text, root)


def swap_dir(new: Path, target: Path) -> None:
    """Put the complete folder ``new`` at ``target`` (same parent), crash-safe at every step:
    rename ``target`` to ``target.prev``, ``new`` to ``target``, delete ``target.prev``. After a
    crash one complete copy exists, at ``target`` or (between the renames) at ``target.prev``,
    which the next call renames back first; a stale ``.prev`` beside a ``target`` is removed."""
    prev = target.with_name(target.name + PREV_SUFFIX)
    if not target.exists() and prev.is_dir():  # a swap cut between its renames
        os.rename(prev, target)
        fsync_dir(target.parent)
    if prev.exists():
        shutil.rmtree(prev)
    if target.exists():
        os.rename(target, prev)
        fsync_dir(target.parent)
    os.rename(new, target)
    fsync_dir(target.parent)
    if prev.exists():
        shutil.rmtree(prev)


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` (relative path -> bytes) under a new folder ``root``, each fsynced, then
    every folder fsynced: the tree is durable once this returns."""
    folders = {root}
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        folders.add(path.parent)
        with open(path, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        fsync_dir(folder)
