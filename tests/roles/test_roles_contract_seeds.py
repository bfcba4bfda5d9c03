"""One skill contract (meta-skill lock = structured-output schema), A3's bare schema, fieldwise
drafting for base models, the SWE-bench critic prompt, per-role limits and what seeds drive."""

from __future__ import annotations

import json
import re

import pytest
from fakes import HashEmbedder, ScriptedLLM

from ratchet_ray.bank.metaskills import default_metaskill
from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.settings.schema import LoopConfig, RoleLimits, SynthSettings
from ratchet_ray.llm.structured import complete_structured
from ratchet_ray.roles.critic import critique
from ratchet_ray.roles.critic_prompt import critic_messages
from ratchet_ray.roles.synthesizer_prompt import FIELD_ORDER, field_opening, synth_messages
from ratchet_ray.roles.router import Router
from ratchet_ray.roles.synthesizer import Synthesizer
from ratchet_ray.roles.synthesizer import bank_adder
from ratchet_ray.seeding import derive_seed, sampling_kwargs, seeded_order
from ratchet_ray.bank.skill_contract import (GuidanceDraft, SkillDraft, bare_schema, placeholder_texts,
                                        schema_lock)
from ratchet_ray.synthesis.preprocess import cluster_verdicts
from ratchet_ray.types import AUTHORED_FIELDS, SYSTEM_FIELDS, Skill, SkillStatus, Task

PATTERN = "treats one as a prime number"


class Recorder(ScriptedLLM):
    """A ScriptedLLM that also records the sampling parameters of every call."""

    supports_seed = True

    def __init__(self, responder):
        super().__init__(responder)
        self.params: list[dict] = []

    def complete(self, messages, *, max_tokens=512, temperature=0.0, stop=None,
                 json_schema=None, seed=None):
        self.params.append({"max_tokens": max_tokens, "temperature": temperature, "seed": seed})
        return super().complete(messages, max_tokens=max_tokens, temperature=temperature,
                                stop=stop, json_schema=json_schema)


# ---- the skill contract ------------------------------------------------------------------------
def _lock_keys(text: str) -> list[str]:
    block = text.split("```\n", 1)[1].split("```", 1)[0]
    return [m.group(1) for m in re.finditer(r"^\s*([a-z_]+):", block, re.M)]


@pytest.mark.parametrize("suite", ["mbpp", "swebench"])
def test_the_metaskill_lock_and_the_structured_schema_are_one_definition(suite):
    body = default_metaskill(suite).body
    assert schema_lock() in body and "{{SKILL_SCHEMA_LOCK}}" not in body
    keys = _lock_keys(schema_lock())
    schema = SkillDraft.model_json_schema()
    guidance = GuidanceDraft.model_json_schema()["properties"]
    assert keys == [*schema["properties"], *guidance]
    assert list(SkillDraft.model_fields) == list(AUTHORED_FIELDS)
    for system_key in SYSTEM_FIELDS:  # the loop sets them; the lock names them only as such
        assert system_key not in keys and system_key not in schema["properties"]
    assert "emit exactly this yaml" not in body.lower()


def test_a_skill_written_as_the_lock_says_validates_and_becomes_a_skill():
    answer = {"id": "check_edges", "name": "check_edges", "description": "numeric tasks",
              "intent": "Check the smallest inputs", "signals_match": ["prime"],
              "tags": ["edge"], "preconditions": ["the input is an integer"],
              "guidance": {"applies_when": "the input may be 0 or 1",
                           "key_insight": "handle 0 and 1 before the loop",
                           "common_pitfalls": ["calling 1 prime"],
                           "verify_before_returning": "try 1"}}
    draft = SkillDraft.model_validate_json(json.dumps(answer))
    assert Skill.model_validate({**draft.model_dump(), "status": "active"}).preconditions
    with pytest.raises(ValueError):  # a key the lock does not list is rejected
        SkillDraft.model_validate({**answer, "status": "active"})


