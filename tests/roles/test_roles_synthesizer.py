"""Synthesizer against the real SkillBank: cluster -> skill, dedup re-prompt, cover guard, A3."""

from __future__ import annotations

import json

import pytest
from fakes import HashEmbedder, ScriptedLLM

from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.bank.skill_contract import unique_id
from ratchet_ray.roles.synthesizer import Synthesizer, slugify
from ratchet_ray.roles.synthesizer import SynthesizerWorker
from ratchet_ray.types import MetaSkill

PATTERN = "treats one as a prime number"


@pytest.fixture
def config() -> LoopConfig:
    return LoopConfig()


@pytest.fixture
def bank(tmp_path, config) -> SkillBank:
    return SkillBank(tmp_path / "run", embedder=HashEmbedder(), config=config, run_id="run1")


@pytest.fixture
def cluster(verdict_factory):
    return [verdict_factory(f"Mbpp/{n}", PATTERN) for n in range(3)]


def add_to(bank: SkillBank, round_: int = 1):
    return lambda skill, sources=None: bank.add(skill, round_=round_, sources=sources)


def test_a_cluster_becomes_an_active_synthesized_skill(bank, config, cluster, skill_reply,
                                                       prime_task, capsule_factory, tmp_path):
    llm = ScriptedLLM(lambda messages, schema: skill_reply("Edge Numbers!"))
    capsule = capsule_factory("Mbpp/0")
    synth = Synthesizer(llm, HashEmbedder(), config.synth, "mbpp",
                        tasks={"Mbpp/0": prime_task.model_copy(update={"task_id": "Mbpp/0"})})
    outcome = synth.run(cluster, bank.active(), None, add_to(bank), 1,
                        capsules={capsule.capsule_id: capsule})
    assert outcome.created == ["edge_numbers"] and outcome.failed == []
    skill = bank.get("edge_numbers")
    assert skill.is_active and skill.author == "synthesized" and "auto" in skill.tags
    prompt = llm.calls[0][0][-1].content
    assert PATTERN in prompt and "(x3)" in prompt
    assert "is_prime(9) returned True" in prompt  # the capsule snippet
    assert "whether a number is prime" in prompt  # the task text
    assert '"verify_before_returning"' in prompt  # the schema lock
    # The bank records the cluster it came from (the run's closing lines tell it).
    from ratchet_ray.report.learned import learned_skills
    assert [(s.skill_id, s.round, s.sources) for s in learned_skills(tmp_path / "run")] == [
        ("edge_numbers", 1, 3)]


def test_dedup_hit_reprompts_with_the_duplicates_id(bank, config, cluster, skill_reply):
    assert bank.add(json.loads(skill_reply("existing_edges")) | {"status": "active"},
                    round_=0).status == "added"
    different = json.dumps({
        "id": "string_bounds", "name": "string_bounds", "description": "slicing text safely",
        "intent": "Strip and bound-check string slices", "signals_match": ["slice"],
        "tags": ["auto"], "guidance": {"applies_when": "indexes into strings by position",
                                       "key_insight": "clamp indices to len(s) before slicing",
                                       "common_pitfalls": [], "verify_before_returning": ""}})
    replies = iter([skill_reply("edge_again"), different])  # the first is a near-copy
    llm = ScriptedLLM(lambda messages, schema: next(replies))
    outcome = Synthesizer(llm, HashEmbedder(), config.synth, "mbpp").run(
        cluster, bank.active(), None, add_to(bank), 1)
    assert outcome.duplicates == ["existing_edges"]
    assert outcome.created == ["string_bounds"]
    first, second = (call[0][-1].content for call in llm.calls)
    assert "existing_edges" in second and "duplicates the existing skill" in second
    assert "duplicates the existing skill" not in first


def test_a_copied_schema_template_is_reprompted(bank, config, cluster, skill_reply):
    from ratchet_ray.bank.skill_contract import GuidanceDraft, SkillDraft

    def desc(model, name):
        return model.model_fields[name].description

    lock_copy = json.dumps({
        "id": "copied_lock", "name": "copied_lock",
        "description": desc(SkillDraft, "description"), "intent": desc(SkillDraft, "intent"),
        "signals_match": [], "tags": [], "guidance": {
            "applies_when": desc(GuidanceDraft, "applies_when"),
            "key_insight": desc(GuidanceDraft, "key_insight"),
            "common_pitfalls": [], "verify_before_returning": ""}})
    old_placeholders = json.dumps({
        "id": "snake_case_id", "name": "snake_case_id",
        "description": "one line: when the skill applies", "intent": "x",
        "signals_match": [], "tags": [], "guidance": {
            "applies_when": "the kind of task", "key_insight": "the one idea that avoids the failure",
            "common_pitfalls": [], "verify_before_returning": ""}})
    replies = iter([lock_copy, old_placeholders, skill_reply("edge_numbers")])
    llm = ScriptedLLM(lambda messages, schema: next(replies))
    outcome = Synthesizer(llm, HashEmbedder(), config.synth, "mbpp").run(
        cluster, [], None, add_to(bank), 1)
    assert outcome.created == ["edge_numbers"] and "snake_case_id" not in bank.active()[0].id
    assert "placeholder" in llm.calls[1][0][-1].content and len(llm.calls) == 3


def test_prefill_backends_get_the_pattern_as_the_draft_opening(bank, config, cluster,
                                                               skill_reply):
    llm = ScriptedLLM(lambda messages, schema: skill_reply("edge_numbers"))
    llm.supports_prefill = True
    whole = config.synth.model_copy(update={"draft_mode": "whole"})
    outcome = Synthesizer(llm, HashEmbedder(), whole, "mbpp").run(
        cluster, [], None, add_to(bank), 1)
    assert outcome.created == ["edge_numbers"]
    messages = llm.calls[0][0]
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[-1].content.endswith(f"Pattern: {PATTERN}\nSkill: ")


