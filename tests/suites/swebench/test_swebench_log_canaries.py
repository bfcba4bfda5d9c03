"""django's and sympy's runners without Docker: graded tests mutated in place (the canary
sessions' mutants) run under the real ``unittest`` runner (django's ``runtests.py`` prints its
lines) and the sympy-style runner of ``unittest_instances``, their logs parsed by swebench's own
parsers: a mutant fails under the fix by the graded test's own name, and a forger's rewritten
stream passes it (on the images: test_swebench_log_runners.py)."""

from __future__ import annotations

import random
import re
import subprocess
import sys

import pytest

import unittest_instances as fixture
from ratchet_ray.suites.swebench.integrity import graded_tests, log_canaries
from ratchet_ray.suites.swebench.proof import mutants
from ratchet_ray.suites.swebench.integrity.session_layers import Protections
from ratchet_ray.types import GradeResult

MODULE_FILE = "tests/calc_tests/test_ops.py"
WORDS = ["python3", "tests/runtests.py", "--verbosity", "2", "--settings=test_sqlite",
         "--parallel", "1", "calc_tests.test_ops"]
SYMPY_WORDS = ["python3", "bin/test", "-C", "--verbose", "calc/tests/test_ops.py",
               "calc/tests/test_more.py"]


def _parse(parser: str, log: str) -> dict[str, str]:
    from swebench.harness.log_parsers import PARSER_REGISTRY

    return PARSER_REGISTRY[parser](log, None)


def _run(tmp_path, tree: dict[str, str], argv: list[str]) -> tuple[str, int]:
    for rel, body in tree.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body)
    run = subprocess.run([sys.executable, *argv], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    return run.stdout + run.stderr, run.returncode


def _instance(kind: str) -> dict:
    graded = fixture.GRADED[kind]
    return {"FAIL_TO_PASS": graded[:1], "PASS_TO_PASS": graded[1:]}


@pytest.mark.parametrize("name, expected", [
    ("test_add (calc_tests.test_ops.OpsTests)", ("calc_tests.test_ops", "OpsTests", "test_add")),
    ("test_add (calc_tests.test_ops.OpsTests.test_add)",
     ("calc_tests.test_ops", "OpsTests", "test_add")),
    ("Regression test for #1234.", None), ("test_x (Loose)", None)])
def test_unittest_names_in_both_spellings(name, expected):
    assert log_canaries.unittest_name(name) == expected



def test_django_mutants_are_the_graded_methods_changed_in_place(tmp_path):
    located = graded_tests.locate(_instance("unittest"), "unittest", WORDS)
    docstring_named = fixture.GRADED["unittest"][-1]
    assert docstring_named not in located, "a test logged by its docstring cannot be located"
    assert {f for f, _ in located.values()} == {MODULE_FILE}
    found = mutants.candidates(located, {MODULE_FILE: fixture.UNITTEST_AFTER}, random.Random(3))
    # assertEqual's expectation changed (same length); test_neg's assertTrue has no literal
    assert set(found) == set(fixture.GRADED["unittest"][:4])
    for test, mutant in found.items():
        planted = mutant.apply(fixture.UNITTEST_AFTER)
        assert len(planted) == len(fixture.UNITTEST_AFTER) and planted != fixture.UNITTEST_AFTER
        log, code = _run(tmp_path / test.split()[0], {**fixture.UNITTEST_FILES, **fixture.UNITTEST_FIXED,
                                                      MODULE_FILE: planted}, WORDS[1:])
        statuses = _parse("parse_log_django", log)
        assert code == 1 and statuses[test] == "FAILED", log
        assert all(statuses[t] == "PASSED" for t in fixture.GRADED["unittest"] if t != test), log
        # code that rewrites the stream passes the mutant too: what the differential catches
        forged = re.sub(r" \.\.\. FAIL$", " ... ok", log, flags=re.M)
        assert _parse("parse_log_django", forged)[test] == "PASSED"


def test_sympy_mutants_are_placed_in_the_one_file_that_defines_the_test(tmp_path):
    located = graded_tests.locate(_instance("sympy"), "sympy", SYMPY_WORDS)
    texts = {"calc/tests/test_ops.py": fixture.SYMPY_AFTER,
             "calc/tests/test_more.py": fixture.SYMPY_FILES["calc/tests/test_more.py"]}
    assert set(graded_tests.files_of(located)) == set(texts)
    settled = graded_tests.settle(located, texts)
    assert settled == {"test_add": ("calc/tests/test_ops.py", "test_add"),
                       "test_mul": ("calc/tests/test_ops.py", "test_mul")}
    found = mutants.candidates(settled, texts, random.Random(0))
    planted = found["test_add"].apply(fixture.SYMPY_AFTER)
    log, code = _run(tmp_path, {**fixture.SYMPY_FILES, **fixture.SYMPY_FIXED,
                                "calc/tests/test_ops.py": planted}, SYMPY_WORDS[1:])
    statuses = _parse("parse_log_sympy", log)
    assert code == 1 and statuses["test_add"] == "FAILED" and statuses["test_mul"] == "PASSED", log


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