def test_a3_shows_only_the_bare_schema_and_no_prompt_shows_a_worked_skill():
    meta = default_metaskill("mbpp")
    with_meta = synth_messages("mbpp", meta, PATTERN, ["Task: x"], [])[-1].content
    a3 = synth_messages("mbpp", None, PATTERN, ["Task: x"], [])[-1].content
    assert "Authoring guide" in with_meta and with_meta.count(schema_lock()) == 1
    assert "Authoring guide" not in a3 and "## Do" not in a3 and schema_lock() not in a3
    assert bare_schema() in a3
    for prompt in (with_meta, a3):
        assert "handle_empty_input_first" not in prompt and "Example skill" not in prompt
    # A meta-skill rewritten without the lock (meta-synth) gets it back.
    rewritten = meta.model_copy(update={"body": "## Do\n- name one mechanism"})
    assert schema_lock() in synth_messages("mbpp", rewritten, PATTERN, [], [])[-1].content


# ---- fieldwise drafting (small base models) ----------------------------------------------------
def _field_answer(messages, schema) -> str:
    if schema is None:  # a base model's field: the continuation of its opening
        if messages[-1].content == field_opening("common_pitfalls", PATTERN):
            return "1) treating 1 as prime; 2) skipping 2"  # one line, numbering stripped
        return "small numbers like 0 and 1 come first"
    (name,) = schema["properties"]
    if name == "id":
        return json.dumps({"id": "guard_small_numbers"})
    if schema["properties"][name].get("type") == "array":
        return json.dumps({name: ["treating 1 as prime"]})
    return json.dumps({name: f"{name.replace('_', ' ')} about small numbers like 0 and 1"})


@pytest.fixture
def bank(tmp_path):
    return SkillBank(tmp_path / "run", embedder=HashEmbedder(), config=LoopConfig(), run_id="r")


def test_base_models_draft_one_field_per_call_with_the_evidence_in_each(bank, verdict_factory):
    llm = ScriptedLLM(_field_answer)
    llm.supports_prefill = True  # a base-model backend: draft_mode auto goes fieldwise
    cluster = [verdict_factory(f"Mbpp/{n}", PATTERN) for n in range(3)]
    outcome = Synthesizer(llm, HashEmbedder(), SynthSettings(), "mbpp").run(
        cluster, [], default_metaskill("mbpp"), bank_adder(bank, 1), 1)
    pattern_id = "_".join(PATTERN.split()[:6])  # the id is the pattern's: no call, no grammar
    assert outcome.created == [pattern_id] and outcome.failed == []
    asked = [list(schema["properties"]) if schema else messages[-1].content
             for messages, schema in llm.calls]
    assert asked == [field_opening(name, PATTERN) for name in FIELD_ORDER if name != "id"]
    assert all(field_opening(name, PATTERN) for name in FIELD_ORDER if name != "id")
    for messages, _schema in llm.calls:
        prompt = messages[0].content
        assert PATTERN in prompt and "failed because of" in prompt  # pattern + examples
        assert schema_lock() not in prompt and "Authoring guide" in prompt
    skill = bank.get(pattern_id)
    assert skill.guidance.common_pitfalls == ["treating 1 as prime", "skipping 2"]
    assert skill.signals_match == ["small numbers like 0", "1 come first"]
    assert skill.guidance.key_insight == f"To avoid {PATTERN}, small numbers like 0 and 1 come first"
    assert skill.name == skill.id and "auto" in skill.tags


def test_an_empty_list_line_of_a_base_model_falls_back_to_the_pattern(bank, verdict_factory):
    def answer(messages, schema):
        if messages[-1].content in (field_opening("common_pitfalls", PATTERN),
                                    field_opening("signals_match", PATTERN)):
            return ""  # the model ended the line at once
        return _field_answer(messages, schema)

    llm = ScriptedLLM(answer)
    llm.supports_prefill = True
    cluster = [verdict_factory(f"Mbpp/{n}", PATTERN) for n in range(3)]
    outcome = Synthesizer(llm, HashEmbedder(), SynthSettings(), "mbpp").run(
        cluster, [], default_metaskill("mbpp"), bank_adder(bank, 1), 1)
    assert outcome.failed == [] and len(outcome.created) == 1
    skill = bank.get(outcome.created[0])
    assert skill.guidance.common_pitfalls == [PATTERN]
    assert skill.signals_match == ["treats", "prime", "number"]


