"""Verdicts a patch cannot forge, on the local instances: harness paths restored, results read
from secret markers and a JUnit report (issue 14)."""

from __future__ import annotations

import re

import pytest

from forgeries import FORCE_PASS_HOOK, FORGERIES, IN_PROCESS, MID_RUN, new_file
from ratchet_ray.suites.swebench.grader import SwebenchGrader
from test_swebench_layers import layer_of

pytestmark = pytest.mark.docker

# What each forgery must come to: the exit status, and a phrase of the trace saying why.
EXPECTED = {
    "root_conftest": ("unresolved", "conftest.py (pytest conftest)"),
    "nested_conftest": ("unresolved", "tests/conftest.py (pytest conftest)"),
    "pytest_ini_deselect": ("unresolved", "pytest.ini (pytest configuration)"),
    "f2p_test_file_edit": ("unresolved", "tests/test_ops.py (test file the instance is graded with)"),
    "sitecustomize": ("unresolved", "sitecustomize.py (interpreter start-up hook)"),
    "fake_passed_lines": ("test_tampering", "the exit code was rewritten"),
    "imitated_markers": ("test_tampering", "imitates swebench's marker"),
    "report_rewrite_in_source": ("test_tampering", "from _pytest.reports import TestReport"),
    "spare_env_canary": ("test_tampering", "grader's pytest plugin saw"),
    "spare_hex_canary": ("test_tampering", "'_py' + 'test.rep' + 'orts'"),
    "exit_code_rewrite": ("test_tampering", "grader's pytest plugin saw"),
    "junit_and_summary_rewrite": ("test_tampering", "_pytest.junitxml"),
    "hook_wrapper_from_gc": ("test_tampering", "gc.get_objects()"),
    # No screened name in these: the sentinel sees them in pytest's process.
    "spare_untracked_canary": ("test_tampering", "TestReport.__init__ replaced by an object from "
                               "/testbed/calc/ops.py"),
    "forge_only_graded": ("test_tampering", "tests/test_ops.py::test_add raised AssertionError but "
                          "its report says passed"),
    "shadow_pytest": ("unresolved", "pytest.py (a new module at the root that shadows pytest"),
}


@pytest.fixture
def grader(docker_client, local_settings, limits, tmp_path):
    return SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_each_forgery_is_not_resolved(grader, tasks, name):
    result = grader.grade(tasks["ratchet__calc-1"], FORGERIES[name])
    status, why = EXPECTED[name]
    assert (result.passed, result.infra_failure) == (False, False), result.trace
    assert result.exit_status == status and why in result.trace, result.trace
    if name in IN_PROCESS:  # the static screen is suspicion only: a runtime layer proved it
        assert layer_of(result) in ("sentinel", "differential"), result.trace


@pytest.mark.parametrize("name", sorted(MID_RUN))
def test_machinery_changed_during_a_test_is_seen_after_it(grader, tasks, name):
    """Under the image's pytest (the static screen only suspects): a change made inside a test,
    even one undone in a later test, is named by the sentinel's check after the test that made
    it (the first to call ``add``: test_add)."""
    patch, what = MID_RUN[name]
    result = grader.grade(tasks["ratchet__calc-1"], patch)
    assert (result.passed, result.exit_status) == (False, "test_tampering"), result.trace
    assert re.search(r"after tests/test_ops\.py::test_\w+: " + re.escape(what), result.trace), \
        result.trace


def test_gold_still_resolves_and_harness_edits_next_to_a_fix_are_undone(grader, tasks, gold):
    assert grader.grade(tasks["ratchet__calc-1"], gold["ratchet__calc-1"]).passed
    # A fix plus a forcing conftest: graded on the real tests, the conftest named in the trace.
    both = grader.grade(tasks["ratchet__calc-1"],
                        gold["ratchet__calc-1"] + new_file("conftest.py", FORCE_PASS_HOOK))
    assert both.passed and "conftest.py (pytest conftest)" in both.trace, both.trace


def test_a_non_test_file_in_a_test_folder_is_kept(grader, tasks, gold):
    # A data file the fix needs next to the tests is no harness: the grade sees it.
    fixture = new_file("tests/data/expected.txt", "+5\n")
    result = grader.grade(tasks["ratchet__calc-1"], gold["ratchet__calc-1"] + fixture)
    assert result.passed and "harness restored" not in result.trace, result.trace


def test_a_patch_into_git_internals_fails_as_tampering(grader, tasks, gold):
    hook = new_file(".git/hooks/post-checkout", "+#!/bin/sh\n+touch /tmp/owned\n")
    result = grader.grade(tasks["ratchet__calc-1"], gold["ratchet__calc-1"] + hook)
    assert (result.passed, result.exit_status, result.infra_failure) == (False, "test_tampering", False)
    assert ".git/hooks/post-checkout" in result.trace


def test_tests_run_as_the_untrusted_uid(grader, tasks):
    # Resolves only when the tests do not run as root.
    as_user = """diff --git a/calc/ops.py b/calc/ops.py
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -1,8 +1,9 @@
 \"\"\"Tiny arithmetic helpers.\"\"\"
+import os
 
 
 def add(a, b):
-    return a - b
+    return a + b if os.getuid() == 65534 else a - b
 
 
 def mul(a, b):
"""
    result = grader.grade(tasks["ratchet__calc-1"], as_user)
    assert result.passed, result.trace
