"""The patch agent driven by the real local Gemma 3 270M model, in a real container, then graded.

The model is weak: the test asserts the plumbing (schema-constrained actions run as commands,
bounded steps, a graded capsule without an infrastructure failure), not that it solves the bug.
"""

from __future__ import annotations

import pytest

from ratchet_ray.settings.schema import LLMSettings
from ratchet_ray.suites.swebench.agent.solver import run_agent
from ratchet_ray.suites.swebench.grader import SwebenchGrader

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.model]


def test_local_gemma_drives_the_agent_and_the_attempt_is_graded(docker_client, tasks, local_settings,
                                                                 limits, tmp_path):
    pytest.importorskip("llama_cpp")
    from ratchet_ray.llm.registry import make_llm

    local_settings.agent.max_steps = 3
    llm = make_llm(LLMSettings(backend="local"))
    run = run_agent(llm, tasks["ratchet__calc-1"], None, local_settings, client=docker_client,
                    log_dir=tmp_path / "agent")
    assert run.exit_status in {"submitted", "step_limit", "format_errors"}
    assert 1 <= len(run.replies) <= 3 and all(r.output_tokens > 0 for r in run.replies)
    assert run.steps and (tmp_path / "agent" / "trajectory.json").exists()
    grade = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client).grade(
        tasks["ratchet__calc-1"], run.patch)
    assert not grade.infra_failure, grade.trace
    assert grade.exit_status in {"ok", "unresolved", "empty_patch", "patch_apply_failed",
                                 "tests_errored"}
