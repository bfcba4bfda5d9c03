"""Where a FAIL_TO_PASS mutant goes when the assertion the base code fails writes no literal
(``proof.expectations.reaching``): into the literals its compared value comes from, never at
an expectation elsewhere in the test that code forcing only the failing assertion spares."""

from __future__ import annotations

import ast
import functools
import random
import traceback

import pytest

from ratchet_ray.suites.swebench.proof import mutants
from ratchet_ray.suites.swebench.proof.expectations import fed, reaching

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
    same = ast.parse("def test_same(self):\n    for value in ['a@', '@b']:\n"
                     "        self.assertEqual(urlize(value), value)\n").body[0]
    assert reaching(same, [3]) == []  # a row both sides read: its mutant changes both (django)


# A mutant in a compared call's arguments may make the gold patch raise rather than differ:
# ``diff(f, 2, 1)``'s last argument is the polynomial's level, and any other value raises
# (sympy's ``dmp_diff(f_6, 2, 3, ZZ)`` has that shape). Code that turns only failing assertions
# into passes (``FORCER``) fails such a mutant honestly, so its canary session cannot catch it.
LEVELS_FILE = "tests/test_levels.py"
LEVELS = '''def test_levels():
    f = [[1, 2], [3, 4, 5], [6], [7, 8]]
    assert diff(f, 2, 1) == diff(diff(f, 1, 1), 1, 1)


def test_first():
    assert diff([[1], [2]], 1, 1) == [[1]]
'''
DIFF = '''def level(f):
    return 1 + level(f[0]) if f and isinstance(f[0], list) else 0


def diff(f, m, u):
    if level(f) != u:
        raise TypeError("a polynomial of another level")
    for _ in range({times}):
        f = [[c * (len(f) - 1 - i) for c in row] for i, row in enumerate(f[:-1])]
    return f
'''
GOLD_DIFF, BASE_DIFF = DIFF.format(times="m"), DIFF.format(times="min(m, 1)")  # the bug: once
LEVELS_TESTS = {f"{LEVELS_FILE}::test_levels": "test_levels", f"{LEVELS_FILE}::test_first": "test_first"}
FORCER = "the base code, with every failing assertion turned into a pass"


def _levels_session(ctx, patch, log_dir, log, deadline, plant=None, label="real", raised="FAILED",
                    text=LEVELS):
    """One session without Docker, as a runner read from its log reports it: each test run under
    the patch's ``diff`` (the gold one, else the base one), a failure kept as Python's traceback;
    ``raised``: the status of a test that raised other than an ``AssertionError`` (pytest's
    FAILED, django's and sympy's ERROR); ``text``: the graded file as the session finds it."""
    from ratchet_ray.suites.swebench.proof.differential import Session
    from ratchet_ray.types import GradeResult

    texts = {LEVELS_FILE: text}
    written = plant(texts) if plant else texts
    scope: dict = {}
    exec(GOLD_DIFF if patch == "gold" else BASE_DIFF, scope)
    exec(compile(written[LEVELS_FILE], LEVELS_FILE, "exec"), scope)
    statuses, failures = {}, {}
    for test, name in LEVELS_TESTS.items():
        try:
            try:
                scope[name]()
            except AssertionError:
                if patch != FORCER:
                    raise
            statuses[test] = "PASSED"
        except Exception as exc:  # noqa: BLE001 - every failure is the test's
            statuses[test] = "FAILED" if isinstance(exc, AssertionError) else raised
            failures[test] = traceback.format_exc()
    passed = all(s == "PASSED" for s in statuses.values())
    return Session(label, GradeResult(passed=passed, exit_status="ok", trace=""),
                   report={"resolved": passed}, log=statuses, failures=failures, texts=texts,
                   written=written, located={t: (LEVELS_FILE, n) for t, n in LEVELS_TESTS.items()})


