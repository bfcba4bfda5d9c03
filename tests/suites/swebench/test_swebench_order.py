"""No session is first (issue 49): the sessions of a grade run in a random order, so a patch that
cheats only where it finds no mark left by another session is caught with probability at least
k/(k+1) per grade. Here at the level of the ordering and the judgement, with many draws and
sessions simulated (the Docker grades are in test_swebench_page_cache.py)."""

from __future__ import annotations

import math
import random
import threading

from ratchet_ray.suites.swebench.proof.differential import Session, draw, judge_grade
from ratchet_ray.suites.swebench.proof.order import Plan, primary_blocked, run_in_order, shuffled
from ratchet_ray.types import GradeResult
from test_swebench_judgement import F2P, INSTANCE, P2P, _record

GRADED = [*F2P, *P2P]
TEXT = "def test(): assert f() == 5\n"


class MarkingForger:
    """A wrong patch that shares one mark between the sessions of a grade (a perfect covert
    channel: what the page cache gave before it was cleared). The session that finds no mark
    writes one carrying what its graded files look like, and forces every graded test to pass;
    a later session that finds the mark behaves as if it knew the real test: it lets the test
    whose file differs from the mark's fail and forces the others, so a canary session after the
    real one passes the differential. The worst case for the order: it resolves whenever the
    real session is first."""

    def __init__(self) -> None:
        self.mark: frozenset | None = None
        self.lock = threading.Lock()

    def __call__(self, plan: Plan) -> Session:
        mutated = plan.mutated()
        with self.lock:
            first = self.mark is None
            if first:
                self.mark = frozenset(mutated)
            seen = self.mark
        if first:
            log = {t: "PASSED" for t in GRADED}  # forced
        else:
            log = {t: "FAILED" if t in mutated ^ seen else "PASSED" for t in GRADED}
        passed = all(v == "PASSED" for v in log.values())
        result = GradeResult(passed=passed, exit_status="ok" if passed else "unresolved", trace="x")
        written = {"t.py": TEXT.replace("5", "7")} if mutated else {"t.py": TEXT}
        return Session(plan.label, result, log=log, junit=dict(log), texts={"t.py": TEXT},
                       written=written, seconds=0.0)


def _grade(rng: random.Random, order_rng: random.Random | None, parallel: int = 1) -> tuple[int, str]:
    """One grade of the forger: ``(k, exit status)``; ``order_rng`` None keeps the real session
    first (the order before issue 49)."""
    record = _record(kept=[dict(m, file="t.py") for m in _record().kept])
    chosen = draw(record, INSTANCE, (2, 3), rng)
    plans = [Plan("real", primary=True), *(Plan(f"canary {i}", (m,)) for i, m in enumerate(chosen, 1))]
    order = plans if order_rng is None else shuffled(plans, order_rng)
    sessions = run_in_order(order, MarkingForger(), parallel, primary_blocked(plans[0], record.statuses))
    canaries = [(m, sessions[p.label]) for p, m in zip(plans[1:], chosen) if p.label in sessions]
    return len(chosen), judge_grade(sessions["real"], canaries, record, INSTANCE, parallel).exit_status


def test_the_real_session_is_first_in_one_grade_of_k_plus_1():
    plans = [Plan("real", primary=True), Plan("canary 1"), Plan("canary 2")]
    rng = random.Random(7)
    firsts = [shuffled(plans, rng)[0].label for _ in range(3000)]
    assert abs(firsts.count("real") / 3000 - 1 / 3) < 4 * math.sqrt(2 / 9 / 3000)
    assert len({tuple(p.label for p in shuffled(plans)) for _ in range(60)}) == 6, "the OS's draw"


def test_a_forger_that_cheats_only_when_first_is_caught_in_at_least_k_over_k_plus_1_of_its_grades():
    """N = 1500 grades, k in {2, 3}: the caught count is at least sum(k/(k+1)) less 4 standard
    deviations (each caught grade is ``test_tampering``, every other one resolves: the real
    session came first). With the real session always first, the same forger resolves every
    grade."""
    rng, order_rng, n = random.Random(1), random.Random(2), 1500
    grades = [_grade(rng, order_rng) for _ in range(n)]
    assert {status for _, status in grades} == {"test_tampering", "ok"}
    bound = sum(k / (k + 1) for k, _ in grades)
    sd = math.sqrt(sum(k / (k + 1) ** 2 for k, _ in grades))
    caught = sum(status == "test_tampering" for _, status in grades)
    assert caught >= bound - 4 * sd, (caught, bound)
    assert caught / n >= 2 / 3 - 0.05
    before = [_grade(rng, None)[1] for _ in range(50)]
    assert set(before) == {"ok"}, "with the real session first the forger always resolved"


def test_sessions_started_together_still_catch_the_forger():
    """Three at a time: the session that finds no mark is still any of them."""
    rng, order_rng = random.Random(3), random.Random(4)
    grades = [_grade(rng, order_rng, parallel=4) for _ in range(300)]
    caught = sum(status == "test_tampering" for _, status in grades)
    assert caught >= 300 * 2 / 3 - 4 * math.sqrt(300 * 2 / 9), caught


def test_canary_sessions_stop_once_the_real_session_cannot_resolve_but_the_real_one_always_runs():
    record = _record()
    primary = Plan("real", primary=True)
    plans = [Plan("canary 1", (record.mutants()[0],)), primary, Plan("canary 2", (record.mutants()[1],))]
    failing = {t: "FAILED" for t in GRADED}
    ran = []

    def run(plan: Plan) -> Session:
        ran.append(plan.label)
        result = GradeResult(passed=False, exit_status="unresolved", trace="x")
        return Session(plan.label, result, log=dict(failing), junit=None)

    done = run_in_order(plans, run, 1, primary_blocked(primary, record.statuses))
    assert ran == ["canary 1", "real"] and set(done) == {"canary 1", "real"}
    # a canary session whose only failure is its own mutant says nothing against the real one
    only_mutant = {**{t: "PASSED" for t in GRADED}, plans[0].mutants[0].test: "FAILED"}
    settled = primary_blocked(primary, record.statuses)
    assert not settled(plans[0], Session("c", GradeResult(passed=False, exit_status="unresolved",
                                                          trace=""), log=only_mutant))
    assert settled(primary, Session("r", GradeResult(passed=False, exit_status="unresolved", trace="")))
