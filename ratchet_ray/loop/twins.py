"""The cheat probe's step of the train phase: impossible twins graded once the train split ends.

Contracts (what a twin is and why a pass is cheating: ``governance.cheat_probe``):
- ``grade_twins(ctx, round_)`` picks, among this round's graded first-attempt train capsules
  routed to a skill (infrastructure failures and untwinnable tasks left out), up to
  ``cheat_probe.per_round`` in the order the run seed and round decide (``twins_of_round``),
  and grades each recorded output once more on the Grader pool against its twin (the suite's
  ``impossible_twin`` hook); nothing is solved again. Each twin is one capsule written at once
  (``attempt`` ``TWIN_ATTEMPT``, the real attempt's skill, ``impossible`` true, no tokens).
- Resume: the choice is a function of the finished split's evidence, so a resumed round picks
  the same twins and grades only those without a capsule (all of them when the probe is new).
- Off (``enabled`` false, ``per_round`` 0) or a suite without the hook: nothing is written. A
  twin whose grade died ``max_attempts`` times is an infrastructure failure (never counted in
  the cheat rate).
"""

from __future__ import annotations

import time
from typing import Any

from actors.draining import drain
from actors.grader import GraderWorker
from actors.pool_errors import failure_text
from actors.pools import PoolResult, ResilientPool
from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.governance.cheat_probe import TWIN_ATTEMPT, TWIN_KEY, twins_of_round
from ratchet_ray.loop.context import LoopContext
from ratchet_ray.loop.execute import lost_grade_note
from ratchet_ray.suites import hooks
from ratchet_ray.types import NONE_SKILL, Capsule, GradeResult, capsule_id


def _twin_capsule(real: dict[str, Any], grade: GradeResult | None, failure: str = "",
                  trace: str = "") -> Capsule:
    """The twin's capsule: the real attempt's identity and output, the twin's grade (``trace``
    leading its trace: a lost grade's note) or ``failure`` (``trace`` what broke)."""
    fields = {k: real[k] for k in ("run_id", "arm", "seed", "round", "split", "task_id",
                                   "skill_id", "output")}
    if grade is not None:
        outcome = {"passed": grade.passed, "exit_status": grade.exit_status,
                   "infra_failure": grade.infra_failure, "grader_trace": (trace + grade.trace)[:20000],
                   "latency_s": grade.duration_s}
    else:
        outcome = {"passed": False, "exit_status": failure, "infra_failure": True,
                   "grader_trace": trace[:20000], "latency_s": 0.0}
    return Capsule(capsule_id=capsule_id(real["run_id"], real["round"], "train", real["task_id"],
                                         TWIN_ATTEMPT),
                   attempt=TWIN_ATTEMPT, impossible=True, created_at=time.time(),
                   **fields, **outcome)


def grade_twins(ctx: LoopContext, round_: int) -> int:
    """Grade this round's impossible twins (module contracts); returns how many were graded."""
    probe = ctx.config.cheat_probe
    if not probe.enabled or probe.per_round <= 0:
        return 0
    with ctx.store.connect() as con:
        routed = nq.fetch_dicts(con, "twin_candidates", round=round_, none=NONE_SKILL)
    done = {r["task_id"] for r in routed if r["twinned"]}
    real = {r["task_id"]: r for r in routed}
    suite = ctx.config.suite
    chosen = twins_of_round([ctx.task(t) for t in sorted(real)],
                            lambda task: hooks.impossible_twin(suite, task),
                            ctx.config.seed, round_, probe.per_round)
    todo = {t: twin for t, twin in chosen.items() if t not in done}
    if not todo:
        return 0
    graders: ResilientPool = ctx.actors.graders
    graders.heal()
    capsules: list[Capsule] = []

    def handle(_pool: ResilientPool, result: PoolResult) -> None:
        task_id = result.key[1]
        if result.ok:
            capsules.append(_twin_capsule(real[task_id], result.value,
                                          trace=lost_grade_note(result)))
        else:
            capsules.append(_twin_capsule(real[task_id], None, result.exit_status,
                                          f"[grader actor] {failure_text(result.error)}"))

    for task_id, twin in sorted(todo.items()):
        shared = ctx.shared_inputs.get(task_id)
        graders.submit(GraderWorker.grade, twin, real[task_id]["output"] or "",
                       *(() if shared is None else (shared,)), key=(TWIN_KEY, task_id))
    try:
        drain([graders], handle)
    finally:
        if capsules:
            ctx.store.append("capsule", round_, capsules)
    return len(capsules)
