"""Ray actor for the Grader pool: grades solver outputs with the suite's grader, statelessly.

``GraderActor = ray.remote(GraderWorker)``. Each actor builds its suite grader once (for MBPP+: the
dataset, the sandbox probe and the ground-truth memo) and then grades many outputs; every grade
runs the generated code in its own sandbox process, so nothing the code does reaches the actor::

    grader = GraderActor.options(num_cpus=0.5).remote(config, artifacts)  # or a run-dir path
    ray.get(grader.warm.remote([t.task_id for t in tasks]))   # optional: precompute test oracles
    result = ray.get(grader.grade.remote(task, output))         # a GradeResult, never an exception

The second argument is where the grader's artifacts go (SWE-bench logs and reports, the sim
world): the run's ``ratchet_ray.artifacts.Artifacts`` (``actors.artifacts.RemoteArtifacts`` on a
cluster, so they reach the head's run dir), or a folder of this node (single-node tests).

``grade`` never raises: a grader that breaks its own contract still yields a ``GradeResult``
(``infra_failure=True``, ``exit_status`` = the exception's name), so every task gets a row.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Iterable

import ray

from actors.batching import BatchCalls
from ratchet_ray.artifacts import Artifacts
from ratchet_ray.config import LoopConfig
from ratchet_ray.suites import suite_for
from ratchet_ray.types import GradeResult, Task

log = logging.getLogger(__name__)


class GraderWorker(BatchCalls):
    """Plain class behind ``GraderActor`` (unit tests use it without Ray); ``call_batch``
    grades several outputs in one call (``actors.batching``)."""

    def __init__(self, config: LoopConfig, run_dir: str | Path | Artifacts):
        self.suite_name = config.suite
        artifacts = run_dir if isinstance(run_dir, Artifacts) else Path(run_dir)
        self.grader = suite_for(config).make_grader(config, artifacts)

    def grade(self, task: Task, output: str) -> GradeResult:
        started = time.monotonic()
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

    def describe(self) -> dict[str, str | int]:
        """Which suite, which isolation, which process (for logs and health checks)."""
        return {"suite": self.suite_name, "pid": os.getpid(),
                "isolation": str(getattr(self.grader, "isolation", "n/a"))}

    def reap(self) -> list[str]:
        """Remove what graders of this run left on this node (SWE-bench: containers of this run
        and of dead owners); names removed, [] for suites with nothing to reap."""
        reap = getattr(self.grader, "reap", None)
        return reap() if reap else []

    def ping(self) -> str:
        return "ok"


GraderActor = ray.remote(GraderWorker)
