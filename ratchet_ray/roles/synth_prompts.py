"""Skill-authoring prompt and draft model (see ``ratchet_ray.roles.prompts`` for the API)."""

from __future__ import annotations

import json
import re
from typing import Annotated, Sequence

from pydantic import (BaseModel, Field, StringConstraints)

from ratchet_ray.llm.base import Message
from ratchet_ray.types import MetaSkill, Skill
from ratchet_ray.roles.prompt_base import (_STRUCTURED, _clip)

# ----------------------------------------------------------------------------- synthesizer
# Every field is required and bounded so a grammar-constrained base model writes each one and
# cannot ramble inside a single string until the token cap cuts the JSON.
_Item = Annotated[str, StringConstraints(min_length=1, max_length=120)]


class GuidanceDraft(BaseModel):
    model_config = _STRUCTURED
    applies_when: str = Field(min_length=1, max_length=300)
    key_insight: str = Field(min_length=1, max_length=400)
    common_pitfalls: list[_Item] = Field(max_length=5)
    verify_before_returning: str = Field(max_length=300)


class SkillDraft(BaseModel):
    """The part of ``types.Skill`` an author writes; status, author and version are set by us."""

    model_config = _STRUCTURED
    id: str = Field(min_length=1, max_length=60)
    name: str = Field(min_length=1, max_length=80)
    description: str = Field(min_length=1, max_length=200)
    intent: str = Field(min_length=1, max_length=160)
    signals_match: list[_Item] = Field(max_length=6)
    tags: list[_Item] = Field(max_length=4)
    guidance: GuidanceDraft


# Worked skills for made-up failure patterns. A base model copies schema placeholders (measured:
# every Gemma 270M draft repeated them) and a single example verbatim; two different ones, with
# the real pattern last, make it map the pattern to its own skill.
EXAMPLE_SKILLS = {
    "returns none for empty input": {
        "id": "handle_empty_input_first", "name": "handle_empty_input_first",
        "description": "tasks whose input list or string may be empty",
        "intent": "Return the right value for an empty input",
        "signals_match": ["empty", "list", "string"], "tags": ["edge_cases"],
        "guidance": {"applies_when": "the function loops over a list or string argument",
                     "key_insight": "decide the answer for an empty input before the loop and "
                                    "return it explicitly",
                     "common_pitfalls": ["falling off the end and returning None"],
                     "verify_before_returning": "call the function on an empty input in your head"}},
    "off by one in range bounds": {
        "id": "check_range_end_points", "name": "check_range_end_points",
        "description": "tasks that loop over index ranges",
        "intent": "Get the first and last index of a loop right",
        "signals_match": ["range", "index", "loop"], "tags": ["indexing"],
        "guidance": {"applies_when": "the code uses range() or indexes with computed positions",
                     "key_insight": "range(a, b) stops at b - 1; include the end when the task "
                                    "says up to and including",
                     "common_pitfalls": ["skipping the last element", "reading one past the end"],
                     "verify_before_returning": "trace the loop for a two-element input"}},
}
EXAMPLE_SKILL_PATTERN, EXAMPLE_SKILL = next(iter(EXAMPLE_SKILLS.items()))

SKILL_SCHEMA_LOCK = (
    "Skill schema (fixed; fill every field for YOUR pattern, natural language only, never "
    "code). Examples:\n" + "\n".join(f"Pattern: {p}\nSkill: {json.dumps(skill)}"
                                      for p, skill in EXAMPLE_SKILLS.items()))


def _leaf_values(value: object) -> list[str]:
    if isinstance(value, dict):
        return [v for item in value.values() for v in _leaf_values(item)]
    if isinstance(value, list):
        return [v for item in value for v in _leaf_values(item)]
    return [value] if isinstance(value, str) else []


# Values a weak model may copy verbatim instead of writing a skill: the example skill's and the
# placeholders an earlier schema lock showed.
TEMPLATE_VALUES = frozenset({
    "snake_case_id", "one line: when the skill applies",
    "imperative match phrase, e.g. Sum a list of numbers", "the kind of task",
    "the one idea that avoids the failure", "a check to run mentally before answering",
    *(v for skill in EXAMPLE_SKILLS.values()
      for v in _leaf_values({k: v for k, v in skill.items() if k not in ("signals_match", "tags")}))})


def copies_template(draft: "SkillDraft") -> bool:
    """True when the draft repeats the schema lock's example or placeholders instead of real
    guidance for its own pattern."""
    g = draft.guidance
    fields = (draft.id, draft.description, draft.intent, g.applies_when, g.key_insight,
              g.verify_before_returning)
    return sum(f in TEMPLATE_VALUES for f in fields) >= 2


def synth_messages(suite: str, metaskill: MetaSkill | None, pattern: str,
                   examples: Sequence[str], existing: Sequence[Skill],
                   feedback: Sequence[str] = (), *, prefill: bool = False) -> list[Message]:
    """Ask for one skill that addresses a failure cluster. ``metaskill`` None is ablation A3:
    no authoring prior at all (the schema lock stays, it is not part of the meta-skill).
    With ``prefill`` (backends that continue a trailing assistant message) the schema lock and
    the pattern open the answer, so a base model reads them last, after the backend's schema."""
    parts = [f"# Skill authoring ({suite})",
             "Write ONE reusable skill: natural-language guidance (never code) that would help "
             "a solver avoid the recurring failure below on future, different tasks."]
    if metaskill is not None:
        parts.append("Authoring guide:\n" + _clip(metaskill.body, 3000))
    parts.append(f"Recurring failure pattern ({len(examples)} examples shown): {pattern}")
    if examples:
        parts.append("Examples:\n" + "\n---\n".join(examples))
    if existing:
        parts.append("Existing skills (do not repeat them):\n"
                     + "\n".join(f"- {s.id}: {s.intent}" for s in existing[:30]))
    if feedback:
        parts.append("Feedback on your previous draft:\n" + "\n".join(f"- {f}" for f in feedback))
    closing = SKILL_SCHEMA_LOCK + f"\nPattern: {_bare(pattern)}\nSkill: "
    if prefill:
        return [Message("user", "\n\n".join(parts)), Message("assistant", closing)]
    parts.append(closing + "Answer with the JSON object of the new skill.")
    return [Message("user", "\n\n".join(parts))]


def _bare(pattern: str) -> str:
    """The pattern without the cluster size suffix the Synthesizer adds (' (x3)')."""
    return re.sub(r" \(x\d+\)$", "", pattern)
