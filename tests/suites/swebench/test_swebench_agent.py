"""The patch Solver on real containers: scripted replies run real shell commands, the grader judges."""

from __future__ import annotations

import json

import pytest

from fakes import ScriptedLLM
from ratchet_ray.llm.base import LLMError
from ratchet_ray.suites.swebench.agent.solver import run_agent
from ratchet_ray.suites.swebench.agent.prompts import ACTION_SCHEMA
from ratchet_ray.suites.swebench.grader import SwebenchGrader
from ratchet_ray.types import Guidance, Skill

pytestmark = pytest.mark.docker

SKILL = Skill(id="read_before_edit", name="read_before_edit", description="Any bug fix.",
              intent="Fix a bug in a function", guidance=Guidance(
                  applies_when="a function returns a wrong value",
                  key_insight="read the function before editing it",
                  common_pitfalls=["editing the tests"], verify_before_returning="run it once"))


def _action(command: str = "", done: bool = False, thought: str = "step") -> str:
    return json.dumps({"thought": thought, "command": command, "done": done})


def _script(*replies: str):
    """A responder that plays ``replies`` in order and then keeps saying done."""
    queue = list(replies)
    return lambda messages, schema: queue.pop(0) if queue else _action(done=True)


def test_agent_edits_in_the_container_and_its_diff_resolves(docker_client, tasks, local_settings,
                                                             limits, tmp_path):
    llm = ScriptedLLM(_script(
        _action("grep -n 'def add' -A1 calc/ops.py"),
        "I think the bug is in add.",  # garbled: a failed step, not a crash
        _action("sed -i 's/return a - b/return a + b/' calc/ops.py"),
        _action("python3 -c 'from calc.ops import add; print(add(2, 3))'"),
        _action(done=True, thought="fixed")))
    run = run_agent(llm, tasks["ratchet__calc-1"], SKILL, local_settings, client=docker_client,
                    log_dir=tmp_path / "agent")
    assert run.exit_status == "submitted" and len(run.replies) == 5
    assert "+    return a + b" in run.patch and "-    return a - b" in run.patch
    system, user = llm.calls[-1][0]
    assert system.content.startswith("# Project guidance") and "read the function" in system.content
    assert "Rejected: not a valid action" in user.content and "\n5\n" in user.content
    assert all(schema == ACTION_SCHEMA for _, schema in llm.calls)
    saved = json.loads((tmp_path / "agent" / "trajectory.json").read_text())
    assert saved["exit_status"] == "submitted" and len(saved["steps"]) == 4
    grade = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client).grade(
        tasks["ratchet__calc-1"], run.patch)
    assert grade.passed, grade.trace


def test_limits_end_the_attempt_with_the_current_diff(docker_client, tasks, local_settings):
    local_settings.agent.max_steps = 3
    local_settings.agent.command_timeout_s = 2
    llm = ScriptedLLM(_script(_action("sleep 30"), _action("echo '# note' >> README.md"),
                              _action("echo again")))
    run = run_agent(llm, tasks["ratchet__calc-2"], None, local_settings, client=docker_client)
    assert run.exit_status == "step_limit" and len(run.replies) == 3
    assert "killed after 2s time limit" in run.steps[0].observation
    assert "+# note" in run.patch
    assert not llm.calls[0][0][0].content.startswith("# Project guidance"), "no skill, no preamble"

    garbage = ScriptedLLM(lambda messages, schema: "not json at all")
    run = run_agent(garbage, tasks["ratchet__calc-2"], None, local_settings, client=docker_client)
    assert (run.patch, len(run.replies)) == ("", local_settings.agent.max_format_errors)


def test_backend_failure_propagates_with_the_replies_so_far(docker_client, tasks, local_settings):
    answers = iter([_action("ls")])

    def responder(messages, schema):
        try:
            return next(answers)
        except StopIteration:
            raise LLMError("backend down") from None

    with pytest.raises(LLMError, match="backend down") as caught:
        run_agent(ScriptedLLM(responder), tasks["ratchet__calc-1"], None, local_settings,
                  client=docker_client)
    assert len(caught.value.replies) == 1


def test_single_call_mode_applies_a_sloppy_diff_leniently(docker_client, tasks, local_settings,
                                                         limits, tmp_path):
    local_settings.agent.mode = "single_call"
    sloppy = ("diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n"
              "@@ -14,1 +14,1 @@\n def clamp(x, lo, hi):\n-    return max(lo, x)\n"
              "+    return min(hi, max(lo, x))\n```\nThat fixes it.")
    llm = ScriptedLLM(lambda messages, schema: sloppy)
    run = run_agent(llm, tasks["ratchet__calc-2"], SKILL, local_settings, client=docker_client)
    assert run.exit_status == "submitted" and len(llm.calls) == 1
    prompt = llm.calls[0][0][1].content
    assert "def clamp(x, lo, hi)" in prompt, "the file the issue names is shown"
    assert run.patch.startswith("diff --git a/calc/ops.py") and "@@ -10,4 +10,4 @@" in run.patch
    grade = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client).grade(
        tasks["ratchet__calc-2"], run.patch)
    assert grade.passed, grade.trace


def test_the_solver_role_reaches_the_agent_through_its_patch_contract(docker_client, tasks,
                                                                      local_settings):
    from ratchet_ray.roles.solver import solve
    from ratchet_ray.suites.swebench import SwebenchSuite

    llm = ScriptedLLM(_script(_action("sed -i 's/max(lo, x)/min(hi, max(lo, x))/' calc/ops.py")))
    result = solve(llm, tasks["ratchet__calc-2"], SKILL, output_kind="patch", max_tokens=256,
                   temperature=0.0, agent_settings=local_settings, turn=SwebenchSuite())
    assert result.exit_status == "ok" and "+    return min(hi, max(lo, x))" in result.output
    assert len(result.replies) == 2
