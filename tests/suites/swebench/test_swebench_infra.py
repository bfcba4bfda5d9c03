"""Infrastructure only from trusted signals: text the tests print never makes an infrastructure
failure, and a process the kernel kills for memory while the patch's code runs is the patch's
failure (``out_of_memory``), read from the memory cgroup's own count (issue 44, item 4)."""

from __future__ import annotations

import json

import pytest

from ratchet_ray.suites.swebench.docker.execbox import oom_kill_count
from ratchet_ray.suites.swebench.grader import SwebenchGrader
from ratchet_ray.suites.swebench.docker.infra import OUT_OF_MEMORY, log_classifier_note, memory_verdict
from ratchet_ray.types import GradeResult

# Every environment-tier signature of swebench's log classifier, printed by a wrong fix (add
# still subtracts) on stdout and stderr: graded before as infra_failure=True (env_*).
SIGNATURES = (">>>>> Tests Errored", "Cannot allocate memory", "OutOfMemoryError", "Killed",
              "Error response from daemon", "Cannot connect to the Docker daemon",
              "Could not resolve host", "cannot open display", "Failed to launch")
PRINTS_INFRA = """diff --git a/calc/ops.py b/calc/ops.py
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -2,7 +2,10 @@
 
 
 def add(a, b):
-    return a - b
+    import sys
+    for line in %r:
+        print(line), print(line, file=sys.stderr)
+    return a - b
 
 
 def mul(a, b):
""" % (SIGNATURES,)
# A wrong fix that allocates far past the container's memory (local_settings: 512 MB, no swap)
# when the tests call it: the kernel kills pytest.
HOGS_MEMORY = """diff --git a/calc/ops.py b/calc/ops.py
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -2,7 +2,8 @@
 
 
 def add(a, b):
-    return a - b
+    hog = b"x" * (2 << 30)
+    return a + b + len(hog) * 0
 
 
 def mul(a, b):
"""


def test_the_memory_cgroup_count_is_read_from_either_cgroup_version():
    v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"
    v2 = "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n"
    assert (oom_kill_count(v1), oom_kill_count(v2), oom_kill_count("")) == (3, 2, None)


def test_an_oom_kill_is_the_patchs_failure_and_never_hides_a_verdict():
    failed = GradeResult(passed=False, exit_status="tests_errored", trace="no results")
    hit = memory_verdict(failed, 1, 512)
    assert (hit.passed, hit.exit_status, hit.infra_failure) == (False, OUT_OF_MEMORY, False)
    assert "not infrastructure" in hit.trace and "no results" in hit.trace
    resolved = GradeResult(passed=True, exit_status="ok", trace="resolved")
    assert memory_verdict(resolved, 1, 512).passed, "a test may expect a child to be killed"
    tampered = GradeResult(passed=False, exit_status="test_tampering", trace="canary passed")
    assert memory_verdict(tampered, 2, 512).exit_status == "test_tampering"
    assert memory_verdict(failed, 0, 512) is failed and memory_verdict(failed, None, 512) is failed


def test_swebenchs_log_classifier_is_only_a_note():
    note = log_classifier_note({"infra_failure": True, "infra_failure_reason": "out_of_memory"})
    assert "not infrastructure" in note and "out_of_memory" in note
    assert log_classifier_note({"infra_failure": False}) == ""


@pytest.fixture
def grader(docker_client, local_settings, limits, tmp_path):
    return SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)


@pytest.mark.docker
def test_text_the_tests_print_never_makes_an_infrastructure_failure(grader, tasks, tmp_path):
    result = grader.grade(tasks["ratchet__calc-1"], PRINTS_INFRA)
    assert (result.passed, result.infra_failure) == (False, False), result.trace
    # ">>>>> Tests Errored" makes swebench find no results: the patch's own failure.
    assert result.exit_status == "tests_errored", result.trace
    # swebench's own classifier did read the printed text as an environment fault: not trusted.
    (report,) = tmp_path.glob("logs/swebench/ratchet__calc-1/*/report.json")
    swebench = json.loads(report.read_text())["swebench"]
    assert swebench["infra_failure"] is True, swebench


@pytest.mark.docker
def test_a_real_oom_kill_of_the_code_under_test_is_the_patchs_failure(grader, tasks):
    result = grader.grade(tasks["ratchet__calc-1"], HOGS_MEMORY)
    assert (result.passed, result.infra_failure) == (False, False), result.trace
    assert result.exit_status == OUT_OF_MEMORY, result.trace
    assert "OOM killer ended" in result.trace, result.trace
