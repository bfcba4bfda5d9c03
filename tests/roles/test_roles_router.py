"""Router: the A1 / small-bank / shortlist / retrieval-only / garbled-reply paths."""

from __future__ import annotations

import json

from fakes import HashEmbedder, ScriptedLLM

from ratchet_ray.settings.schema import RouterSettings
from ratchet_ray.llm.base import LLMError
from ratchet_ray.roles.retrieval import SkillIndex
from ratchet_ray.roles.router import Router


def allowed_ids(schema: dict) -> list[str]:
    return schema["properties"]["skill_id"]["enum"]


def pick(skill_id: str) -> ScriptedLLM:
    return ScriptedLLM(lambda messages, schema: json.dumps({"skill_id": skill_id}))


def test_injection_disabled_routes_none_without_llm_call(prime_task, small_bank):
    llm = pick("prime_check")
    decision = Router(llm, HashEmbedder(), RouterSettings(inject=False)).route(prime_task,
                                                                               small_bank)
    assert decision.skill_id == "NONE"
    assert llm.calls == [] and decision.replies == []
    assert "A1" in decision.reason


def test_empty_bank_routes_none_without_llm_call(prime_task):
    llm = pick("NONE")
    decision = Router(llm, HashEmbedder(), RouterSettings()).route(prime_task, [])
    assert decision.skill_id == "NONE" and llm.calls == []


def test_small_bank_sends_every_active_skill_to_the_llm(prime_task, small_bank):
    llm = pick("prime_check")
    decision = Router(llm, HashEmbedder(), RouterSettings()).route(prime_task, small_bank)
    assert decision.skill_id == "prime_check" and len(decision.replies) == 1
    (messages, schema), = llm.calls
    prompt = messages[-1].content
    assert all(s.id in prompt for s in small_bank)
    assert sorted(allowed_ids(schema)) == sorted([s.id for s in small_bank] + ["NONE"])
    assert "bank of 5" in decision.reason


def test_deprecated_skills_are_never_candidates(prime_task, small_bank):
    retired = small_bank[1].model_copy(update={"status": "deprecated"})
    bank = [small_bank[0], retired, *small_bank[2:]]
    llm = pick("NONE")
    Router(llm, HashEmbedder(), RouterSettings()).route(prime_task, bank)
    assert retired.id not in allowed_ids(llm.calls[0][1])


def test_large_bank_shortlists_and_keeps_the_relevant_skill(prime_task, large_bank):
    llm = pick("prime_check")
    settings = RouterSettings(full_bank_max=20, shortlist_k=3)
    decision = Router(llm, HashEmbedder(), settings).route(prime_task, large_bank)
    ids = allowed_ids(llm.calls[0][1])
    assert "prime_check" in ids and "NONE" in ids
    assert len(ids) - 1 <= 2 * settings.shortlist_k < len(large_bank)
    assert decision.skill_id == "prime_check" and "shortlist" in decision.reason


def test_prebuilt_index_is_used_for_the_shortlist(prime_task, large_bank):
    embedder = HashEmbedder()
    index = SkillIndex.build(large_bank, embedder)
    llm = pick("NONE")
    Router(llm, None, RouterSettings(shortlist_k=2)).route(prime_task, large_bank, index=index)
    assert "prime_check" in allowed_ids(llm.calls[0][1])


def test_retrieval_only_injects_the_top_retrieved_skill_without_llm(prime_task, large_bank):
    llm = pick("filler_00")
    decision = Router(llm, HashEmbedder(), RouterSettings(mode="retrieval_only")).route(
        prime_task, large_bank)
    assert decision.skill_id == "prime_check" and llm.calls == []
    assert "A2" in decision.reason


def test_garbled_reply_routes_none_and_keeps_both_replies(prime_task, small_bank):
    llm = ScriptedLLM(lambda messages, schema: "I think the best skill is probably")
    decision = Router(llm, HashEmbedder(), RouterSettings()).route(prime_task, small_bank)
    assert decision.skill_id == "NONE"
    assert len(decision.replies) == 2  # the first try and the one repair attempt
    assert "garbled" in decision.reason


def test_reply_naming_an_unknown_skill_routes_none(prime_task, small_bank):
    decision = Router(pick("made_up_skill"), HashEmbedder(), RouterSettings()).route(
        prime_task, small_bank)
    assert decision.skill_id == "NONE" and "garbled" in decision.reason


def test_backend_failure_routes_none_with_the_error(prime_task, small_bank):
    def broken(messages, schema):
        raise LLMError("throttled after retries")

    decision = Router(ScriptedLLM(broken), HashEmbedder(), RouterSettings()).route(
        prime_task, small_bank)
    assert decision.skill_id == "NONE" and "LLMError: throttled" in decision.reason