def test_gives_up_after_max_reprompts(bank, config, cluster, skill_reply):
    bank.add(json.loads(skill_reply("existing_edges")), round_=0)
    llm = ScriptedLLM(lambda messages, schema: skill_reply("edge_again"))
    outcome = Synthesizer(llm, HashEmbedder(), config.synth, "mbpp").run(
        cluster, bank.active(), None, add_to(bank), 1)
    assert outcome.created == [] and len(llm.calls) == 1 + config.synth.max_reprompts
    assert outcome.failed and "re-prompts" in outcome.failed[0]


def test_cover_guard_skips_a_covered_cluster(bank, config, cluster, make_skill, skill_reply):
    covering = make_skill("prime_one", PATTERN).model_copy(
        update={"description": PATTERN, "name": "treats_one_as_a_prime_number"})
    covering = covering.model_copy(update={"guidance": covering.guidance.model_copy(
        update={"applies_when": PATTERN})})
    llm = ScriptedLLM(lambda messages, schema: skill_reply("edge_numbers"))
    synth = Synthesizer(llm, HashEmbedder(), config.synth, "mbpp")
    outcome = synth.run(cluster, [covering], None, add_to(bank), 1)
    assert outcome.skipped_clusters == [PATTERN] and outcome.created == [] and llm.calls == []
    # A6: the guard off synthesises the same cluster.
    no_guard = Synthesizer(llm, HashEmbedder(), config.synth.model_copy(
        update={"cover_guard": False}), "mbpp")
    assert no_guard.run(cluster, [covering], None, add_to(bank), 1).created == ["edge_numbers"]


def test_small_clusters_are_not_targets(bank, config, verdict_factory, skill_reply):
    llm = ScriptedLLM(lambda messages, schema: skill_reply("edge_numbers"))
    verdicts = [verdict_factory("Mbpp/1", PATTERN), verdict_factory("Mbpp/2", PATTERN)]
    outcome = Synthesizer(llm, HashEmbedder(), config.synth, "mbpp").run(
        verdicts, [], None, add_to(bank), 1)
    assert outcome.created == [] and llm.calls == []


def test_metaskill_is_the_authoring_prior_and_a3_drops_it(bank, cluster, skill_reply):
    meta = MetaSkill(id="mbpp_meta", suite="mbpp", body="DO: name the failure. DON'T: write code.")
    llm = ScriptedLLM(lambda messages, schema: skill_reply(f"skill_{len(llm.calls)}"))
    with_meta = SynthesizerWorker(LoopConfig(), llm=llm, embedder=HashEmbedder())
    with_meta.run(cluster, [], meta, bank, 1)
    assert "Authoring guide" in llm.calls[-1][0][-1].content
    assert "DON'T: write code." in llm.calls[-1][0][-1].content
    a3 = SynthesizerWorker(LoopConfig(meta={"enabled": False}), llm=llm, embedder=HashEmbedder())
    a3.run(cluster, [], meta, bank, 2)
    prompt = llm.calls[-1][0][-1].content
    assert "Authoring guide" not in prompt and "DON'T: write code." not in prompt
    assert '"key_insight"' in prompt  # the schema lock is not part of the meta-skill


def test_at_most_max_new_per_round_largest_first(bank, config, verdict_factory, skill_reply):
    other = "reverses the output list order"
    verdicts = ([verdict_factory(f"Mbpp/{n}", PATTERN) for n in range(4)]
                + [verdict_factory(f"Mbpp/{n}", other) for n in range(10, 13)])
    llm = ScriptedLLM(lambda messages, schema: skill_reply("edge_numbers"))
    settings = config.synth.model_copy(update={"max_new_per_round": 1})
    outcome = Synthesizer(llm, HashEmbedder(), settings, "mbpp").run(
        verdicts, [], None, add_to(bank), 1)
    assert outcome.created == ["edge_numbers"] and outcome.deferred == [other]
    assert "(x4)" in llm.calls[0][0][-1].content


def test_garbled_drafts_fail_the_cluster_without_raising(bank, config, cluster):
    llm = ScriptedLLM(lambda messages, schema: "Here is a great skill: be careful.")
    outcome = Synthesizer(llm, HashEmbedder(), config.synth, "mbpp").run(
        cluster, [], None, add_to(bank), 1)
    assert outcome.created == [] and len(outcome.replies) == 2
    assert outcome.failed[0].startswith(PATTERN + ": StructuredOutputError")


def test_ids_are_slugified_and_unique():
    assert slugify("Edge Numbers!  (v2)") == "edge_numbers_v2"
    assert slugify("***") == "skill"
    assert unique_id("edge", {"edge", "edge_2"}) == "edge_3"


def test_a_runaway_free_text_field_is_cut_at_a_clause_within_its_bound():
    from ratchet_ray.roles.synthesizer_prompt import fit_field
    from ratchet_ray.bank.skill_contract import DRAFT_LIMITS

    clause = "returns the length of the longest word in a given string"
    runaway = "Write a function that " + ", ".join(f"{n}) {clause}" for n in range(1, 6))
    cut = fit_field("intent", runaway)
    assert len(runaway) > DRAFT_LIMITS["intent"] >= len(cut)
    assert cut == f"Write a function that 1) {clause}, 2) {clause}"  # whole clauses only
    assert fit_field("intent", "Sum a list of numbers") == "Sum a list of numbers"
