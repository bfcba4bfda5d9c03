"""MBPP+ grading through the real sandbox and real evalplus: right, wrong and broken solutions."""

from __future__ import annotations

import pytest

from mbpp_cases import GRADED_TASKS


def fenced(code: str) -> str:
    return f"Sure! Here is the solution:\n```python\n{code}\n```\nIt runs in linear time."


@pytest.mark.parametrize("task_id", GRADED_TASKS)
def test_canonical_solution_passes_base_and_plus(mbpp_grader, mbpp_dataset, mbpp_tasks, task_id):
    problem = mbpp_dataset.problem(task_id)
    result = mbpp_grader.grade(mbpp_tasks[task_id], fenced(problem["canonical_solution"]))
    assert result.passed, result.trace
    assert result.exit_status == "ok" and not result.infra_failure
    assert "base: pass" in result.trace and "plus: pass" in result.trace


def test_wrong_answer_fails_with_input_got_and_expected(mbpp_grader, mbpp_tasks):
    result = mbpp_grader.grade(mbpp_tasks["Mbpp/17"], fenced("def square_perimeter(a):\n    return 3 * a"))
    assert not result.passed and result.exit_status == "failed_tests"
    assert "square_perimeter(10) returned 30, expected 40" in result.trace


def test_passing_base_but_failing_plus_is_a_failure(mbpp_grader, mbpp_tasks, groundtruth_store, mbpp_dataset):
    base = mbpp_dataset.problem("Mbpp/3")["base_input"]
    expected = groundtruth_store.load("Mbpp/3")["base"]
    composite = {args[0] for args, out in zip(base, expected) if out}
    result = mbpp_grader.grade(mbpp_tasks["Mbpp/3"], fenced(f"def is_not_prime(n):\n    return n in {composite!r}"))
    assert not result.passed and result.exit_status == "failed_tests"
    assert "base: pass" in result.trace and "plus: fail" in result.trace


def test_exception_is_named(mbpp_grader, mbpp_tasks):
    result = mbpp_grader.grade(mbpp_tasks["Mbpp/17"], fenced("def square_perimeter(a):\n    raise ValueError('boom')"))
    assert not result.passed and result.exit_status == "ValueError"
    assert "raised ValueError: boom" in result.trace


def test_error_at_import_time_is_named(mbpp_grader, mbpp_tasks):
    code = "import not_a_real_module_xyz\ndef square_perimeter(a):\n    return 4 * a"
    result = mbpp_grader.grade(mbpp_tasks["Mbpp/17"], fenced(code))
    assert result.exit_status == "ModuleNotFoundError" and "defining the module" in result.trace


def test_compile_time_syntax_error(mbpp_grader, mbpp_tasks):
    # parses as an AST but the compiler rejects it
    result = mbpp_grader.grade(mbpp_tasks["Mbpp/17"], "def square_perimeter(a):\n    nonlocal a\n    return 4 * a\n")
    assert not result.passed and result.exit_status == "syntax_error"


@pytest.mark.parametrize("output, status", [
    ("", "no_code"), ("As an AI model I cannot write code.", "no_code"),
    ("\x00\xff garbage ((((", "no_code"), ("def perimeter(a):\n    return 4 * a", "missing_entry_point"),
])
def test_garbage_fails_cleanly_without_running_anything(mbpp_grader, mbpp_tasks, output, status):
    result = mbpp_grader.grade(mbpp_tasks["Mbpp/17"], output)
    assert not result.passed and result.exit_status == status and not result.infra_failure
    assert result.duration_s < 1.0


def test_the_per_test_limit_is_evalplus_min_time_limit_from_the_config(mbpp_dataset,
                                                                       groundtruth_store,
                                                                       mbpp_tasks):
    """A correct answer whose first call takes 1.5 s (as a correct one can on a loaded machine)
    overruns evalplus's default floor of 1 s, and passes with ``mbpp.min_time_limit_s=3``."""
    from ratchet_ray.suites.mbpp.grader import MbppGrader
    from ratchet_ray.suites.mbpp.settings import MbppSettings

    stalls_once = ("import time\n_first = [True]\n\ndef square_perimeter(a):\n"
                   "    if _first[0]:\n        _first[0] = False\n        time.sleep(1.5)\n"
                   "    return 4 * a\n")
    graded = {floor: MbppGrader(mbpp_dataset, mbpp=MbppSettings(min_time_limit_s=floor),
                                groundtruth=groundtruth_store).grade(mbpp_tasks["Mbpp/17"],
                                                                     fenced(stalls_once))
              for floor in (1.0, 3.0)}
    assert (graded[1.0].passed, graded[1.0].exit_status) == (False, "timeout"), graded[1.0].trace
    assert "base: fail at test 1/" in graded[1.0].trace
    assert (graded[3.0].passed, graded[3.0].exit_status) == (True, "ok"), graded[3.0].trace
    # The config's defaults are evalplus's (the schema does not import evalplus).
    from evalplus.config import DEFAULT_GT_TIME_LIMIT_FACTOR, DEFAULT_MIN_TIME_LIMIT

    defaults = MbppGrader(mbpp_dataset, groundtruth=groundtruth_store).sandbox.limits
    assert (MbppSettings().min_time_limit_s, MbppSettings().gt_time_limit_factor) == (
        defaults.min_time_limit_s, defaults.gt_time_limit_factor) == (
        DEFAULT_MIN_TIME_LIMIT, DEFAULT_GT_TIME_LIMIT_FACTOR)


def test_plain_loop_hits_the_per_test_time_limit(strict_grader, mbpp_tasks):
    result = strict_grader.grade(mbpp_tasks["Mbpp/17"], "def square_perimeter(a):\n    while True:\n        pass\n")
    assert not result.passed and result.exit_status == "timeout" and not result.infra_failure


def test_unknown_task_is_an_infra_failure_not_an_exception(mbpp_grader):
    from ratchet_ray.types import Task

    result = mbpp_grader.grade(Task(task_id="Mbpp/999999", suite="mbpp", prompt="x"), "def f(): return 1")
    assert not result.passed and result.infra_failure and result.exit_status == "KeyError"


def test_sandbox_runs_in_the_strongest_mode_this_machine_allows(mbpp_grader):
    import os

    from ratchet_ray.suites.mbpp.sandbox import probe_bwrap

    assert probe_bwrap(mbpp_grader.sandbox.limits)[0] or os.environ.get("CI") != "true"
    if probe_bwrap(mbpp_grader.sandbox.limits)[0]:
        assert mbpp_grader.isolation.startswith("bwrap")
    else:
        assert mbpp_grader.sandbox.mode == "refused"