def test_fieldwise_drafts_that_copy_the_lock_are_reprompted(bank, verdict_factory):
    placeholders = sorted(placeholder_texts())
    copies = {"key_insight": GuidanceDraft.model_fields["key_insight"].description,
              "applies_when": GuidanceDraft.model_fields["applies_when"].description}
    assert all(v in placeholders for v in copies.values())
    attempts = {"n": 0}

    def answer(messages, schema):
        (name,) = schema["properties"]
        if name == "key_insight":
            attempts["n"] += 1
        if attempts["n"] == 1 and name in copies:
            return json.dumps({name: copies[name]})
        return _field_answer(messages, schema)

    llm = ScriptedLLM(answer)  # draft_mode fieldwise on a chat backend: a grammar per field
    cluster = [verdict_factory(f"Mbpp/{n}", PATTERN) for n in range(3)]
    outcome = Synthesizer(llm, HashEmbedder(), SynthSettings(draft_mode="fieldwise"), "mbpp").run(
        cluster, [], None, bank_adder(bank, 1), 1)
    assert outcome.created == ["guard_small_numbers"] and attempts["n"] == 2
    assert "placeholder" in llm.calls[len(FIELD_ORDER)][0][-1].content


# ---- seeds -------------------------------------------------------------------------------------
def test_derived_seeds_are_stable_and_orders_ignore_storage_order():
    assert derive_seed(42, 0, "train", "Mbpp/2") == derive_seed(42, 0, "train", "Mbpp/2")
    assert derive_seed(42, 0, "train", "Mbpp/2") != derive_seed(7, 0, "train", "Mbpp/2")
    assert 0 <= derive_seed("x") < 2 ** 31
    items = [f"t{n}" for n in range(20)]
    assert seeded_order(items, str, 42, 1) == seeded_order(items[::-1], str, 42, 1)
    assert seeded_order(items, str, 42, 1) != seeded_order(items, str, 7, 1)
    assert sampling_kwargs(ScriptedLLM(lambda m, s: ""), 5) == {}  # no seed parameter
    assert sampling_kwargs(Recorder(lambda m, s: ""), 5) == {"seed": 5}


def test_structured_calls_pass_the_seed_and_a_derived_one_to_the_repair():
    replies = iter(["not json", json.dumps({"body": "x" * 50})])
    llm = Recorder(lambda m, s: next(replies))
    from ratchet_ray.roles.metasynth_prompt import MetaSkillDraft

    complete_structured(llm, [], MetaSkillDraft, max_tokens=9, temperature=0.4, seed=11)
    assert [p["seed"] for p in llm.params] == [11, derive_seed(11, "repair")]
    assert all(p["temperature"] == 0.4 and p["max_tokens"] == 9 for p in llm.params)


def test_the_seed_decides_the_verdict_order_into_canonicalisation(verdict_factory):
    # Two near-duplicate patterns, two verdicts each: the merged cluster is labelled with the
    # one seen first, so the verdict order (the seed) decides the label.
    verdicts = ([verdict_factory(f"Mbpp/{n}", "off by one in range bounds") for n in range(2)]
                + [verdict_factory(f"Mbpp/{n}", "off by one in the range bounds")
                   for n in range(2, 4)])
    settings = SynthSettings()

    def label(seed: int) -> str:
        ordered = seeded_order(verdicts, lambda v: v.capsule_id, seed, 1, "synth")
        (cluster,) = cluster_verdicts(ordered, HashEmbedder(), settings)
        return cluster.pattern

    labels = {seed: label(seed) for seed in range(12)}
    assert len(set(labels.values())) == 2
    assert all(label(seed) == labels[seed] for seed in labels)


# ---- per-role limits, bootstrap candidates, the SWE-bench critic -------------------------------
def test_router_uses_its_configured_limits_and_may_route_a_candidate(make_skill, prime_task):
    llm = Recorder(lambda m, s: json.dumps({"skill_id": "prime_check"}))
    candidate = make_skill("prime_check", "Decide whether a number is prime").model_copy(
        update={"status": SkillStatus.CANDIDATE})
    deprecated = make_skill("old", "Old").model_copy(update={"status": SkillStatus.DEPRECATED})
    router = Router(llm, HashEmbedder(), LoopConfig().router, RoleLimits(temperature=0.3,
                                                                          max_tokens=17))
    decision = router.route(prime_task, [candidate, deprecated], seed=5)
    assert decision.skill_id == "prime_check"
    assert llm.params == [{"max_tokens": 17, "temperature": 0.3, "seed": 5}]
    assert "old" not in llm.calls[0][0][-1].content


