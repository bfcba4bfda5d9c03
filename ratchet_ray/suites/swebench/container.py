"""One instance container: started with networking off and resource limits, removed in ``finally``.

Contracts:
- ``docker_client(settings)`` connects to the configured daemon or raises
  ``InfraFailure("daemon_unreachable")`` naming the address and how to start one.
- ``instance_container(client, image, instance_id, settings, purpose)`` is a context manager
  yielding an ``InstanceContainer``; the container runs ``tail -f /dev/null`` as root in
  ``/testbed`` with ``network_mode="none"``, the memory and pids limits, and the labels
  ``LABELS``; it is force-removed when the block exits, whatever happened inside.
- ``InstanceContainer.run(command, timeout_s)`` runs ``bash -c command`` under coreutils
  ``timeout -s KILL`` (the whole process group dies at the limit) and returns
  ``CommandResult(exit_code, output, timed_out)``; stdout and stderr are interleaved; output
  beyond ``settings.max_log_bytes`` loses its middle. A daemon that stops answering for
  ``timeout_s + EXEC_GRACE_S`` raises ``InfraFailure("exec_hung")``.
"""

from __future__ import annotations

import io
import math
import tarfile
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Iterator

from ratchet_ray.suites.swebench.infra import InfraFailure, classify_exception
from ratchet_ray.suites.swebench.settings import SwebenchSettings

LABEL_KEY = "ratchet-ray.suite"
LABELS = {LABEL_KEY: "swebench"}
# Extra seconds the host waits for an exec beyond its in-container timeout (daemon hiccups).
EXEC_GRACE_S = 30.0
# Exit status of `timeout -s KILL` when the limit is hit (128 + SIGKILL).
KILLED_EXIT = 137


@dataclass
class CommandResult:
    exit_code: int
    output: str
    timed_out: bool = False
    duration_s: float = 0.0


def container_workdir() -> str:
    from swebench.image_builder.constants import CONTAINER_WORKDIR

    return CONTAINER_WORKDIR


def docker_client(settings: SwebenchSettings) -> Any:
    """A Docker SDK client for ``settings.docker_host`` (or the environment's default daemon)."""
    import docker

    try:
        client = (docker.DockerClient(base_url=settings.docker_host, timeout=600)
                  if settings.docker_host else docker.from_env(timeout=600))
        client.ping()
        return client
    except Exception as exc:  # noqa: BLE001 - every way of failing to connect is the same infra fault
        where = settings.docker_host or "DOCKER_HOST / unix:///var/run/docker.sock"
        raise InfraFailure("daemon_unreachable",
                           f"no Docker daemon at {where} ({type(exc).__name__}: {exc}); "
                           f"start one with `bash .ci/docker_setup.sh`") from exc


def _clip_bytes(data: bytearray, limit: int) -> bytes:
    if len(data) <= limit:
        return bytes(data)
    half = limit // 2
    cut = len(data) - 2 * half
    return bytes(data[:half]) + f"\n...[{cut} bytes cut]...\n".encode() + bytes(data[-half:])


class InstanceContainer:
    """A started container for one instance; use through ``instance_container``."""

    def __init__(self, container: Any, settings: SwebenchSettings):
        self.container = container
        self.settings = settings
        self.workdir = container_workdir()

    @property
    def name(self) -> str:
        return self.container.name

    def run(self, command: str, timeout_s: float, *, workdir: str | None = None) -> CommandResult:
        """Run ``command`` with bash under a hard in-container time limit (see module contract)."""
        limit = max(1, math.ceil(timeout_s))
        argv = ["timeout", "-s", "KILL", str(limit), "/bin/bash", "-c", command]
        api = self.container.client.api
        started = time.monotonic()
        state: dict[str, Any] = {"chunks": bytearray(), "error": None, "dropped": 0}

        def pump() -> None:
            try:
                exec_id = api.exec_create(self.container.id, argv, workdir=workdir or self.workdir,
                                          user="root")["Id"]
                state["exec_id"] = exec_id
                for chunk in api.exec_start(exec_id, stream=True):
                    buf = state["chunks"]
                    buf += chunk
                    if len(buf) > 2 * self.settings.max_log_bytes:
                        # Keep head and tail only; a runaway command must not exhaust memory.
                        state["chunks"] = bytearray(_clip_bytes(buf, self.settings.max_log_bytes))
            except Exception as exc:  # noqa: BLE001 - re-raised in the caller's thread below
                state["error"] = exc

        worker = threading.Thread(target=pump, name=f"exec-{self.name}", daemon=True)
        worker.start()
        worker.join(limit + EXEC_GRACE_S)
        duration = time.monotonic() - started
        if worker.is_alive():
            raise InfraFailure("exec_hung", f"container {self.name}: exec of {command[:80]!r} "
                                            f"gave no result {limit + EXEC_GRACE_S:.0f}s")
        if state["error"] is not None:
            exc = state["error"]
            raise InfraFailure(classify_exception(exc) or "docker_error",
                               f"container {self.name}: exec failed: {exc}") from exc
        exit_code = api.exec_inspect(state["exec_id"]).get("ExitCode")
        exit_code = -1 if exit_code is None else int(exit_code)
        output = _clip_bytes(state["chunks"], self.settings.max_log_bytes).decode(errors="replace")
        return CommandResult(exit_code, output, exit_code == KILLED_EXIT and duration >= limit - 1,
                             duration)

    def write_file(self, path: str, content: str) -> None:
        """Put ``content`` at absolute ``path`` inside the container (parents created)."""
        target = PurePosixPath(path)
        data = content.encode()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(name=target.name)
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
        self.run(f"mkdir -p {target.parent}", 60)
        if not self.container.put_archive(str(target.parent), buf.getvalue()):
            raise InfraFailure("docker_error", f"container {self.name}: could not write {path}")


@contextmanager
def instance_container(client: Any, image: str, instance_id: str, settings: SwebenchSettings,
                       purpose: str = "eval") -> Iterator[InstanceContainer]:
    """Start a locked-down container of ``image``; always removed on exit (see module contract)."""
    import docker.errors

    # A random suffix: several graders/solvers may work on the same instance at once.
    name = f"sweb.{purpose}.{instance_id.lower()}.{uuid.uuid4().hex[:8]}"
    container = None
    try:
        try:
            container = client.containers.create(
                image=image, name=name, command="tail -f /dev/null", user="root",
                working_dir=container_workdir(), detach=True, network_mode="none",
                mem_limit=f"{settings.memory_mb}m", memswap_limit=f"{settings.memory_mb}m",
                pids_limit=settings.pids_limit, labels={**LABELS, "ratchet-ray.instance": instance_id},
            )
            container.start()
        except docker.errors.DockerException as exc:
            raise InfraFailure(classify_exception(exc) or "docker_error",
                               f"cannot start container {name} from {image}: {exc}") from exc
        yield InstanceContainer(container, settings)
    finally:
        if container is not None:
            _remove(container)


def _remove(container: Any) -> None:
    """Force-remove (SIGKILL + delete); a container that is already gone is fine."""
    import docker.errors

    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        return


def leftover_containers(client: Any) -> list[str]:
    """Names of containers this suite started that still exist (for tests and ``doctor``)."""
    return [c.name for c in client.containers.list(all=True, filters={"label": LABEL_KEY})]
