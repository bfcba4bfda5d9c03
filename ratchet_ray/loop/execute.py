"""Solve and grade one split of one round: Solver pool -> Grader pool -> Capsule, per task.

Contracts:
- ``run_split`` skips tasks whose capsule (deterministic ``types.capsule_id``) is already in the
  evidence (resume), fans the rest out with one ``ray.wait`` loop over both pools, and returns the
  split's ``BenchResult`` read back from the evidence, after checking that every task of the
  split has exactly one capsule.
- Every task yields a capsule even when something fails: a solver that failed (``exit_status``
  not ``"ok"``: the LLM backend broke, or Docker did while the SWE-bench agent worked, which is
  ``"InfraFailure"``), or a pool job that died ``max_attempts`` times, is recorded ungraded with
  ``exit_status`` = the exception's name, its message in ``grader_trace`` and
  ``infra_failure=True`` (it counts in pass@1, the Critic never sees it).
- Capsules and their ``llm_call`` rows are written in small parts (``FLUSH_EVERY`` capsules or
  ``FLUSH_AFTER_S`` seconds) so a killed driver loses at most one part's worth of work, which a
  resumed run redoes; ``EvidenceSink`` drops a capsule id it has already written.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Sequence

from actors.pools import PoolResult, ResilientPool, drain
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.llm.accounting import llm_call_row
from ratchet_ray.types import BenchResult, Capsule, GradeResult, NONE_SKILL, Task, capsule_id

FLUSH_EVERY = 8
FLUSH_AFTER_S = 5.0
log = logging.getLogger(__name__)


class EvidenceSink:
    """Buffers one round's capsules and llm_call rows and appends them as evidence parts."""

    def __init__(self, store: EvidenceStore, round_: int, known_ids: set[str],
                 flush_every: int = FLUSH_EVERY, flush_after_s: float = FLUSH_AFTER_S):
        self.store, self.round = store, round_
        self.known = set(known_ids)
        self.flush_every, self.flush_after_s = flush_every, flush_after_s
        self._capsules: list[Capsule] = []
        self._calls: list[dict[str, Any]] = []
        self._last_flush = time.monotonic()
        self.written = 0

    def add(self, capsule: Capsule, calls: Sequence[dict[str, Any]] = ()) -> bool:
        """Buffer one capsule (False, and nothing buffered, when its id is already recorded)."""
        if capsule.capsule_id in self.known:
            log.warning("capsule %s (%s) already recorded; dropping the duplicate",
                        capsule.capsule_id, capsule.task_id)
            return False
        self.known.add(capsule.capsule_id)
        self._capsules.append(capsule)
        self._calls.extend(calls)
        if len(self._capsules) >= self.flush_every:
            self.flush()
        return True

    def add_calls(self, calls: Sequence[dict[str, Any]]) -> None:
        self._calls.extend(calls)

    def flush_if_due(self) -> None:
        if time.monotonic() - self._last_flush >= self.flush_after_s:
            self.flush()

    def flush(self) -> None:
        # Capsules first: they are the unit of resume; a crash before the llm_call part only
        # under-counts tokens, it never duplicates a capsule.
        if self._capsules:
            self.store.append("capsule", self.round, self._capsules)
            self.written += len(self._capsules)
        if self._calls:
            self.store.append("llm_call", self.round, self._calls)
        self._capsules, self._calls = [], []
        self._last_flush = time.monotonic()


def call_rows(outcome: Any, *, run_id: str, round_: int) -> list[dict[str, Any]]:
    """``llm_call`` rows of one SolveOutcome (router and solver replies)."""
    rows = [llm_call_row(r, run_id=run_id, round_=round_, role="router")
            for r in outcome.router_replies]
    rows += [llm_call_row(r, run_id=run_id, round_=round_, role="solver")
             for r in outcome.solver_replies]
    if outcome.exit_status != "ok" and not outcome.solver_replies:
        rows.append(llm_call_row(None, run_id=run_id, round_=round_, role="solver", ok=False,
                                 error=f"{outcome.exit_status}: {outcome.error}"))
    return rows


def replies_of(outcome: Any) -> list[Any]:
    return [*outcome.router_replies, *outcome.solver_replies]


