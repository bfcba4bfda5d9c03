"""The run's artifact service: a head-local artifact store that actors on any node read and
write through Ray, so grader logs, trajectories and cache entries land in the head's run dir.

Contracts:
- ``launch_artifact_service(location)`` starts an ``ArtifactService`` pinned to the driver's
  node, with no CPU, serving ``ArtifactStore(location)`` several calls at once (puts of distinct
  keys are independent atomic writes), restarted if it dies; it ends with the driver's runtime.
  A folder that existed at launch is never made again by a put, after a restart too.
- ``run_artifacts_access(run_dir, uri)`` is what a driver hands its actors: the service's client
  for the run dir, or (``infra.artifact_uri`` set) the URI store every node opens itself.
- ``RemoteArtifacts(handle, location)`` is an ``Artifacts`` whose calls go to that actor and wait:
  once ``put`` returns, the object is in the head's run dir. It pickles with its handle.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ray

from actors.placement import pinned
from ratchet_ray.storage.artifacts import Artifacts, ArtifactStore, run_artifacts

SERVICE_CONCURRENCY = 16


class ArtifactService(ArtifactStore):
    """The store as the service's actor class (its own name, which Ray's state shows).
    ``guard``: the folder existed at launch, so its puts make folders only below it, even
    after a restart that finds it gone (the store alone reads that off the disk at start)."""

    def __init__(self, location: str | Path, guard: bool = False):
        super().__init__(location)
        if guard:
            self._root = Path(self.location)


ArtifactServiceActor = ray.remote(ArtifactService)


def launch_artifact_service(location: str | Path) -> Any:
    """Start the service for ``location`` on this (the driver's) node; see module contracts."""
    return ArtifactServiceActor.options(
        num_cpus=0, max_concurrency=SERVICE_CONCURRENCY, scheduling_strategy=pinned(),
        # Stateless (everything is on disk) and every call idempotent: a crashed service is
        # restarted and the calls it held are retried, instead of failing every artifact write.
        max_restarts=3, max_task_retries=3,
    ).remote(str(location), guard=Path(location).is_dir())


class RemoteArtifacts(Artifacts):
    """Client of an ``ArtifactService`` (see module contracts)."""

    def __init__(self, handle: Any, location: str | Path):
        self.handle = handle
        self.location = ArtifactStore(location).location  # the same spelling as the service's

    def put(self, key: str, data: bytes) -> None:
        ray.get(self.handle.put.remote(key, data))

    def put_many(self, items: list[tuple[str, bytes]]) -> None:
        ray.get(self.handle.put_many.remote(list(items)))  # one call, however many objects

    def get(self, key: str) -> bytes | None:
        return ray.get(self.handle.get.remote(key))

    def keys(self, prefix: str = "") -> list[str]:
        return ray.get(self.handle.keys.remote(prefix))

    def delete(self, key: str) -> bool:
        return ray.get(self.handle.delete.remote(key))

    def locate(self, key: str = "") -> str:
        return ArtifactStore(self.location).locate(key)  # what the service would answer


def run_artifacts_access(run_dir: str | Path, uri: str = "") -> tuple[Artifacts, Any]:
    """``(artifacts, service)`` of one run for its actors: with a storage ``uri``
    (``infra.artifact_uri``), the store at ``<uri>/<run name>`` that every node opens itself and
    no service (None); without one, a ``RemoteArtifacts`` of a service started here for the run
    dir (the caller kills ``service`` when the run ends)."""
    if uri:
        return run_artifacts(run_dir, uri), None
    service = launch_artifact_service(run_dir)
    return RemoteArtifacts(service, run_dir), service
