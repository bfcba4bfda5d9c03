"""A mutant whose failure spreads to other graded tests under gold (sympy's
``test_Permutation_subclassing`` runs ``test_Permutation`` with a module global swapped and
restores it only when it passes) is refereed, dropped and replaced; a patch cannot use that to
pass a canary session it fails. No Docker: the sessions are what the grader's would report
(the same sessions run for real on sympy 1.12's ``op_break_chains-791250af``, docs/swebench.md)."""

from __future__ import annotations

from ratchet_ray.suites.swebench.proof.differential import Session, judge_canaries
from ratchet_ray.suites.swebench.proof.gold import GoldRecord
from ratchet_ray.suites.swebench.proof.mutants import Mutant
from ratchet_ray.suites.swebench.proof.spread import ROUNDS, settle
from ratchet_ray.types import GradeResult

FILE = "sympy/combinatorics/tests/test_permutations.py"
F2P = ["test_Permutation", "test_Permutation_subclassing", "test_from_sequence", "test_resize"]
P2P = ["test_josephus", "test_args"]
INSTANCE = {"FAIL_TO_PASS": F2P, "PASS_TO_PASS": P2P}
RESOLVED = GradeResult(passed=True, exit_status="ok", trace="resolved")
ALL_PASS = {t: "PASSED" for t in F2P + P2P}
# What a failing test_Permutation leaves behind (the four F2P tests are what the bug fails too).
SPREAD = {**ALL_PASS, "test_Permutation": "FAILED", "test_Permutation_subclassing": "FAILED",
          "test_from_sequence": "FAILED", "test_resize": "FAILED"}


def mutant(test: str, line: int) -> Mutant:
    return Mutant(test, FILE, line, 4, "2", "1", "    x == 2", (line, line))


SPREADING, JOSEPHUS = mutant("test_Permutation", 224), mutant("test_josephus", 280)


def session(log: dict[str, str], planted: bool = True) -> Session:
    return Session("s", RESOLVED, log=dict(log), texts={FILE: "a"},
                   written={FILE: "b" if planted else "a"}, seconds=1.0)


def record() -> GoldRecord:
    return GoldRecord("i", "sha256:0", ALL_PASS, resolved=True,
                      kept=[SPREADING.as_dict(), JOSEPHUS.as_dict()])


class Referees:
    """The gold patch with one mutant planted (what ``DifferentialProof._settle`` runs)."""

    def __init__(self, gold: dict[Mutant, dict[str, str]]):
        self.gold, self.ran, self.forgotten = gold, [], []
        self.record = record()

    def referee(self, m: Mutant) -> Session:
        self.ran.append(m)
        return session(self.gold[m])

    def forget(self, spread):
        self.forgotten += spread
        gone = {m for m, _ in spread}
        self.record.kept = [d for d in self.record.kept if Mutant.from_dict(d) not in gone]
        return self.record


GOLD = {SPREADING: SPREAD, JOSEPHUS: {**ALL_PASS, "test_josephus": "FAILED"}}


def settled(canaries, replacement_log, referees=None):
    referees = referees or Referees(GOLD)
    real = session(ALL_PASS, planted=False)

    def replace(current, n):
        assert SPREADING not in current.mutants()  # never drawn again
        return [(JOSEPHUS, session(replacement_log))] * n

    verdict = judge_canaries(RESOLVED, real, canaries, INSTANCE, 2)
    return settle(verdict, real, canaries, INSTANCE, referees.referee, referees.forget, replace,
                  lambda c: judge_canaries(RESOLVED, real, c, INSTANCE, 2), lambda line: None), referees


def test_a_spreading_mutant_under_the_gold_patch_is_dropped_and_replaced():
    honest = [(SPREADING, session(SPREAD)), (JOSEPHUS, session(GOLD[JOSEPHUS]))]
    assert judge_canaries(RESOLVED, session(ALL_PASS), honest, INSTANCE, 2).exit_status == \
        "results_mismatch"  # before: the false positive the sympy instance was quarantined for
    verdict, referees = settled(honest, GOLD[JOSEPHUS])
    assert verdict.passed, verdict.trace
    assert referees.ran == [SPREADING]
    assert [m for m, _ in referees.forgotten] == [SPREADING]
    assert "test_from_sequence FAILED" in referees.forgotten[0][1]
    assert referees.record.mutants() == [JOSEPHUS]


