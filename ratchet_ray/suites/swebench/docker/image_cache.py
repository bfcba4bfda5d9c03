"""The node's cache of instance images: an LRU index under a disk budget, a disk guard, counters.

Contracts:
- One index per node, ``<settings.lock_dir>/image_cache.json``, read and written only under
  ``flock`` on ``image_cache.lock``: per image its last use, size and whether this project built
  or pulled it (``owned``), and the node's ``COUNTERS``. Advisory: one that cannot be read starts
  empty, one that cannot be written is a logged warning.
- ``ImageCache.make_room(name, log)``, before a build or pull of ``name`` under its exclusive
  lock, expecting the index's largest image size: removes the least recently used owned images
  (never ``name``) until the owned ones plus the new one fit ``swebench.image_cache_gb``, and
  more while the free disk under Docker's data root is short of the new image plus
  ``swebench.build_min_free_gb``; still short: ``InfraFailure("disk_guard")`` naming the free
  space, the need and the settings. An image is removed only when its lock is free at once and
  the daemon agrees (``force=False``); images not owned or not indexed never are. Sizes are full
  (virtual) sizes: the budget bounds the images from above.
- ``node_report(settings)`` and ``held_images(settings)`` read the node's own ``lock_dir``
  (``settings.on_this_node``) without a Docker client.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import socket
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from ratchet_ray.storage.fsutil import atomic_write_json
from ratchet_ray.suites.swebench.imports import docker_errors
from ratchet_ray.suites.swebench.docker.infra import InfraFailure
from ratchet_ray.suites.swebench.settings import SwebenchSettings, on_this_node

Log = Callable[[str], None]
INDEX_FILE = "image_cache.json"
INDEX_LOCK = "image_cache.lock"
COUNTERS = ("hits", "builds", "pulls", "strips", "evictions", "refusals")
EVENTS = {"hit": "hits", "build": "builds", "pull": "pulls", "strip": "strips"}
GB = 1e9


def find_image(client: Any, name: str) -> Any:
    """The daemon's image ``name``, or None when it has none."""
    try:
        return client.images.get(name)
    except docker_errors().ImageNotFound:
        return None


@contextmanager
def _index(lock_dir: str | Path, write: bool = True) -> Iterator[dict[str, Any]]:
    """The node's index, locked for the block; written back at the end when ``write``."""
    folder = Path(lock_dir)
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / INDEX_LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if write else fcntl.LOCK_SH)
        path = folder / INDEX_FILE
        try:
            state = json.loads(path.read_text())
            state.setdefault("images", {})
            state["counters"] = {**dict.fromkeys(COUNTERS, 0), **state.get("counters", {})}
        except (OSError, ValueError):  # absent, or torn by a crash: start again (only a cache)
            state = {"images": {}, "counters": dict.fromkeys(COUNTERS, 0)}
        yield state
        if write:
            try:
                atomic_write_json(path, state)
            except OSError as exc:  # a cache index must never fail a grade (full disk, perms)
                logging.getLogger(__name__).warning("cannot write the image cache index %s: %s",
                                                    path, exc)
    finally:
        os.close(fd)


def node_report(settings: SwebenchSettings) -> dict[str, Any]:
    """This node's counters and cache use, from the index alone (module contract)."""
    settings = on_this_node(settings)
    with _index(settings.lock_dir, write=False) as state:
        owned = [e for e in state["images"].values() if e.get("owned")]
        return {"node": socket.gethostname(), **state["counters"],
                "images": len(state["images"]), "owned_images": len(owned),
                "owned_gb": round(sum(e.get("size", 0) for e in owned) / GB, 3),
                "budget_gb": settings.image_cache_gb}


def held_images(settings: SwebenchSettings) -> list[str]:
    """The images this node's index lists (used here and not removed since): what the node
    holds by its own records, for placement (``swebench.placement``)."""
    with _index(on_this_node(settings).lock_dir, write=False) as state:
        return sorted(state["images"])


def format_report(report: dict[str, Any]) -> str:
    """One line: ``node: 3 hits, 1 builds, ... (2 owned images, 1.2 GB of a 5 GB budget)``."""
    counts = ", ".join(f"{report.get(k, 0)} {k}" for k in COUNTERS)
    budget = (f"of a {report['budget_gb']:g} GB budget" if report.get("budget_gb") is not None
              else "no budget")
    return (f"{report.get('node', '?')}: {counts} ({report.get('owned_images', 0)} owned images, "
            f"{report.get('owned_gb', 0):g} GB, {budget})")


