"""Where a FAIL_TO_PASS mutant goes when the assertion the base code fails writes no literal
(``proof.expectations.reaching``): into the literals its compared value comes from, never at
an expectation elsewhere in the test that code forcing only the failing assertion spares."""

from __future__ import annotations

import ast
import random

from ratchet_ray.suites.swebench.proof import mutants
from ratchet_ray.suites.swebench.proof.expectations import reaching

# Line numbers matter: the failures below name them.
TESTS = '''import pytest


def test_calls():
    assert diff([3, 1], 1) == [6, 1]
    assert diff([5, 2, 7], 1) == [10, 2]
    assert diff(
        f_6, 2, 3) == diff(diff(f_6, 1, 3), 1, 3)


def test_named():
    assert size("a") == 1
    expected = {"alpha": 14, "beta": 15}
    result = counts("text")
    assert result == expected


class TableTests:
    def test_table(self):
        self.assertEqual(width(""), 0)
        cases = [(1, "one"), (2, "two"), (3, "six")]
        for value, expected in cases:
            with self.subTest(value=value):
                self.assertEqual(spell(value), expected)

    def test_inline_table(self):
        self.assertEqual(width(""), 0)
        for value, (name, size) in [(1, ("one", 3)), (22, ("twenty-two", 10))]:
            self.assertEqual(size, len(spell(value)))


def test_is_none():
    assert lookup(7) == 9
    assert lookup(8) is None


def test_helper(self):
    self.assertEqual(width(""), 0)
    wanted = ["x", "yy"]
    self.check_output(run("zz", count=4), wanted)
    assert ready
'''


def _fn(name: str) -> ast.FunctionDef:
    return next(n for n in ast.walk(ast.parse(TESTS))
                if isinstance(n, ast.FunctionDef) and n.name == name)


def _placed(test: str, qual: str, line: int, seeds: int = 30) -> set[tuple[int, str]]:
    """The (line, old value) of the FAIL_TO_PASS mutant ``test`` gets over ``seeds`` draws,
    its base code failing at ``line`` (pytest's JUnit failure text)."""
    found = set()
    for seed in range(seeds):
        drawn = mutants.candidates({test: ("t.py", qual)}, {"t.py": TESTS}, random.Random(seed),
                                   failures={test: f"t.py:{line}: AssertionError"})
        mutant = drawn[test]
        assert mutant.apply(TESTS) is not None
        found.add((mutant.line, mutant.old))
    return found


def test_a_failing_comparison_of_two_calls_gets_its_mutant_in_its_own_arguments():
    """Real sympy 1.12: the base code failed ``diff(f_6, 2, 3) == diff(diff(f_6, 1, 3), 1, 3)``
    and the mutant sat at an expectation above it, which passes in the real session: code that
    forced only the failing comparisons of two expressions resolved it and failed every canary
    session as it must. Now the mutant is one of the constants that assertion writes."""
    placed = _placed("t.py::test_calls", "test_calls", 7)
    assert {line for line, _ in placed} == {8}
    assert {old for _, old in placed} <= {"1", "2", "3"} and len(placed) > 1  # drawn at random


def test_a_failing_comparison_with_a_named_expectation_gets_its_mutant_in_the_named_literal():
    placed = _placed("t.py::test_named", "test_named", 15)
    assert {line for line, _ in placed} == {13}
    assert {old for _, old in placed} <= {"14", "15", '"alpha"', '"beta"'}


def test_a_failing_assertion_in_a_loop_over_a_table_gets_its_mutant_in_the_table():
    """django's table-driven ``assertEqual`` in a ``subTest`` loop: one of the rows' expected
    values, whichever row the base code failed on (its traceback names only the loop's line)."""
    placed = _placed("t.py::TableTests::test_table", "TableTests::test_table", 24)
    assert {line for line, _ in placed} == {21}
    assert {old for _, old in placed} <= {'"one"', '"two"', '"six"'} and len(placed) > 1
    inline = _placed("t.py::TableTests::test_inline_table", "TableTests::test_inline_table", 29)
    assert {line for line, _ in inline} == {28}
    assert {old for _, old in inline} <= {"3", "10"}


def test_any_other_failing_check_gets_its_mutant_in_what_its_calls_are_given():
    """``assert lookup(8) is None``, or a helper that asserts (``self.check_output``): the
    literals its calls are given, directly or through a name bound to one."""
    assert _placed("t.py::test_is_none", "test_is_none", 34) == {(34, "8")}
    placed = _placed("t.py::test_helper", "test_helper", 40)
    assert {line for line, _ in placed} == {39, 40} and {old for _, old in placed} <= {
        '"x"', '"yy"', '"zz"', "4"}


def test_a_failing_literal_expectation_keeps_its_own_mutant_and_nothing_else_is_found():
    """Where the failing assertion writes its expectation, nothing here changes (``spanned``);
    a check with no literal to reach, or a line no check spans, finds none."""
    assert _placed("t.py::test_calls", "test_calls", 5) == {(5, "1")}
    assert reaching(_fn("test_calls"), [5]) == []  # a literal side: not reaching's
    assert reaching(_fn("test_helper"), [41]) == []  # ``assert ready``
    assert reaching(_fn("test_calls"), [99]) == []
