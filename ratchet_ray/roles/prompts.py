"""Prompt builders and structured-output models for every LLM role.

All prompts are completion-style documents in ONE user message, so they work on a base model
(the local Gemma 3 270M has no chat template; ``llm.prompting.completion_prompt`` turns the
messages into text sections ending in an open response) and on chat models alike. Structured roles
pass their pydantic model's JSON schema to the backend, which constrains decoding where it can
(llama.cpp grammars) and states the schema in the prompt.

API (other roles code against exactly these):
- ``code_messages(task, skill, *, prefill="") -> list[Message]``; ``code_prefill(task)`` (the
  answer's opening fence + ``def <entry_point>(``, sent as a trailing assistant message to
  backends that declare ``supports_prefill``); ``CODE_STOP`` stop sequences (they never match an
  opening fence, only a closing one or what a base model writes after the function).
- ``guidance_block(skill) -> str``: the 'Guidance' block injected into the Solver prompt.
- ``router_messages(task, candidates) -> list[Message]``;
  ``router_choice_model(candidate_ids) -> type[RouterChoice]`` (``skill_id`` is an enum of the
  candidate ids plus ``"NONE"``).
- ``critic_messages(task, capsule, skill) -> list[Message]``;
  ``verdict_model(skill_used: bool) -> type[VerdictOut]`` (no skill: attribution fixed to
  ``inapplicable``); ``CONFIDENCE`` maps the confidence level to a float.
- ``synth_messages(suite, metaskill, pattern, examples, existing, feedback)``;
  ``SkillDraft`` (the Skill fields an author writes; ``SKILL_SCHEMA_LOCK`` shows them).
- ``metasynth_messages(suite, current, pattern_counts)``; ``MetaSkillDraft``.
"""

from __future__ import annotations

from typing import Annotated, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, create_model

from ratchet_ray.llm.base import Message
from ratchet_ray.types import NONE_SKILL, Attribution, Capsule, MetaSkill, Skill, Task

# Generation caps per structured role (the Solver uses LLMSettings.max_tokens).
ROUTER_MAX_TOKENS = 48
CRITIC_MAX_TOKENS = 320
SYNTH_MAX_TOKENS = 640
META_MAX_TOKENS = 1200
# A base model keeps writing after the function; these end the completion at the usual places.
CODE_STOP = ("\n```\n", "\nassert ", "\nprint(", "\nif __name__", "\n# Test", "\n# Example",
             "\n    \n    \n")
CONFIDENCE = {"low": 0.3, "medium": 0.6, "high": 0.9}


def _drop_description(schema: dict) -> None:
    # The schema is shown to the model; class docstrings there are noise (and tokens).
    schema.pop("description", None)


_STRUCTURED = ConfigDict(extra="forbid", str_strip_whitespace=True,
                         json_schema_extra=_drop_description)


def _clip(text: str, limit: int) -> str:
    """Keep the head of ``text`` and say how much was cut, so the model knows it is partial."""
    text = text.strip()
    return text if len(text) <= limit else f"{text[:limit]}\n...[{len(text) - limit} chars cut]"


def _tail(text: str, limit: int) -> str:
    """Keep the end of ``text`` (tracebacks and test failures put the cause last)."""
    text = text.strip()
    return text if len(text) <= limit else f"[{len(text) - limit} chars cut]...\n{text[-limit:]}"


def _task_text(task: Task, limit: int = 3000) -> str:
    # MBPP+ prompts are wrapped in a docstring; the quotes are noise to the model.
    return _clip(task.prompt.strip().strip('"').strip(), limit)


# ----------------------------------------------------------------------------- solver (code)
def guidance_block(skill: Skill) -> str:
    g = skill.guidance
    lines = [f"Guidance (skill `{skill.id}`):", f"- Applies when: {g.applies_when}",
             f"- Key insight: {g.key_insight}"]
    if g.common_pitfalls:
        lines.append("- Pitfalls: " + "; ".join(g.common_pitfalls))
    if g.verify_before_returning:
        lines.append(f"- Verify before returning: {g.verify_before_returning}")
    return "\n".join(lines)


def code_prefill(task: Task) -> str:
    """The start of the answer (fence + function header) for backends that continue a prefill."""
    entry_point = str(task.payload.get("entry_point") or "").strip()
    return f"```python\ndef {entry_point}(" if entry_point else "```python\n"


def code_messages(task: Task, skill: Skill | None, *, prefill: str = "") -> list[Message]:
    """A Python-function prompt; the answer is expected in one ```python block. A non-empty
    ``prefill`` becomes a trailing assistant message the model continues (base models write far
    better code when the function header is already written)."""
    parts = ["# Python programming task",
             "Write one correct, self-contained Python function that solves the task. "
             "Use only the standard library. Answer with only the code in one ```python block."]
    if skill is not None:
        parts.append(guidance_block(skill))
    parts.append("Task:\n" + _task_text(task))
    entry_point = str(task.payload.get("entry_point") or "").strip()
    if entry_point:
        parts.append(f"The function must be named `{entry_point}`.")
    messages = [Message("user", "\n\n".join(parts))]
    return [*messages, Message("assistant", prefill)] if prefill else messages


# ----------------------------------------------------------------------------- router
class RouterChoice(BaseModel):
    """The Router's answer: one candidate skill id, or NONE."""

    model_config = _STRUCTURED
    skill_id: str


def router_choice_model(candidate_ids: Sequence[str]) -> type[RouterChoice]:
    """A RouterChoice whose ``skill_id`` is constrained to the candidates plus NONE."""
    allowed = tuple(dict.fromkeys([*candidate_ids, NONE_SKILL]))
    return create_model("RouterChoice", __base__=RouterChoice,
                        skill_id=(Literal[allowed], ...))  # type: ignore[valid-type]