@pytest.mark.parametrize("raised", ["FAILED", "ERROR"])
def test_a_mutant_the_gold_patch_fails_by_raising_is_drawn_again_elsewhere(tmp_path, raised):
    """The gold record keeps a mutant only where the gold patch fails it by an assertion at its
    check (``mutants.at_check``, ``prover._judge_mutants``): a level argument that makes ``diff``
    raise is dropped and its literal never drawn again (reported FAILED, as pytest does, or
    ERROR, as django's and sympy's runners do), so every FAIL_TO_PASS mutant kept is one the
    forcer passes (caught), over every draw; the drop says where and why, with no value."""
    session = functools.partial(_levels_session, raised=raised)
    from ratchet_ray.suites.swebench.proof.differential import caught
    from ratchet_ray.suites.swebench.proof.prover import Context, DifferentialProof
    from ratchet_ray.suites.swebench.settings import GradingLimits, SwebenchSettings

    f2p = f"{LEVELS_FILE}::test_levels"
    proof = DifferentialProof(SwebenchSettings(), GradingLimits(), None, None, None, session)
    ctx = Context({"instance_id": "levels", "FAIL_TO_PASS": [f2p], "PASS_TO_PASS": [
        f"{LEVELS_FILE}::test_first"]}, None, "img", None, "sympy", False)
    located = {t: (LEVELS_FILE, n) for t, n in LEVELS_TESTS.items()}
    misplaced = 0
    why = (f"FAILED at its check ({LEVELS_FILE}:3), but by TypeError, not an AssertionError"
           if raised == "FAILED" else "ERROR")
    for seed in range(16):
        draws, seconds = iter(range(99)), {}
        failures = proof._base_failures(ctx, [f2p], tmp_path, print, seconds)
        kept, dropped = mutants.draw_kept(
            located, {LEVELS_FILE: LEVELS}, random.Random(seed),
            lambda found: proof._judge_mutants(ctx, "gold", found, tmp_path, print, seconds,
                                               next(draws)), {f2p}, failures=failures)
        [mutant] = [m for m in kept if m.test == f2p]
        assert mutant.line == 3 and mutant.check == (3, 3), mutant
        forced = session(ctx, FORCER, tmp_path, print, None,
                         lambda texts: mutants.apply_all(texts, [mutant]))
        assert caught(mutant, forced), (seed, mutant.describe())
        misplaced += sum(d.startswith(f2p) and d.endswith(": " + why) for d in dropped)
    assert misplaced >= 4  # the level arguments are half the literals the check is given


# How pytest's JUnit report keeps a failure (the body, by --tb style), read by ``raised``.
RAISED_LONG = """def test_raise():
>       assert f(5, 1) == f(0, 1)

tests/test_x.py:14: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 

a = 5, b = 1

    def f(a, b):
>       return [1, 2][a] + b
E       IndexError: list index out of range

pkg/__init__.py:2: IndexError"""
ASSERTED_SHORT = """tests/test_x.py:22: in test_helper
    helper(0, 5)
tests/test_x.py:6: in helper
    assert f(x, 1) == expected
E   assert 2 == 5
E    +  where 2 = f(0, 1)"""
CHAINED_NO = """E   AssertionError: 2 != 5

During handling of the above exception, another exception occurred:
E   ValueError: x"""


def test_the_exception_a_failure_raised_through_a_check_is_read_from_each_traceback_style():
    assert mutants.raised(RAISED_LONG, "tests/test_x.py") == [("IndexError", [14])]
    assert mutants.raised(ASSERTED_SHORT, "tests/test_x.py") == [("AssertionError", [22, 6])]
    assert mutants.raised(CHAINED_NO, "tests/test_x.py") == [("ValueError", [])]  # the last
    at = mutants.Mutant("t", "tests/test_x.py", 14, 20, "5", "3", "", (14, 14))
    assert mutants.at_check(at, RAISED_LONG).endswith("but by IndexError, not an AssertionError")
    assert mutants.at_check(at, RAISED_LONG.replace("IndexError", "AssertionError")) is None
    assert mutants.at_check(at, ASSERTED_SHORT) == "FAILED, but not at its check (tests/test_x.py:14)"
    assert mutants.at_check(at, CHAINED_NO.replace("ValueError", "AssertionError")) is None
    assert mutants.at_check(at, "") is None  # nothing read: the status alone, as before


# The base code raises in a statement that checks nothing (line 2). A forger that makes ``parse``
# return a value equal to anything where it would raise passes every check that reads ``rows``
# and lets the others run honestly: a mutant there fails as it must and catches nothing.
UNCHECKED = '''def test_parse():
    rows = parse("a,b;c")
    assert parse("x") == [["x"]]
    first = rows[0]
    assert count("a;b") == 2
    assert first == ["a", "b"]
    assert rows[1] == ["c"]
'''


