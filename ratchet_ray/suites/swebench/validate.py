"""Gold-patch validation: does every instance of a run grade as SWE-bench says it must?

Contracts:
- Per instance two grades on the real harness, on the images a run will use: its gold ``patch``
  must resolve (``passed``), and a no-op patch (``noop_patch``: one new file outside the
  repository's code, because the grader answers a truly empty patch without a container) must
  not (``passed`` False and not an infrastructure failure: the FAIL_TO_PASS tests fail before
  the fix). Anything else is a ``Failure(instance_id, kind, status, reason)``: a gold patch
  unresolved or failing on infrastructure (an image that cannot build, a test command that
  errors), a no-op patch that resolves (the tests do not test the issue) or fails on
  infrastructure.
- ``gold_pairs(settings, ids)`` reads the instances with their gold patches (``ids``: these only,
  in this order; an unknown id raises ``ValueError`` naming it).
- ``validate_on_pool(graders, pairs)`` grades every pair in parallel over a Grader pool (an
  ``actors.pools.ResilientPool`` of ``GraderActor``: on a cluster, its Docker nodes) and returns
  a ``Validation``; it never raises for a failing instance.
- ``validate_dataset(config, ids, out_dir, workers)`` is ``ratchet swe validate``: it joins the
  cluster (``RAY_ADDRESS``) or starts a local Ray, starts ``workers`` graders (default
  ``config.workers.graders``) writing their logs under ``out_dir``, validates and stops them.
- ``before_rounds(config, graders, tasks, run_dir)`` is the suite's run-start hook: with
  ``swebench.validate_gold`` it validates the run's instances on the run's own Grader pool,
  writes ``swebench_validation.json`` in the run dir and raises ``PreflightFailed`` (no round
  runs) naming the failures; otherwise it does nothing.
- The node image-cache reports of every Docker node (``image_reports``) accompany a validation.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ratchet_ray.suites.swebench.dataset import load_instances, to_task
from ratchet_ray.suites.swebench.settings import SwebenchSettings, settings_from_config
from ratchet_ray.types import GradeResult, Task

REPORT_FILE = "swebench_validation.json"
NOOP_FILE = "ratchet_validate_noop.txt"
KINDS = ("gold", "noop")


def noop_patch() -> str:
    """A patch that applies to any repository and changes no code: one new text file."""
    return (f"diff --git a/{NOOP_FILE} b/{NOOP_FILE}\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/{NOOP_FILE}\n@@ -0,0 +1 @@\n+no-op patch of ratchet swe validate\n")


@dataclass
class Failure:
    instance_id: str
    kind: str
    """``gold`` or ``noop``."""
    status: str
    """The grade's ``exit_status`` (``ok`` for a no-op patch that resolved)."""
    reason: str


@dataclass
class Validation:
    checked: int
    """Instances validated."""
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    nodes: list[dict] = field(default_factory=list)
    """The image-cache report of each Docker node (``image_cache.node_report``)."""

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def failed_instances(self) -> list[str]:
        return sorted({f.instance_id for f in self.failures})

    def summary(self) -> str:
        good = self.checked - len(self.failed_instances)
        return (f"{good}/{self.checked} instances valid (gold resolves, no-op does not) in "
                f"{self.seconds:.0f}s; {len(self.failures)} failures")

    def lines(self) -> list[str]:
        return [f"FAIL {f.instance_id} [{f.kind}] {f.status}: {f.reason}" for f in self.failures]

    def to_json(self) -> dict:
        return {"checked": self.checked, "ok": self.ok, "seconds": round(self.seconds, 1),
                "failures": [asdict(f) for f in self.failures], "nodes": self.nodes}


def _first_lines(trace: str, limit: int = 400) -> str:
    text = " | ".join(line.strip() for line in trace.splitlines() if line.strip())
    return text[:limit] + ("..." if len(text) > limit else "")


def judge(instance_id: str, kind: str, grade: GradeResult | None,
          error: str = "") -> Failure | None:
    """The failure a grade makes for its kind of patch, or None (module contract)."""
    if grade is None:
        return Failure(instance_id, kind, "grader_died", error or "the grader died twice")
    infra = " (infrastructure)" if grade.infra_failure else ""
    if kind == "gold" and not (grade.passed and not grade.infra_failure):
        return Failure(instance_id, kind, grade.exit_status,
                       f"gold patch not resolved{infra}: {_first_lines(grade.trace)}")
    if kind == "noop" and grade.passed:
        return Failure(instance_id, kind, grade.exit_status, "the no-op patch resolves: the "
                       "FAIL_TO_PASS tests pass without the fix")
    if kind == "noop" and grade.infra_failure:
        return Failure(instance_id, kind, grade.exit_status,
                       f"no-op patch failed{infra}: {_first_lines(grade.trace)}")
    return None


