"""Instance images: named as the swebench harness names them, pulled or built, cleaned per cache
level.

Contracts:
- ``image_name(instance_id, settings)``: swebench's ``ImageSpec.name``
  (``sweb.eval.x86_64.<id>:<tag>`` locally, ``<namespace>/sweb.eval.x86_64.<id with __ ->
  _1776_>:<tag>`` from a registry).
- ``InstanceImages.ensure(instance, log)``: the image present and ``ready``: pulled when
  ``namespace`` is set (unless the instance has its own ``dockerfile``), else built from the
  instance's ``dockerfile``; then, once per image, stripped of every commit, ref and object
  newer than ``base_commit`` (``history``). Failures raise ``InfraFailure``. A build or pull
  first makes room in the node's cache under its disk guard (``image_cache``), all under the
  image's exclusive lock, so one worker of a node builds and the others find it ready.
- ``InstanceImages.use(instance, log)``: a block with the image ready and its ``ImageLock`` held
  shared, so no worker of this machine removes it; marks it used in the node's index (which
  placement reads).
- ``InstanceImages.release(name, log)`` applies the cache level: below ``instance`` it removes
  an image that was not present at this object's creation, only when it gets the image's lock at
  once and no container uses it, and drops it from the index.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import tarfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from ratchet_ray.suites.swebench.docker.execbox import container_workdir
from ratchet_ray.suites.swebench.docker.history import (HISTORY_LABEL, HISTORY_SAYS, history_dockerfile,
                                                  history_mark)
from ratchet_ray.suites.swebench.docker.image_cache import ImageCache, find_image
from ratchet_ray.suites.swebench.imports import docker_errors, serial_imports
from ratchet_ray.suites.swebench.docker.infra import InfraFailure, docker_failure
from ratchet_ray.suites.swebench.settings import SwebenchSettings, on_this_node

Log = Callable[[str], None]
# Marks the instance images this project built (``docker images --filter label=...``).
BUILT_LABEL = "ratchet-ray.image"


def image_name(instance_id: str, settings: SwebenchSettings) -> str:
    with serial_imports:
        from swebench.image_builder.image_spec import ImageSpec

    # ImageSpec validates a Dockerfile it never uses for naming; the placeholder only satisfies it.
    spec = ImageSpec(instance_id=instance_id, dockerfile="(naming only)",
                     namespace=settings.namespace, tag=settings.tag, arch=settings.arch)
    return spec.name


def build_image(client: Any, files: dict[str, bytes], tag: str, network: str,
                labels: dict[str, str] | None = None, mtime: int = 0,
                output: Log = lambda _text: None) -> str | None:
    """A classic build of ``tag`` from a context holding only ``files`` (name -> bytes, dated
    ``mtime``; an instance's Dockerfile carries the rest in RUN steps), each event's output text
    handed to ``output``: the builder's error (the daemon's refusal included), None once built."""
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        for file, data in files.items():
            info = tarfile.TarInfo(file)
            info.size, info.mtime = len(data), mtime
            tar.addfile(info, io.BytesIO(data))
    context.seek(0)
    try:
        for event in client.api.build(fileobj=context, custom_context=True, tag=tag, rm=True,
                                      forcerm=True, decode=True, network_mode=network,
                                      labels=labels):
            if "error" in event:
                return event["error"].strip()
            if str(event.get("stream") or "").strip():
                output(event["stream"])
    except docker_errors().APIError as exc:
        return str(exc)
    return None


class ImageLock:
    """A lock between processes on one image name: ``flock`` on ``<lock_dir>/<hash>.lock``.

    Every ``shared()``/``exclusive()`` opens its own file description, so threads of one
    process exclude each other exactly as separate processes do.
    """

    def __init__(self, lock_dir: str | Path, name: str):
        folder = Path(lock_dir)
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{hashlib.sha1(name.encode()).hexdigest()[:20]}.lock"
        self.name = name

    @contextmanager
    def _held(self, how: int) -> Iterator[bool]:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            try:
                fcntl.flock(fd, how)
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)  # closing the description releases its lock

    def shared(self):
        """Held while a container of the image may be started or running (blocks for a build)."""
        return self._held(fcntl.LOCK_SH)

    def exclusive(self, wait: bool = True):
        """Held to build, pull or remove the image; ``wait=False`` yields False when busy."""
        return self._held(fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))


class InstanceImages:
    """Ensures and releases the images of one worker (one per Grader/Solver object)."""

    def __init__(self, client: Any, settings: SwebenchSettings):
        self.client = client
        self.settings = on_this_node(settings)  # this node's lock_dir (and image index)
        # Images present before this worker touched anything are never removed by it.
        self.prior: set[str] = {tag for image in client.images.list() for tag in image.tags}
        self.cache = ImageCache(client, self.settings, self.lock)

    def name(self, instance: dict[str, Any]) -> str:
        return image_name(instance["instance_id"], self.settings)

    def exists(self, name: str) -> bool:
        return find_image(self.client, name) is not None

    def ready(self, name: str, instance: dict[str, Any]) -> bool:
        """Present and stripped of the history after the instance's ``base_commit``."""
        image = find_image(self.client, name)
        labels = (image.labels or {}) if image is not None else {}
        return labels.get(HISTORY_LABEL) == history_mark(instance["base_commit"])

    def lock(self, name: str) -> ImageLock:
        return ImageLock(self.settings.lock_dir, name)

    @contextmanager
    def use(self, instance: dict[str, Any], log: Log) -> Iterator[str]:
        """The image name, ready and held against removal for the block (module contract)."""
        name = self.name(instance)
        lock = self.lock(name)
        while True:
            with lock.shared():
                if self.ready(name, instance):
                    if not self.cache.touch(name):  # ready, yet unlisted here: list it now
                        self.cache.record(name, "hit")
                    yield name
                    return
            # Absent or not stripped yet: build, pull or strip it under the exclusive lock, then
            # take the shared one again (flock cannot convert atomically: a remover may win).
            self.ensure(instance, log)

    def ensure(self, instance: dict[str, Any], log: Log) -> str:
        """The instance's image name, after making sure the daemon has it, stripped of the
        history after ``base_commit`` (module contract)."""
        errors = docker_errors()
        name = self.name(instance)
        with self.lock(name).exclusive():
            try:
                if self.ready(name, instance):
                    self.cache.record(name, "hit")
                    return name
                event = "strip"
                if not self.exists(name):
                    self.cache.make_room(name, log)  # budget and disk guard first
                    if self.settings.namespace is not None:
                        event = self._pull(name, instance, log)
                    else:
                        self._build(name, instance, log)
                        event = "build"
                self._strip_history(name, instance, log)
                self.cache.record(name, event, owned=event != "strip")
                return name
            except errors.ImageNotFound as exc:
                raise InfraFailure("image_missing", f"image {name} not found in registry "
                                   f"namespace {self.settings.namespace!r}: {exc}") from exc
            except errors.DockerException as exc:
                raise docker_failure(exc, f"cannot obtain image {name}") from exc

    def _pull(self, name: str, instance: dict[str, Any], log: Log) -> str:
        """Pull ``name``; when the registry has no such image (or cannot be reached) and the
        instance carries its own ``dockerfile`` (a set ``ratchet swe make-instances`` made: its
        images exist nowhere else), build it from that under the same name. ``pull``/``build``."""
        log(f"pulling {name}")
        try:
            self.client.images.pull(name)
            return "pull"
        except docker_errors().APIError as exc:
            if not instance.get("dockerfile"):
                raise
            log(f"{name} not pulled from namespace {self.settings.namespace!r} "
                f"({str(exc).strip()[:200]}): building it from the instance's dockerfile")
        self._build(name, instance, log)
        return "build"

    def _strip_history(self, name: str, instance: dict[str, Any], log: Log) -> None:
        """Rebuild ``name`` as a layer over itself whose repository holds nothing newer than
        ``base_commit`` (``history``), tagged with the same name."""
        base = instance["base_commit"]
        user = (self.client.images.get(name).attrs.get("Config") or {}).get("User") or ""
        try:
            dockerfile = history_dockerfile(name, base, user, container_workdir())
        except ValueError as exc:
            raise InfraFailure("image_build_failed", f"instance {instance['instance_id']}: {exc}; "
                               f"base_commit must be the commit the image is checked out at"
                               ) from exc
        log(f"removing the history after base_commit {base} from {name}")
        started = time.monotonic()
        output: list[str] = []

        def said(text: str) -> None:
            for line in filter(None, map(str.strip, text.splitlines())):
                output.append(line)
                if line.startswith(HISTORY_SAYS):
                    log(line)

        # No network: the script only rewrites the repository that is already there.
        error = build_image(self.client, {"Dockerfile": dockerfile.encode()}, name, "none",
                            output=said)
        if error is not None:
            # The builder's error quotes the whole script; the script's own line says why.
            why = ([line[:300] for line in output if line.startswith(HISTORY_SAYS)]
                   or [line[:300] for line in output[-3:]] or [error])
            raise InfraFailure("image_build_failed", f"cannot remove the history after "
                               f"base_commit {base} from {name}: {' '.join(why)}")
        if not self.ready(name, instance):
            raise InfraFailure("image_build_failed", f"removing the history from {name} reported "
                               f"success but the image is not marked {HISTORY_LABEL}")
        log(f"history after base_commit removed from {name} in {time.monotonic() - started:.1f}s")

    def _build(self, name: str, instance: dict[str, Any], log: Log) -> None:
        dockerfile = instance.get("dockerfile")
        if not dockerfile:
            raise InfraFailure("image_missing", f"image {name} is not present and instance "
                               f"{instance['instance_id']} has no `dockerfile` to build it from; "
                               f"set swebench.namespace to pull it, or add a dockerfile field")
        log(f"building {name} locally")
        error = build_image(self.client, {"Dockerfile": dockerfile.encode()}, name,
                            self.settings.build_network, {BUILT_LABEL: "instance"},
                            output=lambda text: log(text.rstrip()))
        if error is not None:
            raise InfraFailure("image_build_failed", f"building {name} failed: {error}")
        if not self.exists(name):
            raise InfraFailure("image_build_failed", f"building {name} reported success but the "
                               f"image is absent")

    def release(self, name: str, log: Log) -> bool:
        """Apply the cache level to ``name``; True when the image was removed."""
        errors = docker_errors()
        if self.settings.cache_level == "instance" or name in self.prior:
            return False
        with self.lock(name).exclusive(wait=False) as free:
            if not free:
                log(f"kept image {name}: another grader or agent on this machine uses it")
                return False
            try:
                self.client.images.remove(name, force=False, noprune=False)
                self.cache.forget(name)
                log(f"removed image {name} (cache level {self.settings.cache_level})")
                return True
            except errors.ImageNotFound:
                return False
            except errors.APIError as exc:
                # 409: another container (a concurrent grader) still uses it; the next release
                # or `ratchet doctor` cleans it up.
                log(f"kept image {name}: {exc}")
                return False
