"""One instance container: locked down, labelled, removed in ``finally``, reaped if its owner dies.

Contracts:
- ``docker_client(settings)`` connects or raises ``InfraFailure("daemon_unreachable")`` naming
  the address and how to start a daemon.
- ``instance_container(client, image, instance_id, settings, ...)`` yields an
  ``InstanceContainer`` (``execbox``): ``tail -f /dev/null`` under Docker's init in ``/testbed``,
  no network, every capability dropped but ``HARNESS_CAPS``, ``no-new-privileges``, memory,
  pids and CPU limits, a writable-layer bound (``storage_opt`` where the driver has one, always
  ``run``'s disk watchdog), and the labels ``LABEL_KEY``, ``OWNER_KEY`` (this process's host and
  pid) and ``RUN_KEY`` (when given). Force-removed when the block exits, whatever happened: at
  once, or in the background by ``removals`` (``Removals``) until its ``wait()``.
- ``reap_containers`` never removes a container a live run uses; one the daemon refuses now is
  left for the next reap.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from ratchet_ray.suites.swebench.docker.execbox import InstanceContainer, container_workdir
from ratchet_ray.suites.swebench.imports import docker_errors, serial_imports
from ratchet_ray.suites.swebench.docker.infra import START_DOCKER, InfraFailure, docker_failure
from ratchet_ray.suites.swebench.settings import SwebenchSettings

LABEL_KEY = "ratchet-ray.suite"
LABELS = {LABEL_KEY: "swebench"}
OWNER_KEY = "ratchet-ray.owner"
RUN_KEY = "ratchet-ray.run"
INSTANCE_KEY = "ratchet-ray.instance"
# Root inside the container keeps only what the harness's own steps need: CHOWN (hand the
# repository to the untrusted uid), DAC_OVERRIDE and FOWNER (reset files that uid now owns),
# SETUID/SETGID (setpriv and docker exec drop to that uid), KILL (end processes it left behind).
HARNESS_CAPS = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID", "KILL")
_NO_STORAGE_OPT = "--storage-opt is supported only"


def owner_label() -> str:
    """``<hostname>/<pid>`` of this process: the reaper's test for a dead owner."""
    return f"{socket.gethostname()}/{os.getpid()}"


def daemon_address(settings: SwebenchSettings) -> str:
    """Where the Docker client connects, for messages: ``swebench.docker_host``, else the
    ``DOCKER_HOST`` this process has, else the SDK's default socket."""
    if settings.docker_host:
        return settings.docker_host
    if os.environ.get("DOCKER_HOST"):
        return f"{os.environ['DOCKER_HOST']} (DOCKER_HOST)"
    return "unix:///var/run/docker.sock (the default; set DOCKER_HOST or swebench.docker_host)"


def docker_client(settings: SwebenchSettings) -> Any:
    """A Docker SDK client for ``settings.docker_host`` (or the environment's default daemon)."""
    with serial_imports:
        import docker

    try:
        client = (docker.DockerClient(base_url=settings.docker_host, timeout=600)
                  if settings.docker_host else docker.from_env(timeout=600))
        client.ping()
        return client
    except Exception as exc:  # noqa: BLE001 - every way of failing to connect is the same infra fault
        raise InfraFailure("daemon_unreachable",
                           f"no Docker daemon at {daemon_address(settings)} "
                           f"({type(exc).__name__}: {exc}); {START_DOCKER}") from exc


def _create(client: Any, settings: SwebenchSettings, **kwargs: Any) -> Any:
    """Create with a ``storage_opt`` size when the daemon's storage driver supports one."""
    if getattr(client, "_ratchet_storage_opt", True):
        try:
            return client.containers.create(storage_opt={"size": f"{settings.disk_mb}M"}, **kwargs)
        except docker_errors().APIError as exc:
            if _NO_STORAGE_OPT not in str(exc):
                raise
            client._ratchet_storage_opt = False  # the disk watchdog of `run` is the bound then
    return client.containers.create(**kwargs)