class _EqualToAnything(list):
    def __eq__(self, other):
        return True

    def __getitem__(self, index):
        return self

    __hash__ = None


def test_a_statement_that_checks_nothing_gets_its_mutant_where_what_it_binds_is_checked():
    test = "t.py::test_parse"
    lines = set()
    for seed in range(30):
        [mutant] = mutants.candidates({test: ("t.py", "test_parse")}, {"t.py": UNCHECKED},
                                      random.Random(seed), failures={
                                          test: "t.py:2: in test_parse\nlib.py:9: ValueError"}).values()
        lines.add(mutant.line)
        scope = {"count": lambda text: len(text.split(";")),  # the forger's parse: right where
                 "parse": lambda text: [text.split(",")] if ";" not in text  # the bug is not,
                 else _EqualToAnything()}  # equal to anything where the base code raises
        exec(mutant.apply(UNCHECKED), scope)
        scope["test_parse"]()  # the forger passes the mutant: caught
    assert lines == {6, 7}
    assert fed(ast.parse(UNCHECKED).body[0], 3) == []  # a check, not a binding: nothing fed


# Real django 4.2.16 (``func_pm_ctrl_shuffle-3326e32f``): the base code raises in the assignment,
# and the check that reads its value compares two calls; v10 found no literal to mutate there.
PARSED = '''class HttpDateProcessingTests:
    def test_parsing_rfc1123(self):
        parsed = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT")
        self.assertEqual(
            datetime.fromtimestamp(parsed, timezone.utc),
            datetime(1994, 11, 6, 8, 49, 37, tzinfo=timezone.utc),
        )
'''


def test_a_check_fed_by_the_failing_statement_that_writes_no_literal_gets_one_that_reaches_it():
    test, qual = "t.py::HttpDateProcessingTests::test_parsing_rfc1123", (
        "HttpDateProcessingTests::test_parsing_rfc1123")
    found = {(m.line, m.old, m.check) for seed in range(30) for m in mutants.candidates(
        {test: ("t.py", qual)}, {"t.py": PARSED}, random.Random(seed),
        failures={test: 't.py:3: in test_parsing_rfc1123\nhttp.py:139: ValueError'}).values()}
    assert {line for line, _, _ in found} == {6} and {check for *_, check in found} == {(4, 7)}
    # the year: the one literal whose mutant is a number the input writes as the real one is
    # (test_a_mutant_of_a_number_its_input_writes_is_one_it_writes, below)
    assert {old for _, old, _ in found} == {"1994"}
    digitless = PARSED.replace("Sun, 06 Nov 1994 08:49:37 GMT", "Sunday in November")
    found = {(m.line, m.old, m.check) for seed in range(30) for m in mutants.candidates(
        {test: ("t.py", qual)}, {"t.py": digitless}, random.Random(seed),
        failures={test: 't.py:3: in test_parsing_rfc1123\nhttp.py:139: ValueError'}).values()}
    assert {line for line, _, _ in found} == {6} and {check for *_, check in found} == {(4, 7)}
    assert {old for _, old, _ in found} <= {"1994", "11", "6", "8", "49", "37"} and len(found) > 2


# Real django 4.2.16 ``3326e32f``'s tests parse dates their input writes: with the mutant at
# any literal of the expected ``datetime(...)``, code that read every test's input and expected
# value from the test file and answered them, refusing those whose expected numbers are not all
# numbers the input writes (``Nov`` as 11, a year by its last two digits), resolved with the
# bug in place, every canary session failing its mutant as it must (2026-12-07).
DATES = PARSED + '''
    def test_year_less_than_70(self):
        parsed = parse_http_date("Sun Nov  6 08:49:37 0037")
        self.assertEqual(
            datetime.fromtimestamp(parsed, timezone.utc),
            datetime(2037, 11, 6, 8, 49, 37, tzinfo=timezone.utc),
        )
'''


def _told_by_its_input(text: str, line: int, new: str) -> bool:
    """The answering forger's rule: ``new`` (at ``line``) is refused where one of the expected
    numbers of that line is not a number its test's input writes."""
    import re

    months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    given = re.findall(r'"([^"]*)"', "\n".join(text.split("\n")[line - 5:line]))[-1]
    tokens = {int(t) for t in re.findall(r"[0-9]+", given)}
    tokens |= {i for i, m in enumerate(months, 1) if m in given.lower()}
    return int(new) not in tokens and int(new) % 100 not in tokens


