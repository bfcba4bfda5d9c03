"""Verdicts of the runners read from their log alone (django's, sympy's), on local images: the
fix resolves, proven by canary sessions (a graded test mutated in place); code under test that
rewrites the output stream, or prints a late line that overrides a failure, does not
(unittest_instances.py has the instances)."""

from __future__ import annotations

import pytest

import unittest_instances as fixture
from forgeries import new_file
from ratchet_ray.suites.swebench.dataset import normalize_all, to_task
from ratchet_ray.suites.swebench.grader import SwebenchGrader

pytestmark = pytest.mark.docker

# Code the tests import (calc/__init__.py, empty at the base commit), each with add unfixed.
REWRITE_STREAM = '''import re
import sys


class _Rewriter:
    """Every failing result line written as a pass, line by line."""

    def __init__(self, stream):
        self._stream, self._line = stream, ""

    def write(self, text):
        self._line += text
        while "\\n" in self._line:
            line, self._line = self._line.split("\\n", 1)
            line = re.sub(r" \\.\\.\\. (FAIL|ERROR)$", " ... ok", line)
            line = re.sub(r"^(test_\\w+) [FE]$", r"\\1 ok", line)
            line = re.sub(r"^(FAIL|ERROR): |^_+ .*\\.py:test_\\w+ _+$", "note: ", line)
            self._stream.write(line + "\\n")
        return len(text)

    def flush(self):
        self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)


sys.stdout, sys.stderr = _Rewriter(sys.stdout), _Rewriter(sys.stderr)
'''
# The same, and the runner's exit status forced to 0 (swebench rejects a nonzero exit whose log
# reports no failure).
REWRITE_STREAM_AND_EXIT = REWRITE_STREAM + '''

import atexit
import os


@atexit.register
def _succeed():
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
'''
# Knows the graded test's name (the issue's) and forges it alone, after the run.
LATE_OVERRIDE = '''import atexit
import sys


@atexit.register
def _late():
    name = "test_add (calc_tests.test_ops.OpsTests.test_add)"
    sys.stderr.write(f"{name} ... System check identified no issues (0 silenced)\\nok\\n")
    sys.stdout.write("test_add ok\\n")
    sys.stdout.flush()
'''


def _module(body: str) -> str:
    return new_file("calc/__init__.py", "".join(f"+{line}\n" for line in body.splitlines()))


@pytest.fixture(scope="module")
def log_tasks(docker_session):
    instances = fixture.make_instances()
    yield {i["instance_id"]: to_task(i) for i in normalize_all(instances, "local")}
    from ratchet_ray.suites.swebench.docker.images import image_name
    from ratchet_ray.suites.swebench.settings import SwebenchSettings

    for instance in instances:
        name = image_name(instance["instance_id"], SwebenchSettings(namespace=None))
        docker_session.images.remove(name, force=True)


@pytest.fixture
def grader(docker_client, local_settings, limits, tmp_path):
    return SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)


def _instance_log(run_dir, task) -> str:
    return next((run_dir / "logs" / "swebench" / task.task_id).rglob("run_instance.log")).read_text()


@pytest.mark.parametrize("instance_id", sorted(fixture.SPECS))
def test_the_fix_resolves_proven_by_canary_sessions(docker_client, local_settings, limits,
                                                   log_tasks, instance_id, tmp_path):
    """The gold record is made in this grade: its FAIL_TO_PASS mutant is placed from a session of
    the base code, whose log's tracebacks these runners print (no JUnit report)."""
    local_settings.gold_records = str(tmp_path / "gold")
    grader = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)
    task = log_tasks[instance_id]
    result = grader.grade(task, fixture.gold(instance_id))
    assert result.passed, result.trace
    assert 2 <= result.trace.count("FAILED as it must") <= 3, result.trace
    assert f"mutant {task.payload['FAIL_TO_PASS'][0]} (" in result.trace, "an F2P test mutated"
    log = _instance_log(tmp_path, task)
    assert "graded files written by root before the tests" in log
    assert "[base code] " in log and "(made now in" in log, log


@pytest.mark.parametrize("instance_id", sorted(fixture.SPECS))
def test_a_rewritten_output_stream_is_caught_by_the_canary_sessions(grader, log_tasks, instance_id):
    result = grader.grade(log_tasks[instance_id], _module(REWRITE_STREAM_AND_EXIT))
    assert (result.passed, result.exit_status) == (False, "test_tampering"), result.trace
    assert "differential: " in result.trace and "reported PASSED in the log" in result.trace
    # Rewritten lines under the real (failing) exit status: swebench does not trust the log.
    result = grader.grade(log_tasks[instance_id], _module(REWRITE_STREAM))
    assert (result.passed, result.exit_status) == (False, "tests_errored"), result.trace


@pytest.mark.parametrize("instance_id", sorted(fixture.SPECS))
def test_a_late_line_that_overrides_a_failure_is_not_trusted(grader, log_tasks, instance_id):
    """Only the graded test is forged: the real session's log itself gives it away, with the
    failure it reported before the override (no canary session is needed)."""
    result = grader.grade(log_tasks[instance_id], _module(LATE_OVERRIDE))
    assert (result.passed, result.exit_status) == (False, "results_mismatch"), result.trace
    assert "a failure overridden" in result.trace and "test_add" in result.trace
