"""Gold-patch validation: does every instance of a run grade as SWE-bench says it must, and
the same way every time?

Contracts:
- Per instance and repeat, two grades on the real harness and the run's images: the gold
  ``patch`` must resolve, a no-op patch (``noop_patch``: one new file, as an empty patch gets no
  container) must not, both without an infrastructure failure.
- ``repeat`` N >= 1: every patch graded N times, all at once; repeat k > 0 behind one header
  line (``repeat_patch``): the same tree, but a patch the grader's report cache cannot answer.
- ``validate(grade, pairs, repeat=1)`` grades through ``grade`` (``loop.grade_pool.grade_all``:
  each ``GradeResult`` or a string naming why the pool could not grade it) and returns a
  ``Validation``: every ``Outcome`` in submission order and one ``Failure`` per instance and
  kind that failed any repeat (``flaky`` when some passed or the statuses differ); it never
  raises for a failing instance. ``ratchet swe validate`` (``loop.swebench_validation``)
  records every outcome as ``validation`` evidence (``evidence_rows``).
- ``before_rounds(config, grade, tasks, run_dir)``, the suite's run-start hook: with
  ``swebench.validate_gold``, validates the run's instances (one repeat), writes
  ``swebench_validation.json`` in the run dir and returns the message that stops the run when
  any fails; else None.
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


def repeat_patch(patch: str, repeat: int) -> str:
    """``patch`` for repeat ``repeat`` (module contract): itself for 0, else behind one header
    line that git and patch skip (it starts with none of ``diff``, ``---``, ``+++``, ``@@``,
    ``+``, ``-``), so the grader grades the same tree afresh instead of reusing a report."""
    return patch if repeat == 0 else f"ratchet swe validate: repeat {repeat}\n{patch}"


@dataclass
class Failure:
    instance_id: str
    kind: str
    """``gold`` or ``noop``."""
    status: str
    """The first failed grade's ``exit_status`` (``ok`` for a no-op patch that resolved)."""
    reason: str
    failed: int = 1
    """How many of the ``repeats`` grades of this patch failed."""
    repeats: int = 1
    statuses: list[str] = field(default_factory=list)
    """Every distinct ``exit_status`` of this patch's grades, sorted."""

    @property
    def flaky(self) -> bool:
        """Failed some repeats and passed others, or ended with different statuses: the
        verdict of this instance is not stable."""
        return 0 < self.failed < self.repeats or len(self.statuses) > 1

    def line(self) -> str:
        varied = f"; statuses {', '.join(self.statuses)}" if len(self.statuses) > 1 else ""
        times = "" if self.repeats == 1 else (
            f" (failed {self.failed} of {self.repeats} repeats{': flaky' if self.flaky else ''}"
            f"{varied})")
        return f"FAIL {self.instance_id} [{self.kind}] {self.status}: {self.reason.rstrip()}{times}"


@dataclass
class Outcome:
    """One grade of one patch of one instance (a row of the ``validation`` evidence)."""

    instance_id: str
    kind: str
    repeat: int
    passed: bool
    exit_status: str
    infra_failure: bool
    duration_s: float
    trace: str
    failure: Failure | None
    """Why this grade is not what the kind of patch must give; None: it is."""
    node: str = ""
    """The Ray node that graded it (filled by the caller when it knows)."""


