"""The sandbox's weaker modes: it fails closed where it must, and the fallback path still grades.

This machine runs the full ``namespaces`` mode; these tests force the other modes on a real
``Sandbox`` to exercise their code paths with benign (non-forking) code only."""

from __future__ import annotations

import os
import uuid

import pytest

from ratchet_ray.suites.mbpp import sandbox as sandbox_module
from ratchet_ray.suites.mbpp.grader import MbppGrader
from ratchet_ray.suites.mbpp.sandbox import SandboxLimits

TASK = "Mbpp/17"


def test_root_without_any_containment_refuses_to_run_code(mbpp_dataset, groundtruth_store, mbpp_tasks,
                                                          monkeypatch, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the refusal applies to graders running as root")
    monkeypatch.setattr(sandbox_module, "probe_namespaces", lambda: (False, "forced off by test"))
    monkeypatch.setattr(sandbox_module, "_runtime_reachable_by_others", lambda: False)
    grader = MbppGrader(mbpp_dataset, groundtruth=groundtruth_store)
    marker = tmp_path / f"ran-{uuid.uuid4().hex}"
    code = f"def square_perimeter(a):\n    open({str(marker)!r}, 'w').write('ran')\n    return 4 * a\n"
    result = grader.grade(mbpp_tasks[TASK], code)
    assert grader.sandbox.mode == "refused"
    assert not result.passed and result.infra_failure and result.exit_status == "sandbox_unavailable"
    assert "fix:" in result.trace and not marker.exists()


@pytest.fixture
def fallback_grader(mbpp_dataset, groundtruth_store):
    grader = MbppGrader(mbpp_dataset, groundtruth=groundtruth_store,
                        limits=SandboxLimits(budget_s=5.0, memory_mb=256))
    grader.sandbox.mode, grader.sandbox.uid_kind, grader.sandbox.refusal = "rlimits", None, ""
    return grader


@pytest.mark.parametrize("code, status", [
    (None, "ok"),
    ("def square_perimeter(a):\n    return 5 * a\n", "failed_tests"),
    ("def square_perimeter(a):\n    while True:\n        pass\n", "timeout"),
    ("def square_perimeter(a):\n    return len(bytearray(4 * 1024 ** 3))\n", "memory"),
])
def test_fallback_mode_grades_and_enforces_limits(fallback_grader, mbpp_dataset, mbpp_tasks, code, status):
    output = code or mbpp_dataset.problem(TASK)["canonical_solution"]
    result = fallback_grader.grade(mbpp_tasks[TASK], output)
    assert result.exit_status == status and result.passed == (status == "ok"), result
    assert result.trace.startswith("[sandbox rlimits]")


def test_fallback_mode_still_scrubs_the_environment(fallback_grader, mbpp_tasks, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-fallback-secret")
    code = "def square_perimeter(a):\n    import os\n    return os.environ.get('AWS_SECRET_ACCESS_KEY', 'absent')\n"
    result = fallback_grader.grade(mbpp_tasks[TASK], code)
    assert "'absent'" in result.trace and "fake-fallback-secret" not in result.trace