def _skill_card(skill: Skill) -> str:
    return (f"- {skill.id}: {skill.intent}. Use when: {skill.guidance.applies_when}"
            + (f" ({skill.description})" if skill.description != skill.intent else ""))


def router_messages(task: Task, candidates: Sequence[Skill]) -> list[Message]:
    cards = "\n".join(_skill_card(s) for s in candidates)
    text = ("# Skill routing\n"
            "Pick the ONE skill whose guidance would most help solve the task, or NONE when no "
            "skill clearly applies. A wrong skill hurts more than no skill.\n\n"
            f"Task:\n{_task_text(task, 2000)}\n\n"
            f"Skills:\n{cards}\n- {NONE_SKILL}: no skill applies\n\n"
            'Answer with JSON: {"skill_id": "<one id from the list, or NONE>"}')
    return [Message("user", text)]


# ----------------------------------------------------------------------------- critic
class VerdictOut(BaseModel):
    """The Critic's structured answer for one failed attempt (rationale first: think, then label)."""

    model_config = _STRUCTURED
    rationale: str = Field(min_length=1, max_length=400)
    attribution: Attribution
    pattern: str = Field(min_length=3, max_length=120)
    confidence: Literal["low", "medium", "high"]


def verdict_model(skill_used: bool) -> type[VerdictOut]:
    """With no skill injected the only honest attribution is ``inapplicable``: fix it in the grammar."""
    if skill_used:
        return VerdictOut
    return create_model("VerdictOut", __base__=VerdictOut,
                        attribution=(Literal["inapplicable"], ...))


def critic_messages(task: Task, capsule: Capsule, skill: Skill | None) -> list[Message]:
    skill_text = (guidance_block(skill) if skill is not None
                  else "No skill was injected (attribution must be inapplicable).")
    text = ("# Failure review\n"
            "A solver attempted the task below and FAILED the hidden tests. Diagnose why.\n"
            "attribution: did the injected skill help, hurt, stay neutral, or not apply "
            "(inapplicable)?\n"
            "pattern: a short, GENERAL failure label of 3-10 words that would fit other tasks "
            "too (e.g. 'off-by-one in range bounds', 'ignores empty input'); no task names.\n\n"
            f"Task:\n{_task_text(task, 1500)}\n\n{skill_text}\n\n"
            f"Solver output:\n{_clip(capsule.output, 1500) or '(empty)'}\n\n"
            f"Grader result ({capsule.exit_status}):\n{_tail(capsule.grader_trace, 1000) or '(none)'}"
            "\n\nAnswer with JSON: {\"rationale\": ..., \"attribution\": ..., \"pattern\": ..., "
            "\"confidence\": \"low|medium|high\"}")
    return [Message("user", text)]


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


SKILL_SCHEMA_LOCK = """\
Skill schema (fixed; fill every field, natural language only, never code):
{"id": "snake_case_id",
 "name": "snake_case_id",
 "description": "one line: when the skill applies",
 "intent": "imperative match phrase, e.g. Sum a list of numbers",
 "signals_match": ["short", "keywords"],
 "tags": ["auto"],
 "guidance": {"applies_when": "the kind of task",
              "key_insight": "the one idea that avoids the failure",
              "common_pitfalls": ["mistake to avoid", "another"],
              "verify_before_returning": "a check to run mentally before answering"}}"""


# Values of the schema lock a weak model may copy verbatim instead of writing a skill.
TEMPLATE_VALUES = frozenset({
    "snake_case_id", "one line: when the skill applies",
    "imperative match phrase, e.g. Sum a list of numbers", "the kind of task",
    "the one idea that avoids the failure", "a check to run mentally before answering"})


def copies_template(draft: "SkillDraft") -> bool:
    """True when the draft repeats the schema lock's placeholders instead of real guidance."""
    g = draft.guidance
    fields = (draft.id, draft.description, draft.intent, g.applies_when, g.key_insight,
              g.verify_before_returning)
    return sum(f in TEMPLATE_VALUES for f in fields) >= 2


def synth_messages(suite: str, metaskill: MetaSkill | None, pattern: str,
                   examples: Sequence[str], existing: Sequence[Skill],
                   feedback: Sequence[str] = ()) -> list[Message]:
    """Ask for one skill that addresses a failure cluster. ``metaskill`` None is ablation A3:
    no authoring prior at all (the schema lock stays, it is not part of the meta-skill)."""
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
    parts.append(SKILL_SCHEMA_LOCK + "\nAnswer with the JSON object of the new skill.")
    return [Message("user", "\n\n".join(parts))]


# ----------------------------------------------------------------------------- meta-synth
class MetaSkillDraft(BaseModel):
    """A revised authoring prior: Markdown with a Do / Don't list."""

    model_config = _STRUCTURED
    body: str = Field(min_length=40, max_length=4000)


def metasynth_messages(suite: str, current: MetaSkill,
                       pattern_counts: Sequence[tuple[str, int]]) -> list[Message]:
    patterns = "\n".join(f"- {p} (x{n})" for p, n in pattern_counts[:40]) or "- (none)"
    text = (f"# Meta-skill revision ({suite})\n"
            "The authoring guide below tells a skill author how to write skills (natural-language "
            "guidance injected into a solver's prompt). Revise it using the failure patterns the "
            "critic reported recently: keep what works, add Do / Don't items that would make new "
            "skills address these failures, remove advice that did not help. Markdown, under "
            "600 words.\n\n"
            f"Current guide:\n{_clip(current.body, 3000)}\n\n"
            f"Recent failure patterns:\n{patterns}\n\n"
            'Answer with JSON: {"body": "<the full revised Markdown guide>"}')
    return [Message("user", text)]
