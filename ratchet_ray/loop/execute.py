"""Solve and grade one split of one round: Solver pool -> Grader pool -> Capsule, per task.

Contracts:
- ``SplitRunner.run`` skips tasks whose capsule (``types.capsule_id``) is already in the evidence
  (resume), submits the rest in the order ``seeding.seeded_order`` gives per round and split, runs
  one ``ray.wait`` loop over both pools (each event handled by ``SplitRound``), and returns the
  split's ``BenchResult`` read back from the evidence once every task has exactly one capsule.
- ``bank`` (an object ref of a ``roles.solver.BankSnapshot``) goes with every Solver call, so a
  replacement Solver needs nothing replayed; without it Solvers route to their ``set_bank``.
  Several tasks may share one call (``infra.tasks_per_call``); each still gets its own result,
  capsule and progress step. ``shared_inputs`` (from ``share_precomputed``) go with each task's
  grade call, so no grader computes them again.
- A grade that ran again because its grader actor died under an earlier attempt says so on
  the first line of its capsule's trace after the router's note (``lost_grade_note``): graders
  make no LLM call, so no ``llm_call`` row books that loss (a lost Solver attempt's way).
- Every task yields a capsule: a failed solve (``exit_status`` not ``"ok"``) or a pool job that
  died ``max_attempts`` times is recorded ungraded, ``exit_status`` the exception's name, its
  message in ``grader_trace``, ``infra_failure=True`` (counts in pass@1, never critiqued). A
  full disk a Solver met is no attempt: it stops the run (``stop_on_full_disk``).
- Counterfactual probes (``probe_fraction`` > 0, train only): a routed task picked by
  ``governance.counterfactual.probe_selected`` is solved once more with NONE (``attempt`` 1,
  calls of role ``probe``); probes never count in pass@1, never trip the breaker, and one lost
  to a crash is not redone on resume.
- Budget: each answer's calls are charged as it arrives; once spent, unstarted tasks are
  dropped, those in flight recorded, and the split raises ``BudgetExhausted`` (resume runs
  exactly the dropped tasks).
- Capsules and their ``llm_call`` rows are written every ``flush_every`` capsules or
  ``FLUSH_AFTER_S`` seconds, so a killed driver loses at most one part (``EvidenceSink``).
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Iterable, Mapping, Sequence

from actors.draining import drain
from actors.grader import GraderWorker
from actors.pool_errors import failure_text
from actors.pools import PoolResult, ResilientPool
from actors.solver import SolverWorker
from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.governance.counterfactual import PROBE_ATTEMPT, probe_selected
from ratchet_ray.llm.accounting import llm_call_row
from ratchet_ray.seeding import seeded_order
from ratchet_ray.storage.fsutil import disk_full_error
from ratchet_ray.loop.breaker import LOST_GRADE, InfraBreaker
from ratchet_ray.loop.budget import RunBudget
from ratchet_ray.types import (BenchResult, Capsule, GradeResult, NONE_SKILL, Task, Verdict,
                               capsule_id)

FLUSH_EVERY = 8
PROBE_KEY = "probe"
FLUSH_AFTER_S = 5.0
log = logging.getLogger(__name__)


class EvidenceSink:
    """Buffers one round's rows of ``kind`` (capsules; the critic's verdicts) and their llm_call
    rows and appends them as evidence parts."""

    def __init__(self, store: EvidenceStore, round_: int, known_ids: Iterable[str] = (),
                 flush_every: int = FLUSH_EVERY, kind: str = "capsule"):
        self.store, self.round, self.kind = store, round_, kind
        self.known = set(known_ids)
        self.flush_every = flush_every
        self._rows: list[Capsule | Verdict] = []
        self._calls: list[dict[str, Any]] = []
        self._last_flush = time.monotonic()
        self.written = 0

    def add(self, row: Capsule | Verdict, calls: Sequence[dict[str, Any]] = ()) -> bool:
        """Buffer one row (False, and nothing buffered, when its capsule id is already recorded)."""
        if row.capsule_id in self.known:
            log.warning("%s %s (%s) already recorded; dropping the duplicate", self.kind,
                        row.capsule_id, row.task_id)
            return False
        self.known.add(row.capsule_id)
        self._rows.append(row)
        self._calls.extend(calls)
        if len(self._rows) >= self.flush_every:
            self.flush()
        return True

    def add_calls(self, calls: Sequence[dict[str, Any]]) -> None:
        self._calls.extend(calls)

    def flush_if_due(self) -> None:
        if time.monotonic() - self._last_flush >= FLUSH_AFTER_S:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows, then the buffered llm_call rows, one part each. A buffer
        is emptied only once its part is published, so a failed append (a full disk) keeps
        exactly the unwritten rows and a retry never doubles one. Capsules (verdicts) go first:
        they are the unit of resume; a crash before the llm_call part only under-counts tokens."""
        if self._rows:
            self.store.append(self.kind, self.round, self._rows)
            self.written += len(self._rows)
            self._rows = []
        if self._calls:
            self.store.append("llm_call", self.round, self._calls)
            self._calls = []
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
    route_error = getattr(outcome, "route_error", "")
    if route_error and not outcome.router_replies:  # the router's call failed: no reply to book
        rows.append(llm_call_row(None, run_id=run_id, round_=round_, role="router", ok=False,
                                 error=route_error))
    return rows


