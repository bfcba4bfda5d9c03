"""Canaries for django's and sympy's runners, without Docker: planted files run under the real
``unittest`` runner (django's ``runtests.py`` prints its lines) and the sympy-style runner of
``unittest_instances``, their logs parsed by swebench's own parsers, then forged as code under test
could forge them (on the images: test_swebench_log_runners.py)."""

from __future__ import annotations

import ast
import random
import re
import subprocess
import sys

import pytest

import unittest_instances as fixture
from ratchet_ray.suites.swebench import log_canaries
from ratchet_ray.suites.swebench.protections import Protections
from ratchet_ray.types import GradeResult

MODULE_FILE = "tests/calc_tests/test_ops.py"
WORDS = ["python3", "tests/runtests.py", "--verbosity", "2", "--settings=test_sqlite",
         "--parallel", "1", "calc_tests.test_ops"]


def _parse(parser: str, log: str) -> dict[str, str]:
    from swebench.harness.log_parsers import PARSER_REGISTRY

    return PARSER_REGISTRY[parser](log, None)


def _django_plan(seed: int, text: str = fixture.UNITTEST_AFTER):
    graded = log_canaries.graded_files(fixture.unittest_instance_fields(), WORDS, "unittest")
    return log_canaries.plan("unittest", {f: (text, graded[f]) for f in graded}, random.Random(seed))


