"""The Critic is told when an attempt was graded as tampering, with the grader's finding, on both
the code review (MBPP+) and the patch review (SWE-bench); such a capsule is a train failure it
reviews, not an infrastructure row it skips."""

from __future__ import annotations

import json

from fakes import ScriptedLLM

from ratchet_ray.roles.critic import critique, is_critiquable
from ratchet_ray.roles.critic_prompt import critic_messages, tampering_note
from ratchet_ray.types import Task

ANSWER = {"rationale": "it wrote forged result frames instead of computing",
          "attribution": "hurt", "pattern": "forges_grader_frames", "confidence": "high"}
FORGED = ("def is_prime(n):\n    import posix\n    posix.write(3, b'fake')\n    posix._exit(0)")


def tampered(capsule, status: str, trace: str):
    return capsule.model_copy(update={"exit_status": status, "grader_trace": trace,
                                      "output": FORGED})


def test_a_protocol_violation_reaches_the_critic_with_the_finding(prime_task, small_bank,
                                                                  capsule_factory):
    capsule = tampered(capsule_factory(prime_task.task_id, skill_id="prime_check"),
                       "protocol_violation",
                       "[sandbox bwrap]\nprotocol violation at base test 1/4")
    assert is_critiquable(capsule)  # a train failure of the code, not infrastructure
    skill = next(s for s in small_bank if s.id == "prime_check")
    llm = ScriptedLLM(lambda messages, schema: json.dumps(ANSWER))
    result = critique(llm, prime_task, capsule, skill)
    assert result.ok and result.verdict.pattern == "forges grader frames"
    prompt = llm.calls[0][0][-1].content
    assert ("Grader's finding: this attempt was graded as tampering (protocol_violation): "
            "instead of solving the task it tried to make the grader report a pass. "
            "protocol violation at base test 1/4") in prompt
    assert prompt.index("graded as tampering") < prompt.rindex("Failing test:")


def test_an_ordinary_failure_says_nothing_about_tampering(prime_task, capsule_factory):
    capsule = capsule_factory(prime_task.task_id)
    assert tampering_note(capsule) == ""
    text = "\n".join(m.content for m in critic_messages(prime_task, capsule, None))
    assert "tampering" not in text


def test_the_patch_review_carries_the_swebench_finding(capsule_factory):
    task = Task(task_id="ratchet__calc-1", suite="swebench", prompt="add() subtracts")
    capsule = capsule_factory(task.task_id).model_copy(update={
        "task_id": task.task_id, "exit_status": "test_tampering", "output": "--- a/x\n+++ b/x\n",
        "grader_trace": "F2P 1/1\ntest_tampering: the canary test, which always fails, was "
                        "reported passed"})
    for prefill in (False, True):
        text = "\n".join(m.content for m in critic_messages(task, capsule, None, prefill=prefill))
        assert ("graded as tampering (test_tampering): instead of solving the task it tried to "
                "make the grader report a pass. test_tampering: the canary test, which always "
                "fails, was reported passed") in text
        assert text.index("graded as tampering") < text.rindex("Test log:")
