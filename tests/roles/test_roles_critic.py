"""Critic: verdicts parse and validate; garbage and infrastructure failures are typed errors."""

from __future__ import annotations

import json

from fakes import ScriptedLLM

from ratchet_ray.roles.critic import critique, is_critiquable

ANSWER = {"rationale": "9 is odd but not prime; only parity was checked",
          "attribution": "hurt", "pattern": "  Incomplete primality   check ",
          "confidence": "high"}


def test_verdict_is_parsed_from_the_structured_reply(prime_task, small_bank, capsule_factory):
    capsule = capsule_factory(prime_task.task_id, skill_id="prime_check")
    skill = next(s for s in small_bank if s.id == "prime_check")
    llm = ScriptedLLM(lambda messages, schema: json.dumps(ANSWER))
    result = critique(llm, prime_task, capsule, skill)
    assert result.ok and result.error == ""
    v = result.verdict
    assert (v.capsule_id, v.task_id, v.skill_id, v.round) == (
        capsule.capsule_id, prime_task.task_id, "prime_check", capsule.round)
    assert (v.attribution, v.pattern, v.confidence) == ("hurt", "Incomplete primality check", 0.9)
    prompt = llm.calls[0][0][-1].content
    assert "insight for prime_check" in prompt and "is_prime(9) returned True" in prompt


def test_no_skill_fixes_attribution_to_inapplicable(prime_task, capsule_factory):
    llm = ScriptedLLM(lambda messages, schema: json.dumps({**ANSWER, "attribution": "hurt"}))
    result = critique(llm, prime_task, capsule_factory(prime_task.task_id), None)
    schema = llm.calls[0][1]
    assert schema["properties"]["attribution"].get("const") == "inapplicable" or \
        schema["properties"]["attribution"].get("enum") == ["inapplicable"]
    assert result.verdict is None and result.error.startswith("StructuredOutputError")
    fitting = ScriptedLLM(lambda m, s: json.dumps({**ANSWER, "attribution": "inapplicable"}))
    verdict = critique(fitting, prime_task, capsule_factory(prime_task.task_id), None).verdict
    assert (verdict.attribution, verdict.skill_id) == ("inapplicable", "NONE")


def test_garbage_reply_is_a_typed_error_with_replies_kept(prime_task, capsule_factory):
    llm = ScriptedLLM(lambda messages, schema: "the code is wrong lol {")
    result = critique(llm, prime_task, capsule_factory(prime_task.task_id), None)
    assert result.verdict is None and result.error.startswith("StructuredOutputError:")
    assert len(result.replies) == 2


def test_infra_failures_and_passes_are_refused_without_a_call(prime_task, capsule_factory):
    llm = ScriptedLLM(lambda messages, schema: json.dumps(ANSWER))
    infra = capsule_factory(prime_task.task_id, infra=True)
    passed = capsule_factory(prime_task.task_id, passed=True)
    for capsule, why in ((infra, "infrastructure failure"), (passed, "passed")):
        assert not is_critiquable(capsule)
        result = critique(llm, prime_task, capsule, None)
        assert result.verdict is None and result.error.startswith("NotCritiquable")
        assert why in result.error
    assert llm.calls == []