class ImageCache:
    """The node's image index seen by one worker (module contract)."""

    def __init__(self, client: Any, settings: SwebenchSettings,
                 lock_for: Callable[[str], Any]):
        self.client = client
        self.settings = settings
        self.lock_for = lock_for
        """``name -> ImageLock`` of the worker (the per-image locks of this node)."""

    def record(self, name: str, event: str, owned: bool = False) -> None:
        """Count ``event`` (hit, build, pull, strip) and mark ``name`` used now."""
        image = find_image(self.client, name)
        size = int(image.attrs.get("Size") or 0) if image is not None else 0
        with _index(self.settings.lock_dir) as state:
            entry = state["images"].setdefault(name, {"owned": False})
            entry.update(last_used=time.time(), size=size or entry.get("size", 0),
                         owned=bool(entry.get("owned") or owned))
            state["counters"][EVENTS[event]] += 1

    def touch(self, name: str) -> bool:
        """Mark a use of a listed image; False when the index does not list ``name``."""
        with _index(self.settings.lock_dir) as state:
            if name in state["images"]:
                state["images"][name]["last_used"] = time.time()
                return True
        return False

    def forget(self, name: str) -> None:
        with _index(self.settings.lock_dir) as state:
            state["images"].pop(name, None)

    def _free_bytes(self) -> tuple[int | None, str]:
        """Free bytes under the daemon's data root and that root; None when not local."""
        root = (self.client.info() or {}).get("DockerRootDir") or "/var/lib/docker"
        try:
            return shutil.disk_usage(root).free, root
        except OSError:
            return None, root  # a remote daemon's disk is not ours to measure

    def make_room(self, name: str, log: Log) -> None:
        """Evict for the budget and the disk guard before building or pulling ``name``."""
        settings = self.settings
        refusal = ""
        with _index(settings.lock_dir) as state:
            images = state["images"]
            need = max((e.get("size", 0) for e in images.values()), default=0)
            if settings.image_cache_gb is not None:
                budget = settings.image_cache_gb * GB

                def over() -> bool:
                    held = sum(e.get("size", 0) for n, e in images.items()
                               if e.get("owned") and n != name)
                    return held + need > budget
                if over() and not self._evict(state, name, over, log, "image_cache_gb"):
                    log(f"image cache over swebench.image_cache_gb={settings.image_cache_gb:g}: "
                        f"every other owned image is in use; building {name} anyway")
            floor = settings.build_min_free_gb * GB
            free, root = self._free_bytes()
            if free is None:
                log(f"disk guard off: cannot measure {root} from here (remote daemon?)")
                return

            def short() -> bool:
                return (self._free_bytes()[0] or 0) < need + floor
            if short():
                self._evict(state, name, short, log, "build_min_free_gb")
            free = self._free_bytes()[0] or 0
            if free < need + floor:
                state["counters"]["refusals"] += 1
                refusal = (
                    f"refusing to build or pull {name}: {free / GB:.1f} GB free under {root}, "
                    f"need {need / GB:.1f} GB for the image (the largest one cached here) plus "
                    f"swebench.build_min_free_gb={settings.build_min_free_gb:g} GB kept free, and "
                    f"no image of this project can be removed (all in use or none left); free "
                    f"disk (docker image prune), lower swebench.image_cache_gb or "
                    f"swebench.build_min_free_gb, or give Docker a bigger disk")
        if refusal:  # raised once the index (and its refusal count) is written
            raise InfraFailure("disk_guard", refusal)

    def _evict(self, state: dict[str, Any], keep: str, until_ok: Callable[[], bool],
               log: Log, why: str) -> bool:
        """Remove owned images, least recently used first, while ``until_ok()`` (still over);
        True once it no longer is."""
        errors = docker_errors()
        order = sorted((e.get("last_used", 0), n) for n, e in state["images"].items()
                       if e.get("owned") and n != keep)
        for _used, name in order:
            if not until_ok():
                return True
            with self.lock_for(name).exclusive(wait=False) as free:
                if not free:
                    continue  # a grader or agent of this node holds it
                try:
                    self.client.images.remove(name, force=False, noprune=False)
                except errors.ImageNotFound:  # removed by someone else: only forget it
                    state["images"].pop(name, None)
                    continue
                except errors.APIError as exc:  # 409: a container uses it
                    log(f"kept image {name} (least recently used) for now: {exc}")
                    continue
            state["images"].pop(name, None)
            state["counters"]["evictions"] += 1
            log(f"evicted image {name} (least recently used; swebench.{why})")
        return not until_ok()
