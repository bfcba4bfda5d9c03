"""Run artifacts (grader logs and reports, agent trajectories, solver-cache entries, the sim
world): files an actor produces for a run, kept in the run dir or in a storage URI.

Contracts:
- ``Artifacts`` is what an actor is given instead of a folder: ``put(key, data)`` (atomic: a
  reader sees the old object, the new one or none), ``put_many(items)`` (in order, so a marker
  put last lands last; one round trip where the store is remote), ``get(key)`` (None when
  absent), ``keys(prefix)`` (sorted), ``delete(key)`` (True if it existed), ``locate(key)`` (a
  path or URI a person can open) and ``sub(prefix)`` (the store seen from a folder of it). Keys
  are relative POSIX paths; ``..``, absolute and empty keys raise ``ValueError``.
- ``ArtifactStore(location)`` implements it over ``pyarrow.fs``: a local folder (the default: the
  run dir; a put is a temp file, fsync and rename) or any URI ``pyarrow.fs.FileSystem.from_uri``
  knows (``s3://bucket/prefix``, ``file:///abs/path``; objects are published whole on close).
- ``run_artifacts(run_dir, uri)`` is one run's store: ``run_dir`` itself, or
  ``<uri>/<run dir name>``. ``as_artifacts(x)`` turns a folder or URI into an ``ArtifactStore``
  and passes an ``Artifacts`` through.
- Nothing here imports Ray: ``actors/artifacts.py`` serves a head-local store to actors on other
  nodes through the same interface.
"""

from __future__ import annotations

import json
import posixpath
from pathlib import Path, PurePosixPath
from typing import Any

from ratchet_ray.storage.fsutil import atomic_write_bytes


class ArtifactError(RuntimeError):
    """The artifact store cannot be opened or written; the message names the location."""


def check_key(key: str) -> str:
    """``key`` normalised (no leading/trailing '/'); raises ``ValueError`` for a key that could
    leave the store (absolute, '..', empty)."""
    clean = key.strip("/")
    parts = PurePosixPath(clean).parts
    if not clean or key.startswith("/") or ".." in parts or "\\" in key:
        raise ValueError(f"artifact key {key!r}: use a relative path without '..' "
                         "(e.g. logs/swebench/<instance>/report.json)")
    return "/".join(parts)


def join_key(prefix: str, key: str) -> str:
    return check_key(f"{prefix.strip('/')}/{key}" if prefix.strip("/") else key)


class Artifacts:
    """The interface (see module contracts); subclasses implement the five primitives."""

    def put(self, key: str, data: bytes) -> None:
        raise NotImplementedError

    def put_many(self, items: list[tuple[str, bytes]]) -> None:
        """``put`` each ``(key, data)`` of ``items``, in order."""
        for key, data in items:
            self.put(key, data)

    def get(self, key: str) -> bytes | None:
        raise NotImplementedError

    def keys(self, prefix: str = "") -> list[str]:
        raise NotImplementedError

    def delete(self, key: str) -> bool:
        raise NotImplementedError

    def locate(self, key: str = "") -> str:
        raise NotImplementedError

    def sub(self, prefix: str) -> "Artifacts":
        return PrefixedArtifacts(self, check_key(prefix))

    def put_text(self, key: str, text: str) -> None:
        self.put(key, text.encode("utf-8"))

    def get_text(self, key: str) -> str | None:
        data = self.get(key)
        return None if data is None else data.decode("utf-8", errors="replace")

    def put_json(self, key: str, data: Any, indent: int | None = 1) -> None:
        self.put_text(key, json.dumps(data, indent=indent))

    def get_json(self, key: str) -> Any:
        """The parsed JSON at ``key``; None when absent or not JSON (a torn or damaged object
        reads as absent, so the caller recomputes it)."""
        text = self.get_text(key)
        if text is None:
            return None
        try:
            return json.loads(text)
        except ValueError:
            return None


class PrefixedArtifacts(Artifacts):
    """``base`` seen from its folder ``prefix`` (what ``Artifacts.sub`` returns)."""

    def __init__(self, base: Artifacts, prefix: str):
        self.base, self.prefix = base, prefix

    def put(self, key: str, data: bytes) -> None:
        self.base.put(join_key(self.prefix, key), data)

    def put_many(self, items: list[tuple[str, bytes]]) -> None:
        self.base.put_many([(join_key(self.prefix, key), data) for key, data in items])

    def get(self, key: str) -> bytes | None:
        return self.base.get(join_key(self.prefix, key))

    def keys(self, prefix: str = "") -> list[str]:
        cut = len(self.prefix) + 1
        return [k[cut:] for k in self.base.keys(join_key(self.prefix, prefix) if prefix
                                                 else self.prefix)]

    def delete(self, key: str) -> bool:
        return self.base.delete(join_key(self.prefix, key))

    def locate(self, key: str = "") -> str:
        return self.base.locate(join_key(self.prefix, key) if key else self.prefix)


