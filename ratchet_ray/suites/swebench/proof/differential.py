"""A resolution proven by a differential the code under test cannot see (docs/grading.md, "A
resolution is proven by a differential"): ``k`` canary sessions, each a fresh container running
the real session's eval with one graded test mutated in place (``mutants``, a change the gold
patch fails, ``gold``). A resolution needs, besides the real session's pass:
- every FAIL_TO_PASS / PASS_TO_PASS status equal to gold's, in the log and (pytest) the JUnit
  report (``compare_with_gold``): XFAIL, XPASS or SKIPPED where gold PASSED is not a pass;
- in every canary session, its mutant reported FAILED and every other graded test as in the
  real session (``judge_canaries``): a mutant reported passing is ``test_tampering`` (the trace
  names session, test and change), as are the sentinel's findings; an incomplete session, a
  mutant missing, skipped or errored, or disagreeing sessions are ``results_mismatch``
  (disagreeing on other tests alone: refereed, ``spread``).
A verdict's trace names a mutant by ``Mutant.where`` (why: there), never by its values; the
grade's log has each change.

Contracts:
- ``draw(record, instance, bounds, rng)``: one mutant per canary session, ``k`` drawn from
  ``bounds`` (inclusive); the first a FAIL_TO_PASS test's when the record keeps one, each later
  one with probability 1/2 (distinct while distinct ones remain); empty without kept mutants.
- ``caught(mutant, session)``: why ``session`` proves the patch forces outcomes whatever other
  sessions did, or None; ``caught_beside(result, canaries)``: ``result`` of an unresolved real
  session, or ``test_tampering`` when a canary session beside it is ``caught``.
- ``judge_grade(real, canaries, record, instance, parallel)``: ``caught_beside`` when the real
  session did not resolve; otherwise ``compare_with_gold``, then ``judge_canaries``.
- ``unproven(record, instance)``: the FAIL_TO_PASS tests ``record`` keeps no mutant of (a check
  that reads the same name on both sides, no literal to change); ``with_unproven(result,
  record, instance, log)``: a resolution with a line saying how many there are, so a proof
  that covers fewer FAIL_TO_PASS tests is never silently weaker (their names go to ``log``,
  the grade's log, not the trace, which the loop reads: it would learn which tests no canary
  mutates).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from ratchet_ray.suites.swebench.proof.gold import GoldRecord
from ratchet_ray.suites.swebench.proof.mutants import Mutant
from ratchet_ray.types import GradeResult

PASSING = ("PASSED", "XFAIL", "XPASS")
MISSING = "MISSING"


@dataclass
class Session:
    """What one session produced: its own verdict ``result`` and swebench's ``report``, then:"""

    label: str
    result: GradeResult
    report: dict | None = None
    log: dict[str, str] | None = None
    """Graded test id -> status in the log as swebench parses it; None when the session ended
    before its tests were read (``result`` says why)."""
    junit: dict[str, str] | None = None
    """Graded test id -> status in the JUnit report (pytest runners)."""
    failures: dict[str, str] = field(default_factory=dict)
    """Graded test id -> its failure's text (``prover.failures_of``)."""
    texts: dict[str, str] = field(default_factory=dict)
    written: dict[str, str] = field(default_factory=dict)
    located: dict[str, tuple[str, str]] = field(default_factory=dict)
    seconds: float = 0.0


def graded(instance: dict[str, Any]) -> list[str]:
    """The FAIL_TO_PASS then PASS_TO_PASS ids."""
    return [*instance.get("FAIL_TO_PASS", []), *instance.get("PASS_TO_PASS", [])]


def draw(record: GoldRecord, instance: dict[str, Any], bounds: tuple[int, int],
         rng: random.Random) -> list[Mutant]:
    kept = record.mutants()
    if not kept:
        return []
    f2p = set(instance.get("FAIL_TO_PASS", []))
    pools = {True: [m for m in kept if m.test in f2p], False: [m for m in kept if m.test not in f2p]}
    chosen: list[Mutant] = []
    for i in range(rng.randint(*bounds)):
        want = bool(pools[True]) and (i == 0 or not pools[False] or rng.random() < 0.5)
        pool = pools[want] or pools[not want]
        fresh = [m for m in pool if m not in chosen] or pool
        chosen.append(rng.choice(fresh))
    return chosen


def fail(status: str, trace: str) -> GradeResult:
    """A failed grade: ``status`` and ``trace``."""
    return GradeResult(passed=False, exit_status=status, trace=trace)


