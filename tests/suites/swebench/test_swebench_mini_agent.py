"""mini-swe-agent as the patch Solver (``swebench.solver=mini-swe-agent``) on real containers:
its own loop and prompts, scripted replies in its backtick action format, run as real shell
commands in the locked-down instance container; the real grader judges what it submitted."""

from __future__ import annotations

import json

import pytest

from fakes import ScriptedLLM
from ratchet_ray.suites.swebench.agent.solver import run_agent
from ratchet_ray.suites.swebench.grader import SwebenchGrader
from test_swebench_agent import SKILL  # the same skill as the in-house agent's tests

pytestmark = pytest.mark.docker

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"


def _action(command: str) -> str:
    return f"THOUGHT: next step.\n\n```mswea_bash_command\n{command}\n```\n"


def _script(*replies: str):
    """A responder that plays ``replies`` in order, then keeps listing files."""
    queue = list(replies)
    return lambda messages, schema: queue.pop(0) if queue else _action("ls")


def test_mini_swe_agent_submits_a_patch_that_grades(docker_client, tasks, local_settings, limits,
                                                    tmp_path):
    local_settings.solver = "mini-swe-agent"
    llm = ScriptedLLM(_script(
        _action("grep -n 'def add' -A1 calc/ops.py"),
        "I think the bug is in add.",  # no action block: mini-swe-agent's format error
        _action("sed -i 's/return a - b/return a + b/' calc/ops.py"),
        _action("git diff -- calc/ops.py > patch.txt"),
        _action(SUBMIT)))
    run = run_agent(llm, tasks["ratchet__calc-1"], SKILL, local_settings, client=docker_client,
                    log_dir=tmp_path / "agent")

    assert (run.solver, run.exit_status, len(run.replies)) == ("mini-swe-agent", "Submitted", 5)
    assert "+    return a + b" in run.patch and "patch.txt" not in run.patch
    system, task, *rest = llm.calls[-1][0]
    assert system.content.startswith("# Project guidance") and "read the function" in system.content
    assert "mswea_bash_command" in system.content and "<pr_description>" in task.content
    assert "add subtracts" in task.content.lower()
    assert any("Expected exactly 1 action, found 0" in m.content for m in rest)
    assert any("<returncode>0</returncode>" in m.content and "def add" in m.content for m in rest)
    assert [s.command for s in run.steps][-1] == SUBMIT and run.steps[1].thought == "(invalid reply)"
    saved = json.loads((tmp_path / "agent" / "trajectory.json").read_text())
    assert saved["solver"] == "mini-swe-agent" and saved["exit_status"] == "Submitted"
    assert saved["mini_swe_agent"]["info"]["exit_status"] == "Submitted"
    assert saved["mini_swe_agent"]["info"]["model_stats"]["api_calls"] == 5
    grade = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client).grade(
        tasks["ratchet__calc-1"], run.patch)
    assert grade.passed, grade.trace


def test_mini_swe_agent_at_its_step_limit_submits_nothing(docker_client, tasks, local_settings):
    """Its SWE-bench runner's rule: no submission, no patch, even with edits in the tree."""
    local_settings.solver = "mini-swe-agent"
    local_settings.agent.max_steps = 3
    local_settings.agent.command_timeout_s = 2
    llm = ScriptedLLM(_script(_action("sleep 30"), _action("echo '# note' >> README.md")))
    run = run_agent(llm, tasks["ratchet__calc-2"], None, local_settings, client=docker_client)

    assert (run.exit_status, run.patch, len(run.replies)) == ("LimitsExceeded", "", 3)
    assert run.steps[0].exit_code == -1
    assert "timed out after 2 seconds" in llm.calls[1][0][-1].content
    assert not llm.calls[0][0][0].content.startswith("# Project guidance"), "no skill, no preamble"


def test_the_solver_role_runs_mini_swe_agent_when_the_setting_says_so(docker_client, tasks,
                                                                      local_settings):
    from ratchet_ray.roles.solver import solve
    from ratchet_ray.suites.swebench import SwebenchSuite

    local_settings.solver = "mini-swe-agent"
    llm = ScriptedLLM(_script(
        _action("sed -i 's/max(lo, x)/min(hi, max(lo, x))/' calc/ops.py && git diff > patch.txt"),
        _action(SUBMIT)))
    result = solve(llm, tasks["ratchet__calc-2"], SKILL, output_kind="patch", max_tokens=256,
                   temperature=0.0, agent_settings=local_settings, turn=SwebenchSuite())
    assert result.exit_status == "ok" and "+    return min(hi, max(lo, x))" in result.output
    assert len(result.replies) == 2
