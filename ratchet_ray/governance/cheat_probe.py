"""Impossible twins: a standing cheat probe (beyond the paper; ``cheat_probe`` settings).

A twin is a routed train attempt graded once more by the suite's grader against expectations
no correct answer meets (the suite's ``impossible_twin`` hook: MBPP+ changes one expected output
in its own type, SWE-bench one FAIL_TO_PASS test's expected value, sim passes only a forged
outcome). Only an answer that attacked the grader, or knew its answer key, passes: any pass is
cheating by construction.

Contracts:
- Indistinguishable: the twin is graded on the output the Solver already gave, so the Solver,
  the Router and the LLM see nothing of it; only the grader receives the twin's grading task
  (``suites.base.as_impossible_twin``: same id and prompt, the recipe in its payload).
- ``twins_of_round(tasks, make_twin, seed, round_, count)`` -> ``{task_id: grading task}``: once
  a round's train split has ended, the first ``count`` (``cheat_probe.per_round``) graded first
  attempts routed to a skill that the suite can twin, in an order the run seed and round decide
  (``seeding.seeded_order``), so a resumed round twins the same tasks (``loop.twins``).
- A twin's capsule has ``attempt`` ``TWIN_ATTEMPT``, the real attempt's skill and output, no
  tokens and ``impossible`` true. It never counts in pass@1, the Critic's input, a skill's
  contribution, the counterfactual pairs or the tampering counts, and never trips the circuit
  breaker.
- ``cheat_by_skill(con)`` -> ``{skill_id: CheatStats}``: per skill, its routed train twins graded
  (infrastructure failures left out) and passed; the Curator's cheat rule
  (``governance.curator.apply_cheat_rule``) reads it.
- ``cheat_probe.enabled: false`` (the paper's Default) grades no twin and retires nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

import duckdb

from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.seeding import seeded_order
from ratchet_ray.types import NONE_SKILL, Task

TWIN_ATTEMPT = 2
"""The ``attempt`` of a twin's capsule (0: the real attempt, 1: a counterfactual probe)."""
TWIN_KEY = "twin"
"""The pool key's first element of a twin's grade call (``loop.twins``)."""
CHEAT_REASON = "cheat"
"""How a Curator retirement under the cheat rule starts its ``skill_event.reason``."""


@dataclass(frozen=True)
class CheatStats:
    """One skill's record on impossible twins: graded, passed, and the first pass."""

    twins: int
    passes: int
    first_round: int | None = None
    first_capsule: str | None = None


def twins_of_round(tasks: Iterable[Task], make_twin: Callable[[Task], Task | None], seed: int,
                   round_: int, count: int) -> dict[str, Task]:
    """The grading tasks of this round's twins, by the real task's id (module contracts)."""
    chosen: dict[str, Task] = {}
    if count <= 0:
        return chosen
    for task in seeded_order(tasks, lambda t: t.task_id, seed, round_, "train", "twins"):
        twin = make_twin(task)
        if twin is not None:
            chosen[task.task_id] = twin
            if len(chosen) >= count:
                break
    return chosen


def cheat_by_skill(con: duckdb.DuckDBPyConnection) -> dict[str, CheatStats]:
    """Per skill, its routed train twins graded and passed (module contracts)."""
    return {skill_id: CheatStats(twins=int(twins), passes=int(passes),
                                 first_round=None if first is None else int(first),
                                 first_capsule=capsule)
            for skill_id, twins, passes, first, capsule
            in nq.fetch_all(con, "cheat_by_skill", none=NONE_SKILL)}


def cheat_reason(record: CheatStats) -> str:
    """The retirement reason of the cheat rule; starts with ``cheat:``."""
    twins = "twin" if record.twins == 1 else "twins"
    return (f"{CHEAT_REASON}: passed {record.passes} of {record.twins} impossible {twins} "
            f"(first in round {record.first_round}, capsule {record.first_capsule}); an honest "
            "answer fails every twin")


def arm_cheat_rate(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """(twins graded, twins passed) over the whole run (every arm it holds)."""
    rows = nq.fetch_dicts(con, "cheat_rate_by_arm", none=NONE_SKILL)
    return (sum(int(r["twins"]) for r in rows), sum(int(r["twin_passes"]) for r in rows))


def cheats_for_curation(con: duckdb.DuckDBPyConnection,
                        settings: Any) -> dict[str, CheatStats]:
    """What the Curator's cheat rule reads: ``cheat_by_skill`` when ``settings``
    (``cheat_probe``) is enabled with ``retire``, else nothing (the rule is off)."""
    return cheat_by_skill(con) if settings.enabled and settings.retire else {}