def test_swebench_failures_get_a_patch_and_test_log_review(capsule_factory):
    task = Task(task_id="astropy__astropy-12907", suite="swebench",
                prompt="Separability matrix is wrong for nested CompoundModels", payload={})
    capsule = capsule_factory("astropy__astropy-12907").model_copy(update={
        "output": "--- a/astropy/modeling/separable.py\n+++ b/astropy/modeling/separable.py",
        "grader_trace": "unresolved\nFAILED test_separable.py::test_nested - AssertionError"})
    prompt = "\n".join(m.content for m in critic_messages(task, capsule, None))
    assert "GitHub issue" in prompt and "Patch:" in prompt and "Test log" in prompt
    assert "FAILED test_separable.py::test_nested" in prompt
    assert "Python task" not in prompt and "def last(xs)" not in prompt
    llm = Recorder(lambda m, s: json.dumps({
        "rationale": "the patch misses nested models", "pattern": "misses_nested_case",
        "attribution": "inapplicable", "confidence": "medium"}))
    result = critique(llm, task, capsule, None, limits=RoleLimits(max_tokens=99), seed=3)
    assert result.verdict.pattern == "misses nested case"
    assert llm.params[0] == {"max_tokens": 99, "temperature": 0.0, "seed": 3}


def test_role_limits_live_in_config_with_the_former_caps():
    roles = LoopConfig().llm.roles
    assert (roles.router.max_tokens, roles.critic.max_tokens, roles.synth.max_tokens,
            roles.metasynth.max_tokens) == (48, 320, 640, 1200)


class SeedEcho(ScriptedLLM):
    """Writes the sampling seed it was given into every answer (a sampler at temperature > 0)."""

    supports_seed = True

    def complete(self, messages, *, max_tokens=512, temperature=0.0, stop=None,
                 json_schema=None, seed=None):
        self.responder = lambda m, s: (f"```python\ndef is_prime(n):\n    return {seed} > 0\n```"
                                       if s is None else json.dumps({
                                           "rationale": f"seed {seed} says so",
                                           "pattern": ["off_by_one_in_range", "ignores_empty_input"][
                                               seed % 2],
                                           "attribution": "inapplicable", "confidence": "high"}))
        return super().complete(messages, max_tokens=max_tokens, temperature=temperature,
                                stop=stop, json_schema=json_schema)


def test_workers_sample_with_seeds_of_the_run_seed_round_split_and_task(prime_task,
                                                                        capsule_factory):
    from ratchet_ray.roles.critic import CriticWorker
    from ratchet_ray.roles.solver import SolverWorker

    def evidence(seed: int, round_: int = 0) -> tuple:
        config = LoopConfig(seed=seed)
        solver = SolverWorker(config, llm=SeedEcho(None), output_kind="code")
        solver.set_bank([])
        outputs = [solver.run(prime_task, split, round_).output for split in ("train", "eval")]
        capsule = capsule_factory("Mbpp/3", round_=round_)
        verdict = CriticWorker(config, llm=SeedEcho(None)).critique_batch(
            [(prime_task, capsule, None)])[0].verdict
        return (*outputs, verdict.rationale)

    first = evidence(42)
    assert first == evidence(42)  # one seed: the same draws, also after a restart
    assert first != evidence(7)  # another seed: other draws
    assert first[0] != first[1] and first != evidence(42, round_=1)  # per split and per round


def test_fieldwise_an_id_the_model_cannot_write_comes_from_the_pattern(bank, verdict_factory):
    def answer(messages, schema):
        if schema is not None and list(schema["properties"]) == ["id"]:
            return '{"id": "guard_small_numbers_and_then_some_more'  # ran into its token cap
        return _field_answer(messages, schema)

    llm = ScriptedLLM(answer)  # a chat backend drafting field by field: the id under a grammar
    cluster = [verdict_factory(f"Mbpp/{n}", PATTERN) for n in range(3)]
    outcome = Synthesizer(llm, HashEmbedder(), SynthSettings(draft_mode="fieldwise"), "mbpp").run(
        cluster, [], default_metaskill("mbpp"), bank_adder(bank, 1), 1)
    expected = "_".join(PATTERN.split()[:6])
    assert outcome.created == [expected] and outcome.failed == []
    assert len(outcome.replies) == len(FIELD_ORDER) + 1  # the id's repair attempt is counted