@dataclass
class Validation:
    checked: int
    """Instances validated."""
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    nodes: list[dict] = field(default_factory=list)
    """The image-cache report of each Docker node (``image_cache.node_report``)."""
    repeat: int = 1
    outcomes: list[Outcome] = field(default_factory=list)
    mutants: dict[str, Any] = field(default_factory=dict)
    """Instance id -> mutants its gold record validated to fail under gold (or why unknown)."""

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def failed_instances(self) -> list[str]:
        return sorted({f.instance_id for f in self.failures})

    @property
    def flaky_instances(self) -> list[str]:
        return sorted({f.instance_id for f in self.failures if f.flaky})

    def gold_resolved(self) -> dict[str, int]:
        """Instance id -> how many of its ``repeat`` gold grades resolved."""
        counts: dict[str, int] = {}
        for o in self.outcomes:
            if o.kind == "gold":
                counts[o.instance_id] = counts.get(o.instance_id, 0) + int(o.failure is None)
        return counts

    def summary(self) -> str:
        good = self.checked - len(self.failed_instances)
        repeats = "" if self.repeat == 1 else (
            f" on all {self.repeat} repeats; {len(self.flaky_instances)} flaky")
        return (f"{good}/{self.checked} instances valid (gold resolves, no-op does not"
                f"{repeats}) in {self.seconds:.0f}s; {len(self.failures)} failures")

    def lines(self) -> list[str]:
        return [f.line() for f in self.failures]

    def quarantine(self) -> dict[str, str]:
        """Instance id -> why it is quarantined: every instance with a failure (module contract)."""
        reasons: dict[str, list[str]] = {}
        for f in self.failures:
            times = "" if f.repeats == 1 else f" in {f.failed} of {f.repeats} repeats"
            what = ("gold patch not resolved" if f.kind == "gold"
                    else "no-op patch resolved" if f.status == "ok" else "no-op patch failed")
            reasons.setdefault(f.instance_id, []).append(f"{what}{times} ({f.status})")
        return {i: "; ".join(r) for i, r in sorted(reasons.items())}

    def to_json(self) -> dict:
        return {"checked": self.checked, "ok": self.ok, "seconds": round(self.seconds, 1),
                "repeat": self.repeat, "failures": [asdict(f) for f in self.failures],
                "flaky": self.flaky_instances, "gold_resolved": self.gold_resolved(),
                "mutants": self.mutants, "nodes": self.nodes}


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
    """(task, gold patch) of the instances (``ids``: these only, in this order; an unknown id
    raises ``ValueError``)."""
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


def _outcome(task_id: str, kind: str, repeat: int, grade: GradeResult | str) -> Outcome:
    if isinstance(grade, GradeResult):
        return Outcome(task_id, kind, repeat, grade.passed, grade.exit_status, grade.infra_failure,
                       grade.duration_s, grade.trace, judge(task_id, kind, grade))
    return Outcome(task_id, kind, repeat, False, "grader_died", True, 0.0, str(grade),
                   judge(task_id, kind, None, str(grade)))


def _failures(outcomes: Sequence[Outcome], repeat: int) -> list[Failure]:
    """One ``Failure`` per (instance, kind) that failed any repeat: the first failed grade's
    status and reason, with how many repeats failed."""
    found: dict[tuple[str, str], Failure] = {}
    statuses: dict[tuple[str, str], set[str]] = {}
    for outcome in outcomes:
        key = (outcome.instance_id, outcome.kind)
        statuses.setdefault(key, set()).add(outcome.exit_status)
        if outcome.failure is None:
            continue
        if key in found:
            found[key].failed += 1
        else:
            found[key] = Failure(outcome.instance_id, outcome.kind, outcome.failure.status,
                                 outcome.failure.reason, 1, repeat)
    for key, failure in found.items():
        failure.statuses = sorted(statuses[key])
    return list(found.values())


def validate(grade: Callable[[list[tuple[Task, str]]], list[GradeResult | str]],
             pairs: Sequence[tuple[Task, str]], repeat: int = 1) -> Validation:
    """Grade every gold and no-op patch ``repeat`` times through ``grade`` (module contract)."""
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    started = time.monotonic()
    noop = noop_patch()
    keys = [(task, kind, k) for k in range(repeat) for task, _gold in pairs for kind in KINDS]
    golds = {task.task_id: gold for task, gold in pairs}
    items = [(task, repeat_patch(golds[task.task_id] if kind == "gold" else noop, k))
             for task, kind, k in keys]
    outcomes = [_outcome(task.task_id, kind, k, result)
                for (task, kind, k), result in zip(keys, grade(items))]
    return Validation(len(pairs), _failures(outcomes, repeat), time.monotonic() - started,
                      repeat=repeat, outcomes=outcomes)


def evidence_rows(validation: Validation, run_id: str, images: dict[str, str],
                  digests: dict[tuple[str, str], str]) -> list[dict[str, Any]]:
    """One ``validation`` evidence row per outcome: ``images`` maps an instance to its image
    name, ``digests`` a (node, image name) to the image's id on that node (absent: unknown)."""
    rows = []
    for o in validation.outcomes:
        image = images.get(o.instance_id, "")
        rows.append({
            "run_id": run_id, "round": 0, "instance_id": o.instance_id, "patch": o.kind,
            "repeat": o.repeat, "passed": o.passed, "exit_status": o.exit_status,
            "infra_failure": o.infra_failure, "valid": o.failure is None,
            "duration_s": round(o.duration_s, 3), "image": image,
            "image_digest": digests.get((o.node, image)), "node": o.node or None,
            "trace": _first_lines(o.trace, 2000)})
    return rows


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