class SplitRunner:
    """Runs one split of one round through the pools; see the module contracts."""

    def __init__(self, *, run_id: str, arm: str, seed: int, store: EvidenceStore,
                 solvers: ResilientPool, graders: ResilientPool,
                 on_capsule: Callable[[Capsule], None] = lambda c: None):
        self.run_id, self.arm, self.seed = run_id, arm, seed
        self.store, self.solvers, self.graders = store, solvers, graders
        self.on_capsule = on_capsule

    def _capsule(self, task: Task, split: str, round_: int, *, outcome: Any = None,
                 grade: GradeResult | None = None, failure: str = "",
                 failure_trace: str = "") -> Capsule:
        replies = replies_of(outcome) if outcome is not None else []
        passed = bool(grade and grade.passed and not failure)
        if failure:
            exit_status, infra = failure, True
        else:
            exit_status, infra = grade.exit_status, grade.infra_failure
        return Capsule(
            capsule_id=capsule_id(self.run_id, round_, split, task.task_id), run_id=self.run_id,
            arm=self.arm, seed=self.seed, round=round_, split=split, task_id=task.task_id,
            skill_id=outcome.skill_id if outcome is not None else NONE_SKILL, passed=passed,
            exit_status=exit_status, infra_failure=infra,
            output=outcome.output if outcome is not None else "",
            grader_trace=(grade.trace if grade else failure_trace)[:20000],
            input_tokens=sum(r.input_tokens for r in replies),
            output_tokens=sum(r.output_tokens for r in replies),
            latency_s=(outcome.latency_s if outcome is not None else 0.0)
            + (grade.duration_s if grade else 0.0),
            cost_usd=sum(r.cost_usd for r in replies))

    def run(self, tasks: Sequence[Task], split: str, round_: int) -> BenchResult:
        known = self.store.capsule_ids(round_)
        sink = EvidenceSink(self.store, round_, known)
        todo = [t for t in tasks if capsule_id(self.run_id, round_, split, t.task_id) not in known]
        if len(todo) < len(tasks):
            log.info("round %d %s: %d of %d tasks already recorded, resuming with the rest",
                     round_, split, len(tasks) - len(todo), len(tasks))
        outcomes: dict[str, Any] = {}

        def record(capsule: Capsule, calls: Sequence[dict[str, Any]]) -> None:
            if sink.add(capsule, calls):
                self.on_capsule(capsule)

        def handle(pool: ResilientPool, result: PoolResult) -> None:
            task: Task = result.item
            if pool is self.solvers:
                outcome = result.value
                if not result.ok:  # the solver actor died max_attempts times on this task
                    record(self._capsule(task, split, round_, failure=result.exit_status,
                                         failure_trace=f"[solver actor] {result.error}"), [])
                elif outcome.exit_status != "ok":  # a failed attempt has nothing to grade
                    calls = call_rows(outcome, run_id=self.run_id, round_=round_)
                    record(self._capsule(
                        task, split, round_, outcome=outcome, failure=outcome.exit_status,
                        failure_trace=f"[solver] {outcome.exit_status}: {outcome.error}"), calls)
                else:
                    outcomes[task.task_id] = outcome
                    self.graders.submit("grade", task, outcome.output)
                return
            outcome = outcomes.pop(task.task_id)
            calls = call_rows(outcome, run_id=self.run_id, round_=round_)
            if result.ok:
                record(self._capsule(task, split, round_, outcome=outcome, grade=result.value),
                       calls)
            else:
                record(self._capsule(task, split, round_, outcome=outcome,
                                     failure=result.exit_status,
                                     failure_trace=f"[grader actor] {result.error}"), calls)

        for task in todo:
            self.solvers.submit("run", task, split, round_)
        try:
            drain([self.solvers, self.graders], handle, tick=sink.flush_if_due)
        finally:
            sink.flush()  # even on an error, keep what was graded (resume skips it)
        return bench_from_evidence(self.store, round_, split, [t.task_id for t in tasks])


def bench_from_evidence(store: EvidenceStore, round_: int, split: str,
                        task_ids: Sequence[str]) -> BenchResult:
    """Pass@1 of ``split`` in ``round_`` from the capsules; every task exactly once or an error."""
    con = store.connect()
    try:
        rows = con.execute("SELECT task_id, count(*), bool_or(passed), bool_or(infra_failure) "
                           "FROM capsule WHERE round = ? AND split = ? GROUP BY task_id",
                           [round_, split]).fetchall()
    finally:
        con.close()
    counts = {r[0]: r[1] for r in rows}
    twice = sorted(t for t, n in counts.items() if n != 1)
    missing = sorted(set(task_ids) - set(counts))
    if twice or missing:
        raise RuntimeError(f"round {round_} {split}: evidence holds {len(twice)} task(s) more than "
                           f"once (e.g. {twice[:3]}) and lacks {len(missing)} "
                           f"(e.g. {missing[:3]}); "
                           f"inspect {store.root / 'capsule'}")
    wanted = set(task_ids)
    return BenchResult(split=split, round=round_, total=len(wanted),
                       resolved=sum(1 for r in rows if r[0] in wanted and r[2]),
                       infra_failures=sum(1 for r in rows if r[0] in wanted and r[3]))
