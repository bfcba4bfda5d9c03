"""The one re-prompt loop (``roles.drafts``) that new skills and revisions share: what each bank
refusal does, and that the Synthesizer and the Reviser both go through it (so a revision's second
leakage refusal is recorded like a new skill's)."""

from __future__ import annotations

import json

from fakes import HashEmbedder, ScriptedLLM

from ratchet_ray.bank.skill_events import AddResult
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.roles.drafts import (DraftError, RepromptNotes, draft_to_skill,
                                      reprompt_until_added)
from ratchet_ray.roles.refiner import RefineTarget
from ratchet_ray.roles.synthesizer import SynthOutcome, Synthesizer
from ratchet_ray.bank.skill_contract import SkillDraft
from ratchet_ray.types import Verdict

NOTES = RepromptNotes(template="no placeholders",
                      duplicate=lambda skill, dup: f"{skill.id} duplicates {dup}",
                      too_long=lambda skill, reason: f"{skill.id} too long: {reason}")


def draft_of(skill_json: str) -> SkillDraft:
    return SkillDraft.model_validate_json(skill_json)


def run_loop(skill_reply, answers: list[AddResult], *, max_reprompts: int = 2,
             taken: set[str] | None = None):
    """The loop over a scripted bank (``answers`` in order); the feedback each draft saw."""
    seen: list[list[str]] = []
    outcome, taken = SynthOutcome(), taken if taken is not None else set()

    def draft(attempt, feedback):
        assert attempt == len(seen)
        seen.append(list(feedback))
        return draft_of(skill_reply("edge_numbers"))

    skill = reprompt_until_added("pattern", outcome, max_reprompts, draft,
                                 lambda d: draft_to_skill(d, taken, "mbpp"),
                                 lambda s: answers.pop(0), NOTES, taken)
    return skill, outcome, seen


def test_an_added_skill_is_recorded_with_the_banks_evictions(skill_reply):
    skill, outcome, seen = run_loop(skill_reply, [AddResult("added", "edge_numbers",
                                                            evicted=["old"])])
    assert skill.id == "edge_numbers" and outcome.created == ["edge_numbers"]
    assert outcome.evicted == ["old"] and outcome.failed == [] and seen == [[]]


def test_duplicate_and_too_long_reprompt_with_their_notes_until_added(skill_reply):
    taken: set[str] = set()
    answers = [AddResult("duplicate", "edge_numbers", duplicate_of="edge_numbers"),
               AddResult("too_long", "edge_numbers_2", reason="2100 > 2000"),
               AddResult("added", "edge_numbers_2")]
    skill, outcome, seen = run_loop(skill_reply, answers, taken=taken)
    # The id clash marked the id taken, so the next draft got a fresh one.
    assert "edge_numbers" in taken and skill.id == "edge_numbers_2"
    duplicate = "edge_numbers duplicates edge_numbers"
    too_long = "edge_numbers_2 too long: 2100 > 2000"
    assert seen == [[], [duplicate], [duplicate, too_long]]
    assert outcome.duplicates == ["edge_numbers"] and outcome.created == ["edge_numbers_2"]


def test_out_of_reprompts_names_the_last_note(skill_reply):
    answers = [AddResult("too_long", "edge_numbers", reason=f"try {n}") for n in range(3)]
    skill, outcome, seen = run_loop(skill_reply, answers, max_reprompts=2)
    assert skill is None and len(seen) == 3
    assert outcome.failed == ["pattern: still rejected after 2 re-prompts "
                              "(edge_numbers too long: try 2)"]


def test_a_leak_is_reprompted_once_and_every_refusal_recorded(skill_reply):
    answers = [AddResult("leakage", "edge_numbers", reason="quotes 'assert f(3)'")] * 2
    skill, outcome, seen = run_loop(skill_reply, list(answers), max_reprompts=5)
    assert skill is None and seen == [[], ["quotes 'assert f(3)'"]]
    assert outcome.leaked == ["edge_numbers: quotes 'assert f(3)'"] * 2
    assert outcome.failed == ["pattern: still quotes task content after one leakage re-prompt"]


def test_a_draft_error_or_an_unknown_refusal_ends_the_loop(skill_reply):
    outcome = SynthOutcome()

    def failing(attempt, feedback):
        raise DraftError("no JSON in reply", ["reply"])

    assert reprompt_until_added("p", outcome, 3, failing, None, None, NOTES, set()) is None
    assert outcome.failed == ["p: no JSON in reply"] and outcome.replies == ["reply"]
    skill, outcome, _ = run_loop(skill_reply, [AddResult("cap_full", "x", reason="100 active")])
    assert skill is None and outcome.failed == ["pattern: cap_full: 100 active"]


def test_a_template_copy_is_reprompted_without_reaching_the_bank(skill_reply):
    template = json.loads(skill_reply("edge_numbers"))
    template["guidance"]["key_insight"] = "the one idea that avoids the failure"
    template["guidance"]["verify_before_returning"] = "a check to run mentally before answering"
    drafts = [SkillDraft.model_validate(template), draft_of(skill_reply("edge_numbers"))]
    outcome, submitted, seen = SynthOutcome(), [], []

    def draft(attempt, feedback):
        seen.append(list(feedback))
        return drafts[attempt]

    skill = reprompt_until_added(
        "p", outcome, 2, draft, lambda d: draft_to_skill(d, set(), "mbpp"),
        lambda s: submitted.append(s) or AddResult("added", s.id), NOTES, set())
    assert seen == [[], ["no placeholders"]]
    assert skill is not None and len(submitted) == 1 and outcome.created == ["edge_numbers"]


def test_the_reviser_goes_through_the_shared_loop(skill_reply, make_skill):
    """A revision refused twice for leakage: both refusals recorded, one re-prompt (the loop a
    new skill goes through), the parent untouched."""
    config = LoopConfig()
    parent = make_skill("window", "Sum every fixed-length window of a list")
    verdicts = tuple(Verdict(capsule_id=f"c{i}", run_id="run1", round=1, task_id=f"Mbpp/{i}",
                             skill_id="window", attribution="hurt", pattern="p",
                             confidence=0.9, rationale="r") for i in range(2))
    llm = ScriptedLLM(lambda messages, schema: skill_reply("whatever"))
    outcome, refused = SynthOutcome(), []

    def refine_skill(skill, parent_id):
        refused.append((skill.id, parent_id))
        return AddResult("leakage", skill.id, reason="quotes 'assert f(3)'")

    synth = Synthesizer(llm, HashEmbedder(), config.synth, "mbpp")
    revision = synth._revise(RefineTarget(parent, verdicts), None, refine_skill, {"window"},
                             outcome, 1, {})
    assert revision is None and refused == [("window_v2", "window")] * 2
    assert outcome.leaked == ["window_v2: quotes 'assert f(3)'"] * 2
    assert outcome.failed == ["revision of window: still quotes task content after one "
                              "leakage re-prompt"]
    assert outcome.refined == [] and len(llm.calls) == 2
