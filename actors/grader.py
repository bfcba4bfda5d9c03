"""Ray actor for the Grader pool: grades solver outputs with the suite's grader, statelessly.

``GraderActor = ray.remote(GraderWorker)``. Each actor builds its suite grader once, then grades
many outputs; every grade runs the generated code in its own sandbox process::

    grader = GraderActor.options(num_cpus=0.5).remote(config, artifacts)  # or a run-dir path
    ray.get(grader.warm.remote([t.task_id for t in tasks]))   # optional: precompute test oracles
    result = ray.get(grader.grade.remote(task, output))         # a GradeResult, never an exception

``artifacts`` is the run's ``storage.artifacts.Artifacts`` (``RemoteArtifacts`` on a cluster),
or a folder of this node (single-node tests). ``grade`` never raises: a broken grader still
yields a ``GradeResult`` (``infra_failure=True``, ``exit_status`` = the exception's name).

Precomputed inputs (MBPP+'s expected outputs) are computed once per run in one batch on one
grader and shared through Ray's object store (``share_precomputed``); ``grade(task, output,
shared)`` imports them into this node's store only when it lacks them, and one that cannot be
fetched (its node died) is computed here instead.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import ray

from actors.batching import BatchCalls
from actors.draining import call_one
from ratchet_ray.storage.artifacts import Artifacts
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.suites import suite_for
from ratchet_ray.types import GradeResult, Task

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SharedInput:
    """One task's precomputed grading input in Ray's object store. The reference is wrapped so
    that Ray passes it along instead of resolving it: a grader whose node holds the input
    already fetches nothing."""

    task_id: str
    ref: Any  # ray.ObjectRef of ``(bytes, sha256)``


class GraderWorker(BatchCalls):
    """Plain class behind ``GraderActor`` (unit tests use it without Ray); ``call_batch``
    grades several outputs in one call (``actors.batching``)."""

    def __init__(self, config: LoopConfig, run_dir: str | Path | Artifacts):
        self.suite_name = config.suite
        artifacts = run_dir if isinstance(run_dir, Artifacts) else Path(run_dir)
        self.grader = suite_for(config).make_grader(config, artifacts)

    def grade(self, task: Task, output: str, shared: SharedInput | None = None) -> GradeResult:
        started = time.monotonic()
        if shared is not None:
            self._import(shared)
        try:
            return self.grader.grade(task, output)
        except Exception as exc:  # the Grader contract says never raise; keep the row if one does
            log.exception("%s grader raised on %s", self.suite_name, task.task_id)
            return GradeResult(passed=False, exit_status=type(exc).__name__, infra_failure=True,
                               trace=f"[grader error] {type(exc).__name__}: {exc}"[:2000],
                               duration_s=time.monotonic() - started)

    def warm(self, task_ids: Iterable[str]) -> dict[str, float]:
        """Precompute whatever the suite's grader needs per task; seconds per task computed now."""
        warm = getattr(self.grader, "warm", None)
        return warm(list(task_ids)) if warm else {}

    def precompute(self, task_ids: Sequence[str]) -> dict[str, tuple[bytes, str]]:
        """Each task's verified precomputed input, ``(bytes, sha256)``, the missing ones
        computed first in one batch; {} when the suite's grader precomputes nothing."""
        store = self._precomputed()
        if store is None:
            return {}
        store.ensure(task_ids)
        return {task_id: store.blob(task_id) for task_id in task_ids}

    def _precomputed(self) -> Any:
        return getattr(self.grader, "precomputed", None)

    def _import(self, shared: SharedInput) -> None:
        store = self._precomputed()
        if store is None or store.has(shared.task_id):
            return
        try:
            data, sha256 = ray.get(shared.ref)
            store.add_blob(shared.task_id, data, sha256)
        except Exception as exc:  # a lost shortcut: grading computes the task as without one
            log.warning("could not import the shared grading input of %s (%s: %s); this "
                        "grader computes it", shared.task_id, type(exc).__name__, exc)

    def reap(self) -> list[str]:
        """Remove what graders of this run left on this node (SWE-bench: containers of this run
        and of dead owners); names removed, [] for suites with nothing to reap."""
        reap = getattr(self.grader, "reap", None)
        return reap() if reap else []


GraderActor = ray.remote(GraderWorker)


def share_precomputed(graders: Any, task_ids: Sequence[str]) -> dict[str, SharedInput]:
    """Compute the precomputed inputs of ``task_ids`` in one batch on one grader of the pool
    ``graders`` and put each into the object store from here (the driver owns them, so they
    outlive any grader and its node); returns each task's ``SharedInput`` for its grade calls,
    {} when the suite's grader precomputes nothing. Raises what the batch raised (e.g.
    ``GroundTruthError``): every grade would fail the same way."""
    ids = list(dict.fromkeys(task_ids))
    if not ids:
        return {}
    started = time.monotonic()
    blobs = call_one(graders, GraderWorker.precompute, ids)
    if blobs:
        log.info("grading inputs of %d task(s) precomputed and shared in %.1fs", len(blobs),
                 time.monotonic() - started)
    return {task_id: SharedInput(task_id, ray.put(blob)) for task_id, blob in blobs.items()}
