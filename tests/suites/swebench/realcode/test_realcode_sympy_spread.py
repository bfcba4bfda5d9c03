"""Why sympy 1.12's ``op_break_chains-791250af`` was quarantined, on the logs its sessions wrote
(reproduced in its instance image, the same with ``PYTHONHASHSEED`` 0, 12345 or random: not the
hash seed). ``test_Permutation_subclassing`` runs ``test_Permutation`` with the module's
``Permutation`` swapped for a subclass and swaps it back only after that call returns, outside a
``finally``; a mutant failing ``test_Permutation`` fails it too and leaves the subclass in
place, so ``test_from_sequence``, ``test_resize`` and ``test_deprecated_print_cyclic`` fail
after it, under the gold patch as under any. No Docker."""

from __future__ import annotations

from swebench.harness.log_parsers import PARSER_REGISTRY

from ratchet_ray.suites.swebench.proof.differential import Session, finding, judge_canaries
from ratchet_ray.suites.swebench.proof.gold import GoldRecord
from ratchet_ray.suites.swebench.proof.mutants import Mutant
from ratchet_ray.suites.swebench.proof.spread import settle
from ratchet_ray.suites.swebench.realcode.projects import SYMPY
from ratchet_ray.types import GradeResult

FILE = "sympy/combinatorics/tests/test_permutations.py"
ORDER = ["test_Permutation", "test_Permutation_subclassing", "test_josephus", "test_ranking",
         "test_mul", "test_args", "test_Cycle", "test_from_sequence", "test_resize",
         "test_printing_cyclic", "test_printing_non_cyclic", "test_deprecated_print_cyclic",
         "test_permutation_equality", "test_issue_17661", "test_permutation_apply"]
F2P = ["test_Permutation", "test_Permutation_subclassing", "test_deprecated_print_cyclic",
       "test_from_sequence", "test_resize"]
INSTANCE = {"FAIL_TO_PASS": F2P, "PASS_TO_PASS": [t for t in ORDER if t not in F2P]}
RESOLVED = GradeResult(passed=True, exit_status="ok", trace="resolved")
LINE_224 = Mutant("test_Permutation", FILE, 224, 32, "2", "1",
                  "    assert b.cycle_structure == {2: 1, 3: 1, 1: 2}", (224, 224))
JOSEPHUS = Mutant("test_josephus", FILE, 278, 60, "3", "4", "    assert ... [3, 1, 0, 2, 5, 4])",
                   (278, 278))


def log(outcomes: dict[str, str]) -> str:
    """sympy's verbose reporter for the file (its last test, never parsed, left out)."""
    lines = [f"{t} {outcomes.get(t, 'ok')}" for t in ORDER]
    return ("============================= test process starts ==============================\n"
            f"{FILE}[16] \n" + "\n".join(lines) + "\ntest_AppliedPermutation ok"
            + " " * 50 + "[FAIL]\n")


def session(outcomes: dict[str, str], planted: bool = True) -> Session:
    statuses = PARSER_REGISTRY[SYMPY.log_parser](log(outcomes), None)
    return Session("s", RESOLVED, log={t: statuses.get(t, "MISSING") for t in ORDER},
                   texts={FILE: "a"}, written={FILE: "b" if planted else "a"})


# Canary session 3 of the quarantined grade, and the gold patch with line 224's mutant alone.
SPREAD = {"test_Permutation": "F", "test_Permutation_subclassing": "F",
          "test_from_sequence": "F", "test_resize": "F", "test_deprecated_print_cyclic": "E"}


def test_the_mutant_in_test_permutation_spreads_and_is_dropped_not_the_gold_grade():
    real, canary = session({}, planted=False), session(SPREAD)
    assert finding(LINE_224, canary, real, INSTANCE)[0] == "disagree"
    before = judge_canaries(RESOLVED, real, [(LINE_224, canary)], INSTANCE, 2)
    assert before.exit_status == "results_mismatch"  # what quarantined the instance
    record = GoldRecord("i", "sha256:0", {t: "PASSED" for t in ORDER}, resolved=True,
                        kept=[LINE_224.as_dict(), JOSEPHUS.as_dict()])
    dropped = []

    def forget(spread):
        dropped.extend(spread)
        record.kept = [JOSEPHUS.as_dict()]
        return record

    after = settle(before, real, [(LINE_224, canary)], INSTANCE, lambda m: session(SPREAD),
                   forget, lambda rec, n: [(JOSEPHUS, session({"test_josephus": "F"}))],
                   lambda c: judge_canaries(RESOLVED, real, c, INSTANCE, 2), lambda line: None)
    assert after.passed, after.trace
    assert [m for m, _ in dropped] == [LINE_224]
    assert "test_deprecated_print_cyclic ERROR" in dropped[0][1]
