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
- ``validate(grade, pairs)`` grades every gold and no-op patch through ``grade`` (a callable
  taking ``(task, patch)`` pairs and returning, in order, each ``GradeResult`` or a string naming
  why the pool could not grade it: ``loop.grade_pool.grade_all`` over a Grader pool, on a
  cluster its Docker nodes) and returns a ``Validation``; it never raises for a failing
  instance. ``ratchet swe validate`` (``suites.swebench.cli``) runs it on a pool of its own.
- ``before_rounds(config, grade, tasks, run_dir)`` is the suite's run-start hook: with
  ``swebench.validate_gold`` it validates the run's instances through the run's own Grader pool,
  writes ``swebench_validation.json`` in the run dir and returns the message that stops the run
  (the failures named) when any fails; otherwise, and when the setting is off, None.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ratchet_ray.suites.swebench.dataset import load_instances, to_task
from ratchet_ray.suites.swebench.settings import SwebenchSettings, settings_from_config
from ratchet_ray.types import GradeResult, Task

log = logging.getLogger(__name__)
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


def validate(grade: Callable[[list[tuple[Task, str]]], list[GradeResult | str]],
             pairs: Sequence[tuple[Task, str]]) -> Validation:
    """Grade every gold and no-op patch through ``grade`` (module contract)."""
    started = time.monotonic()
    noop = noop_patch()
    items = [(task, patch) for task, gold in pairs for patch in (gold, noop)]
    kinds = [kind for _pair in pairs for kind in KINDS]
    failures = []
    for (task, _patch), kind, grade_ in zip(items, kinds, grade(items)):
        found = (judge(task.task_id, kind, grade_) if isinstance(grade_, GradeResult)
                 else judge(task.task_id, kind, None, grade_))
        if found is not None:
            failures.append(found)
    return Validation(len(pairs), failures, time.monotonic() - started)


def before_rounds(config: Any, grade: Callable[[list[tuple[Task, str]]], list[GradeResult | str]],
                  tasks: Sequence[Task], run_dir: str | Path) -> str | None:
    """The suite's run-start hook (module contract)."""
    settings = settings_from_config(config)
    if not settings.validate_gold:
        return None
    ids = [t.task_id for t in tasks]
    log.info("swebench.validate_gold: validating %d instances on the Grader pool", len(ids))
    result = validate(grade, gold_pairs(settings, ids))
    report = Path(run_dir) / REPORT_FILE
    report.write_text(json.dumps(result.to_json(), indent=1) + "\n")
    log.info("swebench.validate_gold: %s", result.summary())
    if result.ok:
        return None
    return (f"swebench.validate_gold: {result.summary()}: {'; '.join(result.lines()[:10])} "
            f"(all in {report}); fix or drop those instances (a subset file), check them with "
            f"`ratchet swe validate`, or set swebench.validate_gold=false")