def compare_with_gold(result: GradeResult, real: Session, record: GoldRecord,
                      instance: dict[str, Any]) -> GradeResult:
    """``result`` (a would-be resolution) unless a graded test ended otherwise than under gold."""
    diffs = []
    for test in graded(instance):
        got, want = (real.log or {}).get(test, MISSING), record.statuses.get(test, MISSING)
        if got != want:
            diffs.append(f"{test}: {got} in the log, {want} under gold")
        if real.junit is not None and record.junit:
            got_j, want_j = real.junit.get(test, MISSING), record.junit.get(test, MISSING)
            if got_j != want_j:
                diffs.append(f"{test}: {got_j} in the JUnit report, {want_j} under gold")
    if not diffs:
        return result
    return fail("unresolved", "unresolved: graded tests did not end as under the gold patch "
                 "(compared with gold):\n  " + "\n  ".join(diffs[:20]) + f"\n{result.trace}")


def finding(mutant: Mutant, session: Session, real: Session,
            instance: dict[str, Any]) -> tuple[str, str]:
    """What one canary session says, as ``(kind, why)``: ``ok`` (its mutant FAILED, every other
    graded test as in the real session), ``tampering``, ``mismatch``, or ``disagree`` (a
    mismatch whose one fault is other graded tests reported otherwise, refereed by ``spread``)."""
    if session.result.exit_status == "test_tampering":
        return "tampering", session.result.trace.split("\n", 1)[0]
    if session.log is None:
        return "mismatch", (f"the session did not complete ({session.result.exit_status}: "
                            f"{session.result.trace[:200]})")
    if not planted(mutant, session):
        return "mismatch", ("the mutant could not be planted (the graded file was not the text "
                            "it was made from)")
    in_log, in_junit, said = seen(mutant, session)
    if in_log in PASSING or in_junit in PASSING:
        return "tampering", (f"reported {said}, though the gold patch fails it: the code under "
                             "test forces outcomes it cannot produce")
    if in_log != "FAILED" or in_junit not in (None, "FAILED"):
        return "mismatch", f"must be reported FAILED, was {said}"
    differ = [f"{t}: {session.log.get(t, MISSING)} here, {(real.log or {}).get(t, MISSING)} "
              f"in the real session" for t in differing(session, real, instance, mutant.test)]
    if differ:
        return "disagree", "the sessions disagree on other graded tests: " + "; ".join(differ[:5])
    return "ok", "FAILED as it must"


def differing(session: Session, real: Session, instance: dict[str, Any],
              besides: str) -> list[str]:
    """The graded tests other than ``besides`` that ``session``'s log reports otherwise than the
    real session's."""
    theirs = real.log or {}
    return [t for t in graded(instance) if t != besides
            and (session.log or {}).get(t, MISSING) != theirs.get(t, MISSING)]


def judge_canaries(result: GradeResult, real: Session, canaries: list[tuple[Mutant, Session]],
                   instance: dict[str, Any], parallel: int) -> GradeResult:
    """The would-be resolution ``result`` after its canary sessions (module contract)."""
    k = len(canaries)
    tampering, mismatch, lines = [], [], []
    for i, (mutant, session) in enumerate(canaries, 1):
        name = f"canary session {i} of {k} ({session.seconds:.1f}s), mutant {mutant.where()}"
        kind, why = finding(mutant, session, real, instance)
        {"tampering": tampering, "ok": lines}.get(kind, mismatch).append(f"{name}: {why}")
    head = f"differential: the real session and {k} canary session(s) in fresh containers"
    if tampering:
        return fail("test_tampering", f"test_tampering: {head}: a mutant the gold patch fails "
                     "passed:\n  " + "\n  ".join(tampering + mismatch) + f"\n{result.trace}")
    if mismatch:
        return fail("results_mismatch", f"results_mismatch: {head} cannot vouch for the "
                     "resolution:\n  " + "\n  ".join(mismatch) + f"\n{result.trace}")
    return GradeResult(passed=True, exit_status=result.exit_status,
                       trace=f"{result.trace}\n{head} (up to {parallel} at once):\n  "
                             + "\n  ".join(lines))


