"""Mutants whose failure spreads: a canary session that disagrees with the real one because of
the test code, not the patch (docs/grading.md, "Gold records").

A test can run another (sympy's ``test_Permutation_subclassing`` calls ``test_Permutation``
with a module global swapped): a mutant planted there fails other graded tests under any fix,
which ``differential.judge_canaries`` calls ``results_mismatch``. Nothing is relaxed: such a
session is checked by a referee, the gold patch with the same mutant alone.

``settle(verdict, real, canaries, instance, referee, forget, replace, judge, log)``: the verdict
after at most ``ROUNDS`` rounds of referees; unchanged unless it is ``results_mismatch`` and
every canary session at fault only ``disagree``s. Then ``referee(mutant)`` runs; when every
referee agrees, ``forget(spread)`` drops those mutants from the stored record and returns it,
``replace(record, n)`` runs ``n`` fresh canary sessions and ``judge(canaries)`` judges the kept
and new ones together; else the verdict stands. Agreeing referees' mutants are forgotten even
when another did not agree.
"""

from __future__ import annotations

from typing import Any, Callable

from ratchet_ray.suites.swebench.proof.differential import (
    MISSING, Session, differing, finding, graded, planted)
from ratchet_ray.suites.swebench.proof.gold import GoldRecord
from ratchet_ray.suites.swebench.proof.mutants import Mutant
from ratchet_ray.types import GradeResult

ROUNDS = 2
"""Referee rounds per grade: each drops at least one mutant for good, so a record converges."""

Canary = tuple[Mutant, Session]


def same_outcomes(canary: Session, referee: Session, instance: dict[str, Any]) -> bool:
    """Whether ``referee`` completed, planted its mutant and reported every graded test (log,
    and JUnit where both have it) as ``canary`` did."""
    if referee.log is None or canary.log is None or referee.result.exit_status == "test_tampering":
        return False
    tests = graded(instance)
    if any(canary.log.get(t, MISSING) != referee.log.get(t, MISSING) for t in tests):
        return False
    if canary.junit is not None and referee.junit is not None:
        return all(canary.junit.get(t, MISSING) == referee.junit.get(t, MISSING) for t in tests)
    return True


def settle(verdict: GradeResult, real: Session, canaries: list[Canary], instance: dict[str, Any],
           referee: Callable[[Mutant], Session],
           forget: Callable[[list[tuple[Mutant, str]]], GoldRecord],
           replace: Callable[[GoldRecord, int], list[Canary]],
           judge: Callable[[list[Canary]], GradeResult],
           log: Callable[[str], None]) -> GradeResult:
    """Module contract."""
    for _ in range(ROUNDS):
        if verdict.exit_status != "results_mismatch":
            return verdict
        kinds = [finding(m, s, real, instance)[0] for m, s in canaries]
        suspects = [i for i, kind in enumerate(kinds) if kind == "disagree"]
        if not suspects or any(kind not in ("ok", "disagree") for kind in kinds):
            return verdict
        spread = []
        for i in suspects:
            mutant, session = canaries[i]
            checked = referee(mutant)
            if same_outcomes(session, checked, instance) and planted(mutant, checked):
                changed = differing(checked, real, instance, mutant.test)
                spread.append((mutant, "spreads: the gold patch with it alone also reports "
                               + ", ".join(f"{t} {checked.log.get(t, MISSING)}" for t in changed[:5])
                               + (f" (+{len(changed) - 5})" if len(changed) > 5 else "")))
            else:
                log(f"referee: the gold patch with {mutant.describe()} alone did not report the "
                    "graded tests as the canary session did: the mismatch stands")
        if spread:
            record = forget(spread)
            log("referee: dropped from the gold record, their failure spreading to other graded "
                "tests under gold too: " + "; ".join(m.describe() for m, _ in spread))
        if len(spread) != len(suspects):
            return verdict
        kept = [c for i, c in enumerate(canaries) if i not in suspects]
        canaries = kept + replace(record, len(suspects))
        if not canaries:
            return verdict
        verdict = judge(canaries)
    return verdict