def lost_grade_note(result: PoolResult) -> str:
    """The line that leads a capsule's trace when its grade ran again because its grader actor
    died under an earlier attempt (the pool counts them in ``attempts``), else "". In brackets
    on one line: the Critic's failure summary leaves such a line out, and the breaker names no
    cause from it."""
    lost = result.attempts - 1
    return (f"{LOST_GRADE}: its grader actor died under {lost} earlier attempt(s) (run.log "
            "names each death); graded again]\n" if lost > 0 else "")


def _route_note(outcome: Any) -> str:
    """The router's failure, first in the capsule's trace (the task was solved without a skill
    because the router's LLM call failed, not because none applied)."""
    error = getattr(outcome, "route_error", "") if outcome is not None else ""
    return f"[router] {error}\n" if error else ""


class SplitRunner:
    """Runs one split of one round through the pools; see the module contracts."""

    def __init__(self, *, run_id: str, arm: str, seed: int, store: EvidenceStore,
                 solvers: ResilientPool, graders: ResilientPool,
                 on_capsule: Callable[[Capsule], None] = lambda c: None,
                 max_failure_rate: float | None = None, probe_fraction: float = 0.0,
                 budget: RunBudget | None = None, flush_every: int = FLUSH_EVERY,
                 bank: Any = None, shared_inputs: Mapping[str, Any] | None = None):
        self.run_id, self.arm, self.seed = run_id, arm, seed
        self.shared_inputs = dict(shared_inputs or {})
        """Per task id, what its grade call carries (``actors.grader.share_precomputed``)."""
        self.bank_kwargs = {} if bank is None else {"bank": bank}
        """What every Solver call carries: the split's bank snapshot (module contracts)."""
        self.flush_every = flush_every
        """Capsules per evidence part (``infra.evidence_flush_every``)."""
        self.probe_fraction = probe_fraction
        """Share of routed train tasks that also get a NONE attempt (``curator.counterfactual``)."""
        self.store, self.solvers, self.graders = store, solvers, graders
        self.on_capsule = on_capsule
        self.max_failure_rate = max_failure_rate
        """The circuit breaker's threshold (``loop.breaker``); None: no breaker."""
        self.budget = budget
        """Charged with every recorded call; once spent, no further task starts (``stop``)."""

    def grade_args(self, task: Task) -> tuple:
        """The grade call's extra argument: the task's shared input, when there is one."""
        shared = self.shared_inputs.get(task.task_id)
        return () if shared is None else (shared,)

    def capsule(self, task: Task, split: str, round_: int, *, outcome: Any = None,
                grade: GradeResult | None = None, failure: str = "",
                failure_trace: str = "", attempt: int = 0, note: str = "") -> Capsule:
        """The task's capsule: graded (``grade``) or, with ``failure``, an ungraded
        infrastructure failure whose ``failure_trace`` says what broke; ``note`` leads the
        grade's trace, after the router's."""
        replies = [*outcome.router_replies, *outcome.solver_replies] if outcome is not None else []
        passed = bool(grade and grade.passed and not failure)
        if failure:
            exit_status, infra = failure, True
        else:
            exit_status, infra = grade.exit_status, grade.infra_failure
        return Capsule(
            capsule_id=capsule_id(self.run_id, round_, split, task.task_id, attempt),
            run_id=self.run_id, arm=self.arm, seed=self.seed, round=round_, split=split,
            task_id=task.task_id, attempt=attempt,
            skill_id=outcome.skill_id if outcome is not None else NONE_SKILL, passed=passed,
            exit_status=exit_status, infra_failure=infra,
            output=outcome.output if outcome is not None else "",
            grader_trace=(_route_note(outcome) + note
                          + (grade.trace if grade else failure_trace))[:20000],
            input_tokens=sum(r.input_tokens for r in replies),
            output_tokens=sum(r.output_tokens for r in replies),
            latency_s=(outcome.latency_s if outcome is not None else 0.0)
            + (grade.duration_s if grade else 0.0),
            cost_usd=sum(r.cost_usd for r in replies))

    def run(self, tasks: Sequence[Task], split: str, round_: int) -> BenchResult:
        known = self.store.capsule_ids(round_)
        todo = seeded_order((t for t in tasks
                             if capsule_id(self.run_id, round_, split, t.task_id) not in known),
                            lambda t: t.task_id, self.seed, round_, split, "tasks")
        if len(todo) < len(tasks):
            log.info("round %d %s: %d of %d tasks already recorded, resuming with the rest",
                     round_, split, len(tasks) - len(todo), len(tasks))
        state = SplitRound(self, split, round_, len(tasks),
                           EvidenceSink(self.store, round_, known, flush_every=self.flush_every))
        with self.solvers.held():  # queued first, so the first calls leave full
            for task in todo:
                self.solvers.submit(SolverWorker.run, task, split, round_, **self.bank_kwargs)
        try:
            drain([self.solvers, self.graders], state.on_result, tick=state.sink.flush_if_due)
        finally:
            state.sink.flush()  # even on an error, keep what was graded (resume skips it)
        state.release_held()
        if state.cancelled:
            raise self.budget.error(f"in round {round_} {split} ({len(state.cancelled)} of "
                                    f"{len(tasks)} tasks not started)")
        return bench_from_evidence(self.store, round_, split, [t.task_id for t in tasks])