OBJECT_STORES = ("s3", "gcs")
"""``pyarrow.fs`` filesystem types whose objects need no parent folders."""


def _is_uri(location: str) -> bool:
    return "://" in location


class ArtifactStore(Artifacts):
    """Artifacts in a local folder or behind a ``pyarrow.fs`` URI (see module contracts).
    Pickles as its location: the filesystem is opened again where it is unpickled."""

    def __init__(self, location: str | Path):
        text = str(location)
        if not text:
            raise ValueError("ArtifactStore: empty location; give a folder or a URI such as "
                             "s3://bucket/prefix")
        self.location = text if _is_uri(text) else str(Path(text).resolve())
        # A folder that exists (a run dir) is never made again by a put once deleted or moved.
        self._root = Path(self.location) if Path(self.location).is_dir() else None
        self._fs: Any = None
        self._base = ""

    def __getstate__(self) -> dict:
        return {"location": self.location}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["location"])

    def _open(self) -> tuple[Any, str]:
        if self._fs is None:
            import pyarrow.fs as pafs

            if not _is_uri(self.location):
                self._fs, self._base = pafs.LocalFileSystem(), self.location
            else:
                try:
                    self._fs, self._base = pafs.FileSystem.from_uri(self.location)
                except (ValueError, OSError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                    raise ArtifactError(
                        f"cannot open the artifact store {self.location!r}: {exc}; set "
                        "infra.artifact_uri to a URI pyarrow.fs knows (s3://bucket/prefix, "
                        "gs://..., file:///abs/path) or leave it empty for the run dir") from exc
                self._base = self._base.rstrip("/")
        return self._fs, self._base

    @property
    def local(self) -> bool:
        """Whether the store is a folder of this machine's filesystem."""
        import pyarrow.fs as pafs

        return isinstance(self._open()[0], pafs.LocalFileSystem)

    def _path(self, key: str) -> str:
        return posixpath.join(self._open()[1], check_key(key))

    def put(self, key: str, data: bytes) -> None:
        fs, _ = self._open()
        path = self._path(key)
        if self.local:
            atomic_write_bytes(path, data, self._root)
            return
        parent = posixpath.dirname(path)
        if parent and fs.type_name not in OBJECT_STORES:
            # Object stores have no folders: arrow's create_dir would write an empty marker
            # object per level, left behind when the last object under it is deleted.
            fs.create_dir(parent, recursive=True)
        with fs.open_output_stream(path) as handle:  # the object appears whole on close
            handle.write(data)

    def get(self, key: str) -> bytes | None:
        import pyarrow.fs as pafs

        fs, _ = self._open()
        path = self._path(key)
        try:
            with fs.open_input_stream(path) as handle:
                return handle.read()
        except OSError:
            # Absent (object stores raise a plain OSError for that): a miss; else a real fault.
            if fs.get_file_info(path).type != pafs.FileType.File:
                return None
            raise

    def keys(self, prefix: str = "") -> list[str]:
        import pyarrow.fs as pafs

        fs, base = self._open()
        root = posixpath.join(base, check_key(prefix)) if prefix else base
        selector = pafs.FileSelector(root, recursive=True, allow_not_found=True)
        try:
            infos = fs.get_file_info(selector)
        except NotADirectoryError:
            return []
        cut = len(base) + 1
        return sorted(i.path[cut:] for i in infos if i.type == pafs.FileType.File
                      and not posixpath.basename(i.path).startswith("."))  # temp files

    def delete(self, key: str) -> bool:
        import pyarrow.fs as pafs

        fs, _ = self._open()
        path = self._path(key)
        if fs.get_file_info(path).type != pafs.FileType.File:
            return False
        fs.delete_file(path)
        return True

    def locate(self, key: str = "") -> str:
        if not key:
            return self.location
        return f"{self.location.rstrip('/')}/{check_key(key)}"


def as_artifacts(target: Artifacts | str | Path) -> Artifacts:
    """``target`` itself when it is an ``Artifacts``, else the ``ArtifactStore`` at that folder
    or URI."""
    return target if isinstance(target, Artifacts) else ArtifactStore(target)


def run_artifacts(run_dir: str | Path, uri: str = "") -> ArtifactStore:
    """The artifact store of the run at ``run_dir``: the run dir itself, or ``<uri>/<run name>``
    when a storage URI is configured (``infra.artifact_uri``)."""
    if not uri:
        return ArtifactStore(run_dir)
    if not _is_uri(uri):
        raise ValueError(f"infra.artifact_uri {uri!r} is not a URI; use s3://bucket/prefix, "
                         "gs://bucket/prefix or file:///abs/path, or leave it empty to keep "
                         "artifacts in the run dir")
    return ArtifactStore(f"{uri.rstrip('/')}/{Path(run_dir).name}")
