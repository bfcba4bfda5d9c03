"""Solver: the code prompt carries the skill's Guidance block; failures become exit statuses."""

from __future__ import annotations

import pytest
from fakes import ScriptedLLM

from ratchet_ray.llm.base import LLMError
from ratchet_ray.roles.solver_prompt import CODE_STOP
from ratchet_ray.roles.solver import extract_code, solve

FENCED = "```python\ndef is_prime(n):\n    return n > 1 and all(n % d for d in range(2, n))\n```\n"


def test_code_prompt_injects_the_skill_guidance(prime_task, small_bank):
    skill = next(s for s in small_bank if s.id == "prime_check")
    llm = ScriptedLLM(lambda messages, schema: FENCED)
    result = solve(llm, prime_task, skill, output_kind="code", max_tokens=128, temperature=0.0)
    prompt = llm.calls[0][0][-1].content
    assert "Guidance (skill `prime_check`)" in prompt
    for text in ("the task asks to decide", "insight for prime_check", "pitfall of prime_check",
                 "check prime_check"):
        assert text in prompt
    assert "is_prime" in prompt and "decide whether a number is prime" in prompt
    assert result.exit_status == "ok" and result.output.startswith("def is_prime(n):")
    assert "```" not in result.output and len(result.replies) == 1


def test_no_skill_means_no_guidance_block(prime_task):
    llm = ScriptedLLM(lambda messages, schema: FENCED)
    solve(llm, prime_task, None, output_kind="code", max_tokens=128, temperature=0.0)
    assert "Guidance" not in llm.calls[0][0][-1].content


def test_stop_sequences_never_cut_an_opening_fence():
    assert not any(stop in "```python\ndef f(x):\n" for stop in CODE_STOP)


@pytest.mark.parametrize("reply, expected", [
    ("```python\ndef f(x):\n    return x\n```\nThis works.", "def f(x):\n    return x"),
    ("Here:\n```py\ndef f(x):\n    return x", "def f(x):\n    return x"),  # cut by a stop
    ("def f(x):\n    return x\n", "def f(x):\n    return x"),
])
def test_extract_code(reply, expected):
    assert extract_code(reply) == expected


def test_backend_failure_is_an_exit_status_not_an_exception(prime_task):
    def broken(messages, schema):
        raise LLMError("connection reset")

    result = solve(ScriptedLLM(broken), prime_task, None, output_kind="code", max_tokens=64,
                   temperature=0.0)
    assert (result.output, result.exit_status) == ("", "LLMError")
    assert "connection reset" in result.error


def test_unknown_output_kind_is_a_caller_error(prime_task):
    # Only "code" is built in; any other kind is its suite's turn, which the caller must pass.
    with pytest.raises(ValueError, match=r"output kind 'essay' has no built-in turn .*turn="):
        solve(ScriptedLLM(lambda m, s: ""), prime_task, None, output_kind="essay",
              max_tokens=8, temperature=0.0)


class PrefillLLM(ScriptedLLM):
    """A completion backend that continues a trailing assistant message."""

    supports_prefill = True


def test_prefill_backends_continue_the_function_header(prime_task):
    llm = PrefillLLM(lambda messages, schema: "n):\n    return n > 1\n```")
    result = solve(llm, prime_task, None, output_kind="code", max_tokens=64, temperature=0.0)
    last = llm.calls[0][0][-1]
    assert (last.role, last.content) == ("assistant", "```python\ndef is_prime(")
    assert result.output == "def is_prime(n):\n    return n > 1"


def test_prefill_backend_restating_the_answer_is_kept_whole(prime_task):
    llm = PrefillLLM(lambda messages, schema: FENCED)
    result = solve(llm, prime_task, None, output_kind="code", max_tokens=64, temperature=0.0)
    assert result.output.startswith("def is_prime(n):\n    return n > 1 and all")