@contextmanager
def instance_container(client: Any, image: str, instance_id: str, settings: SwebenchSettings,
                       purpose: str = "eval", run_label: str | None = None,
                       first_steps: Sequence[str] = (),
                       removals: "Removals | None" = None) -> Iterator[InstanceContainer]:
    """A locked-down container of ``image`` (module contract); ``first_steps``: root steps run
    in ``find_main_pid``'s exec (results in ``first_results``)."""
    # A random suffix: several graders/solvers may work on the same instance at once.
    name = f"sweb.{purpose}.{instance_id.lower()}.{uuid.uuid4().hex[:8]}"
    labels = {**LABELS, INSTANCE_KEY: instance_id, OWNER_KEY: owner_label()}
    if run_label:
        labels[RUN_KEY] = run_label
    container = None
    try:
        try:
            container = _create(
                client, settings, image=image, name=name, command="tail -f /dev/null", user="root",
                working_dir=container_workdir(), detach=True, network_mode="none",
                mem_limit=f"{settings.memory_mb}m", memswap_limit=f"{settings.memory_mb}m",
                pids_limit=settings.pids_limit, nano_cpus=int(settings.cpus * 1e9), init=True,
                cap_drop=["ALL"], cap_add=list(HARNESS_CAPS),
                security_opt=["no-new-privileges:true"], labels=labels,
            )
            container.start()
        except docker_errors().DockerException as exc:
            raise docker_failure(exc, f"cannot start container {name} from {image}") from exc
        box = InstanceContainer(container, settings)
        box.find_main_pid(first_steps)
        yield box
    finally:
        if container is not None:
            if removals is not None:
                removals.add(container)
            else:
                remove_container(container)


class Removals:
    """Containers removed in the background until ``wait`` (module contract)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[Future] = []

    def add(self, container: Any) -> None:
        """Start removing ``container`` (force: its processes are killed first)."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=2,
                                                thread_name_prefix="container-removal")
            self._pending.append(self._pool.submit(remove_container, container))

    def wait(self) -> None:
        """Return when every container handed over is removed; the first removal that failed
        raises its error (what removing at the block's exit would have raised)."""
        with self._lock:
            pending, pool = self._pending, self._pool
            self._pending, self._pool = [], None
        if pool is None:
            return
        pool.shutdown(wait=True)
        for future in pending:
            error = future.exception()
            if error is not None:
                raise error


def remove_container(container: Any) -> None:
    """Force-remove (SIGKILL + delete); a container that is already gone is fine."""
    errors = docker_errors()
    try:
        container.remove(force=True)
    except errors.NotFound:
        return
    except errors.APIError as exc:
        if exc.status_code == 409 and "already in progress" in str(exc):
            return  # a reaper removes it right now
        raise


def _owner_gone(owner: str) -> bool:
    """True when ``owner`` (``host/pid``) names a process of this host that no longer exists."""
    host, _, pid = owner.rpartition("/")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def reap_containers(client: Any, run_label: str | None = None) -> list[str]:
    """Remove this suite's containers labelled with ``run_label`` and those whose owner process
    on this host is gone; the names removed."""
    removed = []
    for container in _listed(client):
        labels = container.labels or {}
        if (run_label and labels.get(RUN_KEY) == run_label) or _owner_gone(labels.get(OWNER_KEY, "")):
            try:
                remove_container(container)
            except docker_errors().APIError:
                continue  # the daemon refused now; the next reap tries again
            removed.append(container.name)
    return removed


def orphaned_containers(client: Any) -> tuple[list[str], int]:
    """This suite's containers whose owner process on this host is gone (what a killed run left
    and the next reap removes), by name, and how many others exist: those of live processes, or
    of another host sharing the daemon, which nothing here may remove."""
    ours = _listed(client)
    orphaned = [c.name for c in ours if _owner_gone((c.labels or {}).get(OWNER_KEY, ""))]
    return orphaned, len(ours) - len(orphaned)


def _listed(client: Any) -> list:
    """This suite's containers. docker-py lists ids, then inspects each: one removed in between
    (another grader on this host reaping it) is skipped, not raised as ``NotFound``."""
    return client.containers.list(all=True, filters={"label": LABEL_KEY}, ignore_removed=True)
