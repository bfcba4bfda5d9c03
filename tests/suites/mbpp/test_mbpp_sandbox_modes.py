"""The sandbox's modes: it fails closed without bubblewrap, and the opt-in weak mode still grades.

This machine runs the strong ``bwrap`` mode; these tests force the probe off on a real ``Sandbox``
to exercise the other paths with benign (non-forking) code only."""

from __future__ import annotations

import logging
import uuid

import pytest

from ratchet_ray.suites.mbpp import sandbox as sandbox_module
from ratchet_ray.suites.mbpp.grader import MbppGrader
from ratchet_ray.suites.mbpp.sandbox import SandboxLimits

TASK = "Mbpp/17"


def test_without_bubblewrap_grading_refuses_and_names_the_fix(mbpp_dataset, groundtruth_store, mbpp_tasks,
                                                              monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox_module, "probe_bwrap", lambda limits: (False, "forced off by test"))
    grader = MbppGrader(mbpp_dataset, groundtruth=groundtruth_store)
    marker = tmp_path / f"ran-{uuid.uuid4().hex}"
    code = f"def square_perimeter(a):\n    open({str(marker)!r}, 'w').write('ran')\n    return 4 * a\n"
    result = grader.grade(mbpp_tasks[TASK], code)
    assert grader.sandbox.mode == "refused"
    assert not result.passed and result.infra_failure and result.exit_status == "sandbox_unavailable"
    assert "fix:" in result.trace and "bubblewrap" in result.trace and "allow_weak_sandbox" in result.trace
    assert not marker.exists()


def test_weak_mode_needs_the_config_opt_in(mbpp_dataset, groundtruth_store, monkeypatch):
    from ratchet_ray.suites.mbpp.settings import MbppSettings

    monkeypatch.setattr(sandbox_module, "probe_bwrap", lambda limits: (False, "forced off by test"))
    assert MbppGrader(mbpp_dataset, mbpp=MbppSettings(), groundtruth=groundtruth_store).sandbox.mode == "refused"
    opted = MbppGrader(mbpp_dataset, mbpp=MbppSettings(allow_weak_sandbox=True), groundtruth=groundtruth_store)
    assert opted.sandbox.mode == "weak"


@pytest.fixture
def weak_grader(mbpp_dataset, groundtruth_store, monkeypatch):
    monkeypatch.setattr(sandbox_module, "probe_bwrap", lambda limits: (False, "forced off by test"))
    return MbppGrader(mbpp_dataset, groundtruth=groundtruth_store, allow_weak=True,
                      limits=SandboxLimits(budget_s=5.0, memory_mb=256))


@pytest.mark.parametrize("code, status", [
    (None, "ok"),
    ("def square_perimeter(a):\n    return 5 * a\n", "failed_tests"),
    ("def square_perimeter(a):\n    while True:\n        pass\n", "timeout"),
    ("def square_perimeter(a):\n    return len(bytearray(4 * 1024 ** 3))\n", "memory"),
])
def test_weak_mode_grades_enforces_limits_and_warns(weak_grader, mbpp_dataset, mbpp_tasks, caplog, code, status):
    output = code or mbpp_dataset.problem(TASK)["canonical_solution"]
    with caplog.at_level(logging.WARNING, logger="ratchet_ray.suites.mbpp.sandbox"):
        result = weak_grader.grade(mbpp_tasks[TASK], output)
    assert result.exit_status == status and result.passed == (status == "ok"), result
    assert result.trace.startswith("[sandbox weak]")
    assert any("WEAK" in record.message for record in caplog.records)


def test_weak_mode_still_scrubs_the_environment(weak_grader, mbpp_tasks, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-fallback-secret")
    code = "def square_perimeter(a):\n    import os\n    return os.environ.get('AWS_SECRET_ACCESS_KEY', 'absent')\n"
    result = weak_grader.grade(mbpp_tasks[TASK], code)
    assert "'absent'" in result.trace and "fake-fallback-secret" not in result.trace


def test_the_runner_forks_without_multiprocessing():
    """The split processes come from os.fork directly: no start method (forkserver on Python
    3.14) can skip a step; the sandboxed runner never imports multiprocessing."""
    source = (sandbox_module.PACKAGE_DIR / "runner.py").read_text()
    assert "os.fork()" in source and "multiprocessing" not in source.split('"""', 2)[2]