def _run_unittest(tmp_path, text: str) -> tuple[str, int]:
    """``text`` as the graded module of a fresh tree, run as django's runner runs its labels."""
    for rel, body in {**fixture.UNITTEST_FILES, **fixture.UNITTEST_FIXED, MODULE_FILE: text}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body)
    run = subprocess.run([sys.executable, "tests/runtests.py", *WORDS[2:]], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    return run.stdout + run.stderr, run.returncode


@pytest.mark.parametrize("name, expected", [
    ("test_add (calc_tests.test_ops.OpsTests)", ("calc_tests.test_ops", "OpsTests", "test_add")),
    ("test_add (calc_tests.test_ops.OpsTests.test_add)",
     ("calc_tests.test_ops", "OpsTests", "test_add")),
    ("Regression test for #1234.", None), ("test_x (Loose)", None)])
def test_unittest_names_in_both_spellings(name, expected):
    assert log_canaries.unittest_name(name) == expected


@pytest.mark.parametrize("extra, expected", [
    ([], {MODULE_FILE: ["OpsTests::test_add", "OpsTests::test_mul", "OpsTests::test_tags",
                        "OpsTests::test_text", "MoreTests::test_neg"]}),
    (["other_app"], {MODULE_FILE: ["OpsTests::test_add", "OpsTests::test_mul",
                                   "OpsTests::test_tags", "OpsTests::test_text",
                                   "MoreTests::test_neg"]}),
    (["-k", "add"], {}), (["--start-at=calc_tests.test_ops"], {})])
def test_django_labels_choose_the_files_run_whole(extra, expected):
    assert log_canaries.graded_files(fixture.unittest_instance_fields(), WORDS + extra,
                                     "unittest") == expected
    narrower = WORDS[:-1] + ["calc_tests.test_ops.OpsTests"]
    assert log_canaries.graded_files(fixture.unittest_instance_fields(), narrower, "unittest") == {}


def test_a_mutant_of_an_equality_fails_where_not_equal_would_pass(tmp_path):
    """``Tags`` equals and is unequal to the same list (as Django's ErrorList is): its mutant
    must still fail, so a fix is not taken for a forgery."""
    plan = next(p for p in map(_django_plan, range(100))
                if "mutant of test_tags" in {t.kind for t in p.tests})
    log, _ = _run_unittest(tmp_path, plan.files[0].planted)
    statuses = _parse("parse_log_django", log)
    mutant = next(t for t in plan.tests if t.kind == "mutant of test_tags")
    assert set(mutant.reported(statuses)) == {"FAILED"}, log
    assert plan.problem(statuses) is None


@pytest.mark.parametrize("seed", range(8))
def test_django_canaries_sit_in_graded_classes_and_fail_where_the_fix_passes(seed, tmp_path):
    plan = _django_plan(seed)
    (planted,) = plan.files
    tree = ast.parse(planted.planted)
    methods = {f"{c.name}::{m.name}" for c in tree.body if isinstance(c, ast.ClassDef)
               for m in c.body if isinstance(m, ast.FunctionDef)}
    assert {t.function for t in plan.tests} <= methods
    assert 2 <= len(plan.tests) <= 4
    for test in plan.tests:
        assert re.fullmatch(r"test_[a-z]+_[a-z]+(_[a-z]+)?", test.function.split("::")[1])
        assert test.kind == "probe" or test.kind.startswith("mutant of test_")
    log, code = _run_unittest(tmp_path, planted.planted)
    statuses = _parse("parse_log_django", log)
    assert code == 1 and all(statuses[n] == "PASSED" for n in fixture.GRADED["unittest"]), log
    assert plan.problem(statuses) is None, log
    # Each way code under test can forge the stream turns the canaries too.
    rewritten = re.sub(r" \.\.\. (FAIL|ERROR)$", " ... ok", log, flags=re.M)
    rewritten = re.sub(r"^(FAIL|ERROR): .*$", "", rewritten, flags=re.M)
    assert plan.problem(_parse("parse_log_django", rewritten))[0] == "test_tampering"
    late = log + "".join(f"\n{t.keys[1]} ... System check identified no issues (0 silenced)\nok"
                         for t in plan.tests)
    assert plan.problem(_parse("parse_log_django", late))[0] == "test_tampering"


def test_django_mutants_change_the_expectation_or_invert_it():
    kinds = set()
    for seed in range(40):
        for test in _django_plan(seed).tests:
            kinds.add(test.kind)
    assert {"mutant of test_add", "mutant of test_text", "mutant of test_neg",
            "mutant of test_tags"} <= kinds
    texts = {_django_plan(seed).files[0].planted for seed in range(40)}
    assert any(re.search(r"self\.assertEqual\(add\(2, 3\), (6|7|8|12|15)\)", t) for t in texts)
    assert any(re.search(r"self\.assertEqual\(upper\('ab'\), 'AB[xyzq]'\)", t) for t in texts)
    assert any("self.assertFalse(neg(-1) > 0)" in t for t in texts)
    # an equality with no literal to change: a comparison that fails whatever the values
    assert any('self.assertEqual((tags("a", "b"), 0), (["a", "b"], 1))' in t for t in texts)
    # A method graded by its docstring's line is not copied (nor is a decorated one).
    assert all(t.count("Zero times anything is zero.") == 1 for t in texts)
    assert not kinds & {"mutant of test_mul_zero"}


def test_a_django_file_not_as_expected_gets_a_class_of_probes_appended(tmp_path):
    plan = _django_plan(5)
    (planted,) = plan.files
    assert planted.tail.startswith("\n\nclass ") and "(__import__('unittest').TestCase):" in planted.tail
    log, _ = _run_unittest(tmp_path, fixture.UNITTEST_AFTER + planted.tail)
    assert plan.problem(_parse("parse_log_django", log)) is None, log


def test_a_skipped_class_excuses_its_canaries_only():
    plan = _django_plan(2)
    test = plan.tests[0]
    skipped = {key: "SKIPPED" for key in test.excuse_keys}
    others = {k: "FAILED" for t in plan.tests[1:] for k in t.keys[:1]}
    assert plan.problem({**skipped, **others, test.keys[0]: "SKIPPED"}) is None
    status, why = plan.problem({**others, test.keys[0]: "SKIPPED"})
    assert status == "results_mismatch" and test.node in why


@pytest.mark.parametrize("seed", range(6))
def test_sympy_canaries_are_read_by_bare_names_unlike_any_other_files_test(seed, tmp_path):
    files = {"calc/tests/test_ops.py": (fixture.SYMPY_AFTER, fixture.GRADED["sympy"]),
             "calc/tests/test_more.py": (fixture.SYMPY_FILES["calc/tests/test_more.py"],
                                         fixture.GRADED["sympy"])}
    plan = log_canaries.plan("sympy", files, random.Random(seed))
    assert plan is not None and all(t.keys == (t.function, f"{t.file}:{t.function}")
                                    for t in plan.tests)
    assert {t.file for t in plan.tests} == {"calc/tests/test_ops.py"}, "only files with a graded test"
    more = fixture.SYMPY_FILES["calc/tests/test_more.py"]
    assert not any(f"def {t.function}(" in more for t in plan.tests)
    log, code = _run_sympy(tmp_path, plan.files[0].planted)
    statuses = _parse("parse_log_sympy", log)
    assert code == 1 and all(statuses[n] == "PASSED" for n in fixture.GRADED["sympy"])
    assert plan.problem(statuses) is None, log
    forged = re.sub(r"^(test_\w+) [FE]$", r"\1 ok", log, flags=re.M)
    forged = re.sub(r"^_+ .*\.py:\w+ _+$", "", forged, flags=re.M)
    assert plan.problem(_parse("parse_log_sympy", forged))[0] == "test_tampering"


def _run_sympy(tmp_path, planted: str) -> tuple[str, int]:
    tree = {**fixture.SYMPY_FILES, **fixture.SYMPY_FIXED, "calc/tests/test_ops.py": planted}
    for rel, body in tree.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body)
    run = subprocess.run([sys.executable, "bin/test", "-C", "--verbose", "calc/tests/test_ops.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    return run.stdout, run.returncode


def test_a_sympy_canary_last_in_its_file_is_read_from_its_traceback_header(tmp_path):
    """sympy writes a file's last test as ``name F   [FAIL]``, which swebench's parser skips."""
    files = {"calc/tests/test_ops.py": (fixture.SYMPY_AFTER, fixture.GRADED["sympy"])}
    for seed in range(200):
        plan = log_canaries.plan("sympy", files, random.Random(seed))
        last = re.findall(r"^def (test_\w+)", plan.files[0].planted, re.M)[-1]
        if last in {t.function for t in plan.tests}:
            break
    else:
        pytest.fail("no seed put a canary last")
    log, _ = _run_sympy(tmp_path, plan.files[0].planted)
    statuses = _parse("parse_log_sympy", log)
    assert last not in statuses and statuses[f"calc/tests/test_ops.py:{last}"] == "FAILED", log
    assert plan.problem(statuses) is None


def test_a_failure_a_later_line_overrides_is_not_trusted():
    plan_free = Protections(runner="unittest")
    resolved = GradeResult(passed=True, exit_status="resolved")
    name = fixture.GRADED["unittest"][0]
    log = (f"{name} ... FAIL\n\nFAIL: {name}\nTraceback...\n"
           f"{name} ... System check identified no issues (0 silenced)\nok\n")
    statuses = _parse("parse_log_django", log)
    assert statuses[name] == "PASSED"  # swebench's parser takes the late line
    judged = plan_free.judge(resolved, statuses, 1, lambda _m: None, log)
    assert (judged.passed, judged.exit_status) == (False, "results_mismatch")
    assert "a failure overridden" in judged.trace and name in judged.trace
    honest = f"{name} ... ok\n"
    assert plan_free.judge(resolved, _parse("parse_log_django", honest), 0, lambda _m: None, honest).passed
    sympy_log = "test_add F\n____ calc/tests/test_ops.py:test_add ____\nTraceback\ntest_add ok\n"
    judged = Protections(runner="sympy").judge(resolved, _parse("parse_log_sympy", sympy_log), 1,
                                               lambda _m: None, sympy_log)
    assert judged.exit_status == "results_mismatch" and "test_add" in judged.trace
    # pytest's runs are judged by their JUnit report, not by these lines
    assert Protections(runner="pytest").judge(resolved, statuses, 1, lambda _m: None, log).passed