def gold_pairs(settings: SwebenchSettings, ids: Sequence[str] | None = None
               ) -> list[tuple[Task, str]]:
    """(task, gold patch) of the instances (module contract)."""
    instances = {i["instance_id"]: i for i in load_instances(settings)}
    if ids is None:
        ids = list(instances)
    unknown = [i for i in ids if i not in instances]
    if unknown:
        raise ValueError(f"{len(unknown)} instance ids are not in {settings.dataset_name}: "
                         f"{', '.join(unknown[:10])}; check the subset file against the dataset")
    missing = [i for i in ids if not str(instances[i].get("patch") or "").strip()]
    if missing:
        raise ValueError(f"instances without a gold `patch` field cannot be validated: "
                         f"{', '.join(missing[:10])}; use the dataset that carries the patches")
    return [(to_task(instances[i]), instances[i]["patch"]) for i in dict.fromkeys(ids)]


def image_reports(settings: SwebenchSettings) -> list[dict]:
    """The image-cache report of every alive node offering ``docker`` (one tiny task each)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from ratchet_ray.suites.swebench.image_cache import node_report

    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("docker")]
    task = ray.remote(node_report)
    refs = [task.options(num_cpus=0, max_retries=0, scheduling_strategy=(
        NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))).remote(settings) for n in nodes]
    try:
        return ray.get(refs, timeout=60)
    except Exception as exc:  # noqa: BLE001 - only informative: never fails a validation
        return [{"node": "?", "error": f"{type(exc).__name__}: {exc}"[:300]}]


def validate_on_pool(graders: Any, pairs: Sequence[tuple[Task, str]],
                     settings: SwebenchSettings | None = None) -> Validation:
    """Grade every gold and no-op patch on ``graders`` (module contract)."""
    from actors.pools import drain

    started = time.monotonic()
    failures: list[Failure] = []
    noop = noop_patch()
    for task, gold in pairs:
        graders.submit("grade", task, gold, key=(task.task_id, "gold"))
        graders.submit("grade", task, noop, key=(task.task_id, "noop"))

    def handle(_pool: Any, result: Any) -> None:
        instance_id, kind = result.key
        grade = result.value if result.ok else None
        found = judge(instance_id, kind, grade, f"{result.exit_status}: {result.error}")
        if found is not None:
            failures.append(found)

    drain([graders], handle)
    failures.sort(key=lambda f: (f.instance_id, KINDS.index(f.kind)))
    nodes = image_reports(settings) if settings is not None else []
    return Validation(len(pairs), failures, time.monotonic() - started, nodes)


def validate_dataset(config: Any, ids: Sequence[str] | None, out_dir: Path,
                     workers: int | None = None) -> Validation:
    """``ratchet swe validate`` (module contract)."""
    import ray

    from actors.artifacts import run_artifacts_access
    from ratchet_ray.loop.runtime import connect_ray, make_grader_factory, make_pool

    settings = settings_from_config(config)
    pairs = gold_pairs(settings, ids)
    out_dir.mkdir(parents=True, exist_ok=True)
    started_ray = connect_ray()
    pool = service = None
    try:
        # Grader logs reach out_dir on this node through a service actor, whichever node grades.
        artifacts, service = run_artifacts_access(out_dir)
        size = max(1, min(workers or config.workers.graders, 2 * len(pairs)))
        pool = make_pool("grader", config, make_grader_factory(config, out_dir, artifacts), size)
        result = validate_on_pool(pool, pairs, settings)
        (out_dir / REPORT_FILE).write_text(json.dumps(result.to_json(), indent=1) + "\n")
        return result
    finally:
        if pool is not None:
            pool.shutdown()
        if service is not None:
            ray.kill(service)
        if started_ray:
            ray.shutdown()


def before_rounds(config: Any, graders: Any, tasks: Sequence[Task], run_dir: Path) -> None:
    """The suite's run-start hook (module contract)."""
    settings = settings_from_config(config)
    if not settings.validate_gold:
        return
    import logging

    from ratchet_ray.loop.breaker import PreflightFailed

    log = logging.getLogger(__name__)
    ids = [t.task_id for t in tasks]
    log.info("swebench.validate_gold: validating %d instances on the Grader pool", len(ids))
    result = validate_on_pool(graders, gold_pairs(settings, ids), settings)
    (Path(run_dir) / REPORT_FILE).write_text(json.dumps(result.to_json(), indent=1) + "\n")
    log.info("swebench.validate_gold: %s", result.summary())
    if not result.ok:
        shown = "; ".join(result.lines()[:10])
        raise PreflightFailed(
            f"swebench.validate_gold: {result.summary()}: {shown} (all in "
            f"{Path(run_dir) / REPORT_FILE}); fix or drop those instances (a subset file), "
            f"check them with `ratchet swe validate`, or set swebench.validate_gold=false")