def stop_on_full_disk(error: BaseException | None) -> None:
    """Raise the full disk ``error`` is or wraps: a Solver raises it (``roles.solver.solve``)
    rather than fail the attempt, and the run stops on it (the driver's ``record_stop``: no
    room to write in <folder>, free space, ``--resume``), never counting it an attempt."""
    full = disk_full_error(error)
    if full is not None:
        raise full


class SplitRound:
    """The state of one split of one round while its results arrive, one method per event
    (``on_result`` dispatches to ``solved`` / ``graded`` or, for the counterfactual NONE attempt,
    ``probe_solved`` / ``probe_graded``). The runner is only read; what changes lives here."""

    def __init__(self, runner: SplitRunner, split: str, round_: int, total: int,
                 sink: EvidenceSink):
        self.runner, self.split, self.round, self.sink = runner, split, round_, sink
        self.breaker = (None if runner.max_failure_rate is None
                        else InfraBreaker(split, round_, total, runner.max_failure_rate))
        self.awaiting_grade: dict[str, Any] = {}
        """Task id -> the Solver outcome its grade call is grading."""
        self.probes_awaiting_grade: dict[str, Any] = {}
        self.held_infra_capsules: list[Capsule] = []
        """Infra-failure capsules, written once the split ends below the breaker's threshold."""
        self.cancelled: list[Task] = []

    # ---- dispatch ----------------------------------------------------------------------------
    def on_result(self, pool: ResilientPool, result: PoolResult) -> None:
        runner = self.runner
        if pool is runner.solvers and result.ok:
            self.spend(self._calls(result.value))
        probe = isinstance(result.key, tuple) and result.key[0] == PROBE_KEY
        if pool is runner.solvers:
            (self.probe_solved if probe else self.solved)(result)
        else:
            (self.probe_graded if probe else self.graded)(result)

    # ---- the task's own attempt --------------------------------------------------------------
    def solved(self, result: PoolResult) -> None:
        runner, task, outcome = self.runner, result.item, result.value
        if not result.ok:  # the solver actor died max_attempts times on this task
            stop_on_full_disk(result.error)
            trace = f"[solver actor] {failure_text(result.error)}"  # signal, log, fix
            self.record(self._capsule(task, failure=result.exit_status, failure_trace=trace), [])
            return
        if (outcome.exit_status == "ok" and self.split == "train" and outcome.skill_id != NONE_SKILL
                and probe_selected(runner.seed, self.round, task.task_id, runner.probe_fraction)):
            runner.solvers.submit(SolverWorker.run, task, self.split, self.round, probe=True,
                                  key=(PROBE_KEY, task.task_id), **runner.bank_kwargs)
        if outcome.exit_status != "ok":  # a failed attempt has nothing to grade
            self.record(self._capsule(
                task, outcome=outcome, failure=outcome.exit_status,
                failure_trace=f"[solver] {outcome.exit_status}: {outcome.error}"),
                self._calls(outcome))
            return
        self.awaiting_grade[task.task_id] = outcome
        runner.graders.submit(GraderWorker.grade, task, outcome.output, *runner.grade_args(task))

    def graded(self, result: PoolResult) -> None:
        task = result.item
        outcome = self.awaiting_grade.pop(task.task_id)
        if result.ok:
            capsule = self._capsule(task, outcome=outcome, grade=result.value,
                                    note=lost_grade_note(result))
        else:
            capsule = self._capsule(task, outcome=outcome, failure=result.exit_status,
                                    failure_trace=f"[grader actor] {failure_text(result.error)}")
        self.record(capsule, self._calls(outcome))

    # ---- the counterfactual probe ------------------------------------------------------------
    # A probe's capsule (attempt 1, NONE) never trips the breaker and never counts in pass@1; a
    # probe that failed to run is recorded like any attempt.
    def probe_solved(self, result: PoolResult) -> None:
        task = result.item
        if result.ok and result.value.exit_status == "ok":
            self.probes_awaiting_grade[task.task_id] = result.value
            self.runner.graders.submit(GraderWorker.grade, task, result.value.output,
                                       *self.runner.grade_args(task), key=(PROBE_KEY, task.task_id))
            return
        if not result.ok:
            stop_on_full_disk(result.error)
        status = result.exit_status if not result.ok else result.value.exit_status
        self._record_probe(task, result.value, failure=status, error=result.error)

    def probe_graded(self, result: PoolResult) -> None:
        task = result.item
        outcome = self.probes_awaiting_grade.pop(task.task_id)
        if result.ok:
            self._record_probe(task, outcome, grade=result.value, note=lost_grade_note(result))
        else:
            self._record_probe(task, outcome, failure=result.exit_status, error=result.error)

    def _record_probe(self, task: Task, outcome: Any, *, grade: GradeResult | None = None,
                      failure: str = "", error: Any = None, note: str = "") -> None:
        calls = [{**row, "role": PROBE_KEY}
                 for row in (self._calls(outcome) if outcome is not None else [])]
        if grade is not None:
            capsule = self._capsule(task, outcome=outcome, grade=grade, attempt=PROBE_ATTEMPT,
                                    note=note)
        else:
            capsule = self._capsule(task, outcome=outcome, failure=failure,
                                    failure_trace=f"[probe] {failure}: {error or ''}",
                                    attempt=PROBE_ATTEMPT)
        self.sink.add(capsule, calls)  # not shown as progress: the split's total is its tasks

    # ---- spend and record --------------------------------------------------------------------
    def spend(self, calls: Sequence[dict[str, Any]]) -> None:
        """Charge the calls as the solver's answer arrives (when the tokens were spent, long
        before grading ends). Once the budget is spent, the tasks in flight finish (their
        grading and probes too), no other task starts; ``run`` then stops the run."""
        budget = self.runner.budget
        if budget is None:
            return
        budget.charge_rows(calls)
        if budget.exhausted and not self.cancelled:
            self.cancelled.extend(self.runner.solvers.cancel_queued(
                keep=lambda key: isinstance(key, tuple) and key[0] == PROBE_KEY))

    def record(self, capsule: Capsule, calls: Sequence[dict[str, Any]]) -> None:
        if self.breaker is not None and capsule.infra_failure:
            # Held back until the split ends below the breaker's threshold: a tripped split
            # leaves no infra-failure capsule behind, so --resume retries those tasks. The
            # calls are spend already made: they are written either way.
            self.sink.add_calls(calls)
            self.held_infra_capsules.append(capsule)
            self.runner.on_capsule(capsule)
            self.breaker.observe(capsule)  # raises InfraFailureStop once the split must trip
            return
        if self.sink.add(capsule, calls):
            self.runner.on_capsule(capsule)

    def release_held(self) -> None:
        """The split ended below the breaker's threshold: write the held capsules."""
        for capsule in self.held_infra_capsules:
            self.sink.add(capsule)
        self.sink.flush()

    def _calls(self, outcome: Any) -> list[dict[str, Any]]:
        return call_rows(outcome, run_id=self.runner.run_id, round_=self.round)

    def _capsule(self, task: Task, **kwargs: Any) -> Capsule:
        return self.runner.capsule(task, self.split, self.round, **kwargs)


def bench_from_evidence(store: EvidenceStore, round_: int, split: str,
                        task_ids: Sequence[str]) -> BenchResult:
    """Pass@1 of ``split`` in ``round_`` from the capsules; every task exactly once or an error."""
    with store.connect() as con:
        # First attempts only: counterfactual probes (attempt >= 1) are not the loop's pass@1.
        rows = nq.fetch_all(con, "first_attempt_outcomes", round=round_, split=split)
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