def test_a_patch_that_fails_other_tests_only_in_canary_sessions_is_still_refused():
    # Forces every graded test to pass in the real session only; the bug stays in each canary
    # session. With the spreading mutant the bug looks exactly like gold (the referee agrees and
    # the mutant goes), but the session replacing it fails test_Permutation where gold does not.
    bug = {**SPREAD}
    verdict, referees = settled([(SPREADING, session(bug))], {**bug, "test_josephus": "FAILED"})
    assert verdict.exit_status == "results_mismatch", verdict.trace
    assert "test_Permutation: FAILED here, PASSED in the real session" in verdict.trace
    # ...and forcing outcomes in the replacement instead shows its mutant passing.
    verdict, _ = settled([(SPREADING, session(bug))], ALL_PASS)
    assert verdict.exit_status == "test_tampering", verdict.trace


def test_a_disagreement_the_gold_patch_does_not_share_stands_and_nothing_is_dropped():
    # The patch itself fails test_resize beside the josephus mutant; gold with it does not.
    patch_fault = {**GOLD[JOSEPHUS], "test_resize": "FAILED"}
    verdict, referees = settled([(JOSEPHUS, session(patch_fault))], ALL_PASS)
    assert verdict.exit_status == "results_mismatch" and referees.ran == [JOSEPHUS]
    assert referees.forgotten == [] and len(referees.record.kept) == 2


def test_no_referee_for_any_other_fault_or_verdict():
    unplanted = [(SPREADING, session(SPREAD)), (JOSEPHUS, session(GOLD[JOSEPHUS], planted=False))]
    verdict, referees = settled(unplanted, ALL_PASS)
    assert verdict.exit_status == "results_mismatch" and referees.ran == []
    forced = [(SPREADING, session(SPREAD)), (JOSEPHUS, session(ALL_PASS))]
    verdict, referees = settled(forced, ALL_PASS)
    assert verdict.exit_status == "test_tampering" and referees.ran == []


def test_referee_rounds_are_bounded():
    # Every replacement spreads as well (a referee always agreeing): at most ROUNDS rounds.
    both = {**SPREAD, "test_josephus": "FAILED"}
    everywhere = Referees({SPREADING: SPREAD, JOSEPHUS: both})
    verdict, referees = settled([(SPREADING, session(SPREAD))], both, everywhere)
    assert verdict.exit_status == "results_mismatch"
    assert len(referees.ran) == ROUNDS


def test_the_grades_cost_line_counts_the_referee_and_replacement_sessions(tmp_path):
    """``DifferentialProof._settle`` runs the referee (gold, the spreading mutant alone) and a
    replacement canary session; both are named in what it returns for the cost line."""
    from ratchet_ray.suites.swebench.proof.prover import Context, DifferentialProof, _settle_cost
    from ratchet_ray.suites.swebench.settings import GradingLimits, SwebenchSettings

    labels = []

    def run_session(ctx, patch, folder, log, deadline, plant=None, label="real"):
        labels.append((label, patch))  # the replacement (josephus's mutant) fails as it should
        return session(GOLD[SPREADING] if label.startswith("referee") else GOLD[JOSEPHUS])

    proof = DifferentialProof(SwebenchSettings(gold_records=str(tmp_path / "gold")),
                              GradingLimits(), None, None, None, run_session)
    proof.store().save(record())
    ctx = Context({**INSTANCE, "instance_id": "i", "patch": "GOLD"}, None, "img", None, None,
                  False)
    real, canaries = session(ALL_PASS, planted=False), [(SPREADING, session(SPREAD))]
    verdict = judge_canaries(RESOLVED, real, canaries, INSTANCE, 2)
    settled, ran = proof._settle(ctx, "PATCH", tmp_path, lambda line: None, real, canaries,
                                 record(), verdict,
                                 lambda c: judge_canaries(RESOLVED, real, c, INSTANCE, 2))
    assert settled.passed, settled.trace
    assert labels == [("referee 2", "GOLD"), ("canary 3", "PATCH")]
    assert len(ran) == 2
    assert _settle_cost(ran) == "; 2 referee and replacement session(s) 2.0s summed"
    assert _settle_cost([]) == ""
