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
    assert (v.attribution, v.pattern, v.confidence) == ("hurt", "incomplete primality check", 0.9)
    prompt = llm.calls[0][0][-1].content
    assert "insight for prime_check" in prompt and "f(9) returned True" in prompt


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


def _reply_sequence(*answers):
    replies = iter(json.dumps({**ANSWER, "attribution": "inapplicable", **a}) for a in answers)
    return ScriptedLLM(lambda messages, schema: next(replies))


def test_an_attribution_word_as_pattern_gets_the_repair_retry(prime_task, capsule_factory):
    llm = _reply_sequence({"pattern": "inapplicable"}, {"pattern": "odd_numbers_assumed_prime"})
    result = critique(llm, prime_task, capsule_factory(prime_task.task_id), None)
    assert result.ok and result.verdict.pattern == "odd numbers assumed prime"
    assert len(result.replies) == 2
    assert "names no concrete mistake" in llm.calls[1][0][-1].content
    schema = llm.calls[0][1]["properties"]["pattern"]
    assert schema["pattern"].startswith("^[a-z]") and list(llm.calls[0][1]["properties"])[0] == \
        "rationale"


def test_useless_patterns_and_rationales_are_rejected(prime_task, capsule_factory):
    from ratchet_ray.roles.critic_prompt import verdict_model

    model = verdict_model(False, entry_point="is_prime")
    base = {"rationale": "9 is odd but not prime", "attribution": "inapplicable",
            "confidence": "low"}
    assert model(**base, pattern="Off-by-one in RANGE").pattern == "off_by_one_in_range"
    for bad in ("inapplicable", "wrong output", "a_b", "is_prime_wrong_for_nine",
                "list_with_list_with_list", "Looks fine!"):
        try:
            model(**base, pattern=bad)
        except ValueError:
            continue
        raise AssertionError(f"pattern {bad!r} was accepted")
    try:
        model(**{**base, "rationale": "Inapplicable."}, pattern="odd_numbers_assumed_prime")
    except ValueError as exc:
        assert "explains nothing" in str(exc)
    else:
        raise AssertionError("a bare attribution word was accepted as a rationale")
    # A pattern that stays useless after the repair retry is a typed error, replies kept.
    llm = _reply_sequence({"pattern": "inapplicable"}, {"pattern": "wrong_output"})
    result = critique(llm, prime_task, capsule_factory(prime_task.task_id), None)
    assert result.verdict is None and result.error.startswith("StructuredOutputError")
    assert len(result.replies) == 2


def test_prompt_shows_the_concrete_failure_and_hides_the_function_name(prime_task,
                                                                       capsule_factory):
    capsule = capsule_factory(prime_task.task_id).model_copy(update={
        "exit_status": "failed_tests",
        "grader_trace": "[sandbox namespaces]\nbase: fail at test 1/3\n"
                        "is_prime(9) returned True, expected False"})
    llm = _reply_sequence({"pattern": "odd_numbers_assumed_prime"})
    critique(llm, prime_task, capsule, None)
    prompt = llm.calls[0][0][-1].content
    assert "Failing test: f(9) returned True, expected False" in prompt
    assert "failed_tests" not in prompt  # a bare status a base model copies as its pattern
    assert "[sandbox namespaces]" not in prompt and "fail at test 1/3" not in prompt
    assert "def f(n):" in prompt and "is_prime" in prompt  # the task text keeps the name


def test_prefill_backends_get_the_review_as_the_answer_opening(prime_task, capsule_factory):
    llm = _reply_sequence({"pattern": "odd_numbers_assumed_prime"})
    llm.supports_prefill = True
    result = critique(llm, prime_task, capsule_factory(prime_task.task_id), None)
    assert result.ok
    messages = llm.calls[0][0]
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[-1].content.endswith("Answer: ") and "Failing test:" in messages[-1].content