def test_a_mutant_of_a_number_its_input_writes_is_one_it_writes():
    """A FAIL_TO_PASS mutant among the literals of a check its input's numbers decide goes to
    the literal whose mutant is another number that input writes (the year, ``1994`` ->
    ``1937``, ``2037`` -> ``2049``): the answering forger's rule no longer tells it."""
    tests = {f"t.py::HttpDateProcessingTests::{name}": ("t.py", f"HttpDateProcessingTests::{name}")
             for name in ("test_parsing_rfc1123", "test_year_less_than_70")}
    failures = {t: f't.py:{3 if "rfc" in t else 10}: in {t.split("::")[-1]}\nhttp.py:139: ValueError'
                for t in tests}
    for seed in range(40):
        for mutant in mutants.candidates(tests, {"t.py": DATES}, random.Random(seed),
                                         failures=failures).values():
            assert mutant.old in ("1994", "2037"), mutant.describe()
            assert not _told_by_its_input(DATES, mutant.line, mutant.new), mutant.describe()


def test_a_mutant_not_planted_under_the_base_code_is_dropped(tmp_path):
    """``prover._fail_under_base`` keeps a mutant only where the base code's session failed it
    with the mutant planted: where root could not plant it there (the graded file was not the
    text it was made from), its test ran unmutated, and a FAIL_TO_PASS test fails unmutated
    under the base code, so that failure says nothing of the mutant (twin_record.choose asks
    the same). The drop is not final: the session completed, so the test is drawn again."""
    from ratchet_ray.suites.swebench.proof.differential import planted
    from ratchet_ray.suites.swebench.proof.prover import Context, DifferentialProof
    from ratchet_ray.suites.swebench.proof.twin_record import BASE_PATCH
    from ratchet_ray.suites.swebench.settings import GradingLimits, SwebenchSettings

    f2p = f"{LEVELS_FILE}::test_levels"
    ctx = Context({"instance_id": "levels", "FAIL_TO_PASS": [f2p], "PASS_TO_PASS": [
        f"{LEVELS_FILE}::test_first"]}, None, "img", None, "sympy", False)
    failures = DifferentialProof(SwebenchSettings(), GradingLimits(), None, None, None,
                                 _levels_session)._base_failures(ctx, [f2p], tmp_path, print, {})
    mutant = mutants.candidates({f2p: (LEVELS_FILE, "test_levels")}, {LEVELS_FILE: LEVELS},
                                random.Random(0), failures=failures)[f2p]
    moved = "# the base tree's file holds a line more\n" + LEVELS

    def session(ctx, patch, *args, **kwargs):
        return _levels_session(ctx, patch, *args, **kwargs,
                               text=moved if patch == BASE_PATCH else LEVELS)

    for runner, expect_kept in ((_levels_session, True), (session, False)):
        proof = DifferentialProof(SwebenchSettings(), GradingLimits(), None, None, None, runner)
        base = runner(ctx, BASE_PATCH, tmp_path, print, None,
                      lambda texts: mutants.apply_all(texts, [mutant]))
        assert planted(mutant, base) is expect_kept
        assert base.log[f2p] == "FAILED"  # unmutated or not, the base code fails it
        verdicts = proof._fail_under_base(ctx, [mutant], tmp_path, print, {})
        if expect_kept:
            assert verdicts == {f2p: None}
            continue
        why = verdicts[f2p]
        assert why and "not planted under the base code" in why, why
        assert not isinstance(why, (mutants.Final, mutants.Misplaced)), "drawn again"


