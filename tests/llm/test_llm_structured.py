"""Structured replies: validation, one repair retry with the error, then a typed error."""

from __future__ import annotations

from typing import Literal

import pytest
from fakes import ScriptedLLM
from pydantic import BaseModel, Field

from ratchet_ray.llm.accounting import llm_call_row
from ratchet_ray.llm.base import LLMError, Message, StructuredOutputError
from ratchet_ray.llm.structured import complete_structured, extract_json


class Verdict(BaseModel):
    outcome: Literal["pass", "fail"]
    confidence: float = Field(ge=0.0, le=1.0)


ASK = [Message("system", "You judge solutions."), Message("user", "Judge this.")]


def scripted(*texts: str) -> ScriptedLLM:
    replies = iter(texts)
    return ScriptedLLM(lambda messages, schema: next(replies))


def test_valid_reply_needs_one_call_and_gets_the_schema():
    llm = scripted('{"outcome": "pass", "confidence": 0.9}')
    result = complete_structured(llm, ASK, Verdict, max_tokens=64)
    assert result.value == Verdict(outcome="pass", confidence=0.9)
    assert len(result.replies) == 1
    assert llm.calls[0][1] == Verdict.model_json_schema()


def test_garbled_reply_is_repaired_once_with_the_validation_error():
    llm = scripted('{"outcome": "maybe", "confidence": 3}', '{"outcome": "fail", "confidence": 0.4}')
    result = complete_structured(llm, ASK, Verdict, max_tokens=64)
    assert result.value.outcome == "fail" and len(result.replies) == 2
    repair_messages = llm.calls[1][0]
    assert repair_messages[:2] == ASK
    assert repair_messages[2] == Message("assistant", '{"outcome": "maybe", "confidence": 3}')
    assert "outcome" in repair_messages[3].content and "confidence" in repair_messages[3].content
    assert repair_messages[3].role == "user"


def test_reply_garbled_twice_raises_typed_error_carrying_both_replies():
    llm = scripted("I think it passes.", "Definitely a pass!!")
    with pytest.raises(StructuredOutputError) as info:
        complete_structured(llm, ASK, Verdict, max_tokens=64)
    err = info.value
    assert isinstance(err, LLMError)
    assert err.raw == "Definitely a pass!!" and len(err.replies) == 2
    rows = [llm_call_row(r, run_id="r", round_=1, role="critic", ok=False, error=str(err)) for r in err.replies]
    assert all(not row["ok"] and "Verdict" in row["error"] for row in rows)


def test_failed_repair_call_keeps_first_reply_for_accounting():
    calls = iter(['{"outcome": 1}', None])

    def responder(messages, schema):
        text = next(calls)
        if text is None:
            raise LLMError("server went away")
        return text

    with pytest.raises(StructuredOutputError, match="repair call failed") as info:
        complete_structured(ScriptedLLM(responder), ASK, Verdict, max_tokens=64)
    assert len(info.value.replies) == 1


@pytest.mark.parametrize("text", [
    '{"a": 1}', 'Sure! ```json\n{"a": 1}\n``` done', 'The answer is {"a": 1}.', '  {"a": 1}\n',
])
def test_extract_json_finds_the_object(text):
    assert extract_json(text).strip() == '{"a": 1}'