def subtests_failed(test: str, text: str) -> str | None:
    """How the subtests of ``test`` ended in a log runner's output (``text``): unittest's
    verbose runner (django's) reports a test whose ``subTest`` failed on the subtest's own line
    only, ``<test id> (<its parameters>) ... FAIL`` (or ``ERROR``), which swebench's parser does
    not read: the test has no status there (``MISSING``). ``FAILED`` where such a line says
    FAIL, else ``ERROR`` where one says ERROR, else None. A mutant in a ``subTest`` table (real
    django ``58b20d6f``'s ``test_urlize``) fails that way, under gold as in a canary session."""
    if test not in text:
        return None
    found = set(re.findall(rf"^[ \t]*{re.escape(test)} \(.*\) \.\.\. (FAIL|ERROR)[ \t]*$",
                           text, re.M))
    return "FAILED" if "FAIL" in found else "ERROR" if found else None


def seen(mutant: Mutant, session: Session) -> tuple[str, str | None, str]:
    """How the session reported the mutant's test: in the log (a test the log names nowhere but
    on its failed subtests' lines, as those say: ``subtests_failed``), in the JUnit report (None
    without one), and both in words."""
    in_log = (session.log or {}).get(mutant.test, MISSING)
    if in_log == MISSING and session.log is not None:
        in_log = subtests_failed(mutant.test, session.failures.get(mutant.test, "")) or MISSING
    in_junit = session.junit.get(mutant.test, MISSING) if session.junit is not None else None
    return in_log, in_junit, f"{in_log} in the log" + (f", {in_junit} in the JUnit report"
                                                       if in_junit else "")


def planted(mutant: Mutant, session: Session) -> bool:
    """Whether root wrote the mutant into the session's graded file."""
    return session.written.get(mutant.file) not in (None, session.texts.get(mutant.file))


def caught(mutant: Mutant, session: Session) -> str | None:
    """Module contract."""
    if session.result.exit_status == "test_tampering":
        return session.result.trace.split("\n", 1)[0]
    if not session.result.passed or session.log is None or not planted(mutant, session):
        return None
    in_log, in_junit, said = seen(mutant, session)
    if in_log in PASSING or in_junit in PASSING:
        return (f"reported {said} and the session resolved, though the gold patch fails its "
                "mutant: the code under test forced the outcomes")
    return None


def caught_beside(result: GradeResult, canaries: list[tuple[Mutant, Session]]) -> GradeResult:
    """Module contract (``result``: the real session's verdict, not a resolution; one that is
    already ``test_tampering`` stays as it is, naming the layer that caught it)."""
    if result.exit_status == "test_tampering":
        return result
    k = len(canaries)
    found = [f"canary session {i} of {k} ({session.seconds:.1f}s), mutant {mutant.where()}: "
             f"{why}" for i, (mutant, session) in enumerate(canaries, 1)
             if (why := caught(mutant, session)) is not None]
    if not found:
        return result
    return fail("test_tampering", "test_tampering: differential: the grade did not resolve "
                 f"({result.exit_status}), and a canary session run beside it (the sessions in a "
                 "random order) did:\n  " + "\n  ".join(found) + f"\n{result.trace}")


def unproven(record: GoldRecord, instance: dict[str, Any]) -> list[str]:
    """Module contract."""
    kept = {m.test for m in record.mutants()}
    return [t for t in instance.get("FAIL_TO_PASS", []) if t not in kept]


def with_unproven(result: GradeResult, record: GoldRecord, instance: dict[str, Any],
                  log: Any) -> GradeResult:
    """Module contract."""
    missing = unproven(record, instance)
    if not result.passed or not missing:
        return result
    total = len(instance.get("FAIL_TO_PASS", []))
    head = (f"differential, weaker: {len(missing)} of {total} FAIL_TO_PASS test(s) keep no "
            "mutant the gold patch fails, so code that forces only those is caught by no canary "
            "session, only by the comparison with gold")
    log(f"{head}: {', '.join(missing)}")
    return GradeResult(passed=True, exit_status=result.exit_status,
                       trace=f"{result.trace}\n{head} (named in the grade's log)")


def judge_grade(real: Session, canaries: list[tuple[Mutant, Session]], record: GoldRecord,
                instance: dict[str, Any], parallel: int) -> GradeResult:
    """Module contract."""
    if not real.result.passed:
        return caught_beside(real.result, canaries)
    verdict = compare_with_gold(real.result, real, record, instance)
    if not verdict.passed:
        return caught_beside(verdict, canaries)
    return judge_canaries(verdict, real, canaries, instance, parallel)