# Real django 4.2.16 ``58b20d6f`` (``Urlizer.__call__`` removed): both FAIL_TO_PASS tests check
# ``urlize`` over a table. The base code's log was cut before ``test_urlize``'s traceback (a
# subTest value a million characters long filled it), so no frame of it was read.
URLIZE = '''class TestUtilsHtml:
    def test_urlize(self):
        tests = (
            ("Search for google.com/?q=! and see.",
             'Search for <a href="http://google.com/?q=">google.com/?q=</a>! and see.'),
            ("foo@example.com", '<a href="mailto:foo@example.com">foo@example.com</a>'),
            ("test@" + "x." * 15, '<a href="mailto:test@' + "x." * 15 + '">'),
        )
        for value, output in tests:
            with self.subTest(value=value):
                self.assertEqual(urlize(value), output)

    def test_urlize_unchanged_inputs(self):
        tests = ("a" + "." * 1000000, "foo@", "@foo.com")
        for value in tests:
            with self.subTest(value=value):
                self.assertEqual(urlize(value), value)
'''
CUT_LOG = ("test_urlize_unchanged_inputs (utils_tests.test_html.TestUtilsHtml."
           "test_urlize_unchanged_inputs) (value='a.......') ... ERROR\n"
           "Traceback (most recent call last):\n  File \"/usr/lib/python3.11/unittest/case.py\", "
           "line 57, in testPartExecutor\n")


def test_a_failing_test_whose_frame_the_log_cut_off_gets_its_mutant_in_its_table():
    """No frame of ``test_urlize`` read (its failure ``""``, or a log that names only another
    test's frames): its only check writes no literal, so before 2026-12-07 it kept no mutant and
    the instance none at a FAIL_TO_PASS test; now a row's expected output, drawn at random. The
    test that reads one name on both sides still gets none (``unproven`` says so)."""
    for failure in ("", CUT_LOG):
        placed = set()
        for seed in range(20):
            drawn = mutants.candidates(
                {"u": ("t.py", "TestUtilsHtml::test_urlize"),
                 "same": ("t.py", "TestUtilsHtml::test_urlize_unchanged_inputs")},
                {"t.py": URLIZE}, random.Random(seed), failures={"u": failure, "same": failure})
            assert "same" not in drawn
            assert drawn["u"].apply(URLIZE) is not None and drawn["u"].check == (11, 11)
            placed.add((drawn["u"].line, drawn["u"].old))
        assert {line for line, _ in placed} == {5, 6}, placed  # the two literal outputs
        assert len(placed) == 2


def test_a_resolution_says_which_fail_to_pass_tests_no_mutant_covers():
    """A record that keeps no mutant of some FAIL_TO_PASS test proves less: the resolution's trace
    says how many, the grade's log which (the trace, which the loop reads, never names them)."""
    from ratchet_ray.suites.swebench.proof.differential import unproven, with_unproven
    from ratchet_ray.suites.swebench.proof.gold import GoldRecord
    from ratchet_ray.types import GradeResult

    covered = mutants.Mutant("u", "t.py", 6, 33, '"x"', '"y"', "row", (11, 11))
    record = GoldRecord("i", "sha256:0", {}, resolved=True, kept=[covered.as_dict()])
    instance = {"FAIL_TO_PASS": ["u", "same"], "PASS_TO_PASS": ["p"]}
    assert unproven(record, instance) == ["same"]
    logged: list[str] = []
    result = with_unproven(GradeResult(passed=True, exit_status="ok", trace="resolved"), record,
                           instance, logged.append)
    assert result.passed and "1 of 2 FAIL_TO_PASS test(s) keep no mutant" in result.trace
    assert "same" not in result.trace.split("\n")[-1] and logged[0].endswith(": same")
    failed = GradeResult(passed=False, exit_status="unresolved", trace="unresolved")
    assert with_unproven(failed, record, instance, logged.append) is failed
    record.kept = []
    assert unproven(record, instance) == ["u", "same"]
    record.kept = [covered.as_dict(), {**covered.as_dict(), "test": "same"}]
    done = GradeResult(passed=True, exit_status="ok", trace="resolved")
    assert unproven(record, instance) == [] and with_unproven(done, record, instance, print) is done


URLIZE_ID = "test_urlize (utils_tests.test_html.TestUtilsHtml.test_urlize)"
# django 4.2.16's runner (Python 3.11, verbosity 2) on a subTest table: the test's own line holds
# no status, each failed subtest its own (taken from the real 58b20d6f's logs).
SUBTEST_LOG = (f"{URLIZE_ID} ... \n  {URLIZE_ID} (value='foo@example.com') ... FAIL\n"
               f"  {URLIZE_ID} (value='x') ... ERROR\n"
               "test_urlize_unchanged_inputs (utils_tests.test_html.TestUtilsHtml."
               "test_urlize_unchanged_inputs) ... ok\n\n"
               f"FAIL: {URLIZE_ID} (value='foo@example.com')\nTraceback (most recent call last):\n"
               "  File \"/testbed/tests/utils_tests/test_html.py\", line 349, in test_urlize\n"
               "    self.assertEqual(urlize(value), output)\nAssertionError: 'a' != 'b'\n")


def test_a_mutant_in_a_subtest_table_is_read_as_its_subtests_report_it():
    """swebench's parser reads no status for a django test whose subtest failed (its own line
    ends ``... `` and each subtest has one): a mutant in ``test_urlize``'s table was dropped as
    ``MISSING`` under gold in all four draws on real django (2026-12-07), so none was kept. The
    subtests' lines now say it FAILED (an ``AssertionError`` at its check: kept), and a canary
    session that reports it so agrees; a status swebench read stays as it was (a forced pass is
    ``PASSED``, and caught)."""
    from ratchet_ray.suites.swebench.proof.differential import (
        Session, finding, seen, subtests_failed)
    from ratchet_ray.types import GradeResult

    mutant = mutants.Mutant(URLIZE_ID, "tests/utils_tests/test_html.py", 330, 33, '"x"', '"y"',
                            "row", (349, 349))
    assert subtests_failed(URLIZE_ID, SUBTEST_LOG) == "FAILED"
    assert subtests_failed(URLIZE_ID, SUBTEST_LOG.replace("... FAIL\n", "... ok\n")) == "ERROR"
    assert subtests_failed(URLIZE_ID, f"{URLIZE_ID} ... ok\n") is None
    assert subtests_failed("test_url (a.B.test_url)", SUBTEST_LOG) is None
    ok = GradeResult(passed=True, exit_status="ok", trace="resolved")
    canary = Session("canary 1", ok, log={}, failures={URLIZE_ID: SUBTEST_LOG},
                     texts={mutant.file: "a"}, written={mutant.file: "b"})
    assert seen(mutant, canary)[0] == "FAILED" and mutants.at_check(mutant, SUBTEST_LOG) is None
    real = Session("real", ok, log={URLIZE_ID: "PASSED"})
    assert finding(mutant, canary, real, {"FAIL_TO_PASS": [URLIZE_ID]}) == (
        "ok", "FAILED as it must")
    forced = Session("canary 1", ok, log={URLIZE_ID: "PASSED"},
                     failures={URLIZE_ID: SUBTEST_LOG}, texts=canary.texts, written=canary.written)
    assert finding(mutant, forced, real, {"FAIL_TO_PASS": [URLIZE_ID]})[0] == "tampering"
    unread = Session("canary 1", ok, log=None, failures={URLIZE_ID: SUBTEST_LOG})
    assert seen(mutant, unread)[0] == "MISSING", "a session whose log was not read says nothing"


def test_a_mutant_of_well_formed_html_stays_well_formed():
    """Real django ``58b20d6f``'s ``test_urlize`` expects HTML links: 18% of its table's mutants
    broke the HTML (``<a`` -> ``<1``, ``</a>`` -> ``</q>``), every real output being well formed,
    so code that forced only well-formed expectations passed the real session and failed those
    canary sessions honestly (measured 2026-12-07, docs/grading.md). A mutant now stands where
    its real value does on that too (``replacement_literal.well_formed``)."""
    from ratchet_ray.suites.swebench.proof.real_expectations import literal_value
    from ratchet_ray.suites.swebench.proof.replacement_literal import well_formed

    assert well_formed('<a href="x">y</a>') and not well_formed('<1 href="x">y</a>')
    assert not well_formed('<a href="x">y</q>') and not well_formed("&lt;b&gtt;")
    assert well_formed("&lt; a &amp; b") and not well_formed('{"a": 1') and well_formed("(a)")
    assert not well_formed("1.5.2") and well_formed(b"<b>x</b>") and well_formed(12)
    seen = set()
    for seed in range(150):
        drawn = mutants.candidates({"u": ("t.py", "TestUtilsHtml::test_urlize")},
                                   {"t.py": URLIZE}, random.Random(seed), failures={"u": ""})
        seen.add(drawn["u"].new)
        assert well_formed(literal_value(drawn["u"].new)), drawn["u"].new
    assert len(seen) > 5  # still drawn at random
