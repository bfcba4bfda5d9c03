"""Prompt builders and structured-output models for every LLM role.

All prompts are completion-style documents in ONE user message, so they work on a base model
(the local Gemma 3 270M has no chat template; ``llm.prompting.completion_prompt`` turns the
messages into text sections ending in an open response) and on chat models alike. Structured roles
pass their pydantic model's JSON schema to the backend, which constrains decoding where it can
(llama.cpp grammars) and states the schema in the prompt.

API (other roles code against exactly these):
- Every builder takes ``templates`` (keyword; the run's ``prompts.texts``): a template named
  in ``ratchet_ray.prompt_templates.TEMPLATES`` replaces the built-in one (``SOLVER_TEMPLATE``,
  ``ROUTER_TEMPLATE``, ``critic_prompts.CRITIC_TEMPLATE`` / ``PATCH_CRITIC_TEMPLATE``,
  ``synth_prompts.SYNTH_TEMPLATE``).
- ``code_messages(task, skill, *, prefill="") -> list[Message]``; ``code_prefill(task)`` (the
  answer's opening fence + ``def <entry_point>(``, sent as a trailing assistant message to
  backends that declare ``supports_prefill``); ``CODE_STOP`` stop sequences (they never match an
  opening fence, only a closing one or what a base model writes after the function).
- ``guidance_block(skill) -> str``: the 'Guidance' block injected into the Solver prompt.
- ``router_messages(task, candidates) -> list[Message]``;
  ``router_choice_model(candidate_ids) -> type[RouterChoice]`` (``skill_id`` is an enum of the
  candidate ids plus ``"NONE"``).
- ``critic_messages(task, capsule, skill, *, prefill=False) -> list[Message]`` (the task, then
  worked examples, the output and the grader's concrete finding, ``failure_summary(capsule)``,
  last; with ``prefill`` the part from the examples on is a trailing assistant message);
  ``verdict_model(skill_used: bool, *, entry_point="") -> type[VerdictOut]`` (no skill:
  attribution fixed to ``inapplicable``; ``pattern`` is 2-10 snake_case words,
  ``PATTERN_REGEX``, normalised from spaced/hyphenated text, and rejected when it names no
  concrete mistake, repeats itself or contains ``entry_point``: ``pattern_problem``);
  ``CONFIDENCE`` maps the confidence level to a float.
- ``synth_messages(suite, metaskill, pattern, examples, existing, feedback, *, prefill=False)``
  (a whole draft); ``field_messages(...)`` / ``field_model(name)`` / ``assemble_draft(fields)``
  (a fieldwise draft, ``FIELD_ORDER``); ``SkillDraft`` and ``schema_lock()`` come from
  ``ratchet_ray.skill_contract`` (generated from ``types.Skill``); no prompt shows a worked
  example skill; ``copies_template(draft)`` detects copied schema placeholders.
- ``metasynth_messages(suite, current, pattern_counts, *, templates=None)``; ``MetaSkillDraft``.
"""

from __future__ import annotations

import functools
from typing import Literal, Mapping, Sequence

from pydantic import (BaseModel, Field, create_model)

from ratchet_ray.llm.base import Message
from ratchet_ray.prompt_templates import render, template
from ratchet_ray.types import NONE_SKILL, MetaSkill, Skill, Task
from ratchet_ray.roles.critic_prompts import (CRITIC_EXAMPLES, EXAMPLE_PATTERNS,
                                              GENERIC_PATTERN_WORDS, PATTERN_REGEX, VerdictOut,
                                              critic_messages, failure_summary, normalize_pattern,
                                              pattern_problem, verdict_model)
from ratchet_ray.roles.prompt_base import (CODE_STOP, CONFIDENCE, STRUCTURED_CONFIG, clip,
                                           guidance_block, task_text)
from ratchet_ray.roles.synth_prompts import (FIELD_ORDER, TEMPLATE_VALUES, assemble_draft,
                                             copies_template, field_max_tokens, field_messages,
                                             field_model, synth_messages)
from ratchet_ray.skill_contract import GuidanceDraft, SkillDraft, schema_lock

__all__ = [
    "CRITIC_EXAMPLES",
    "EXAMPLE_PATTERNS",
    "GENERIC_PATTERN_WORDS",
    "PATTERN_REGEX",
    "VerdictOut",
    "critic_messages",
    "failure_summary",
    "normalize_pattern",
    "pattern_problem",
    "verdict_model",
    "CODE_STOP",
    "CONFIDENCE",
    "guidance_block",
    "FIELD_ORDER",
    "TEMPLATE_VALUES",
    "GuidanceDraft",
    "SkillDraft",
    "assemble_draft",
    "copies_template",
    "field_max_tokens",
    "field_messages",
    "field_model",
    "schema_lock",
    "synth_messages",
    "code_prefill",
    "code_messages",
    "RouterChoice",
    "router_choice_model",
    "router_messages",
    "MetaSkillDraft",
    "metasynth_messages",
]


# ----------------------------------------------------------------------------- solver (code)
def code_prefill(task: Task) -> str:
    """The start of the answer (fence + function header) for backends that continue a prefill."""
    entry_point = str(task.payload.get("entry_point") or "").strip()
    return f"```python\ndef {entry_point}(" if entry_point else "```python\n"


# The Solver's template (``prompt_templates``; a run's ``prompts.dir`` may override it).
SOLVER_TEMPLATE = (
    "# Python programming task\n\n"
    "Write one correct, self-contained Python function that solves the task. "
    "Use only the standard library. Answer with only the code in one ```python block.\n\n"
    "{guidance}\n\n"
    "Task:\n{task}\n\n"
    "{entry_point_rule}")


def code_messages(task: Task, skill: Skill | None, *, prefill: str = "",
                  templates: Mapping[str, str] | None = None) -> list[Message]:
    """A Python-function prompt; the answer is expected in one ```python block. A non-empty
    ``prefill`` becomes a trailing assistant message the model continues (base models write far
    better code when the function header is already written). ``templates``: the run's
    overrides (``prompts.texts``)."""
    entry_point = str(task.payload.get("entry_point") or "").strip()
    text = render(template("solver", SOLVER_TEMPLATE, templates), {
        "guidance": guidance_block(skill) if skill is not None else "",
        "task": task_text(task),
        "entry_point_rule": f"The function must be named `{entry_point}`." if entry_point else ""})
    messages = [Message("user", text)]
    return [*messages, Message("assistant", prefill)] if prefill else messages


# ----------------------------------------------------------------------------- router
class RouterChoice(BaseModel):
    """The Router's answer: one candidate skill id, or NONE."""

    model_config = STRUCTURED_CONFIG
    skill_id: str


def router_choice_model(candidate_ids: Sequence[str]) -> type[RouterChoice]:
    """A RouterChoice whose ``skill_id`` is constrained to the candidates plus NONE."""
    return _router_choice_model(tuple(dict.fromkeys([*candidate_ids, NONE_SKILL])))


@functools.lru_cache(maxsize=256)
def _router_choice_model(allowed: tuple[str, ...]) -> type[RouterChoice]:
    # Building a pydantic model costs milliseconds; a round routes every task over one bank.
    return create_model("RouterChoice", __base__=RouterChoice,
                        skill_id=(Literal[allowed], ...))  # type: ignore[valid-type]


def _skill_card(skill: Skill) -> str:
    return (f"- {skill.id}: {skill.intent}. Use when: {skill.guidance.applies_when}"
            + (f" ({skill.description})" if skill.description != skill.intent else ""))


ROUTER_TEMPLATE = (
    "# Skill routing\n"
    "Pick the ONE skill whose guidance would most help solve the task, or NONE when no "
    "skill clearly applies. A wrong skill hurts more than no skill.\n\n"
    "Task:\n{task}\n\n"
    "Skills:\n{skills}\n\n"
    'Answer with JSON: {{"skill_id": "<one id from the list, or NONE>"}}')


def router_messages(task: Task, candidates: Sequence[Skill], *,
                    templates: Mapping[str, str] | None = None) -> list[Message]:
    cards = "\n".join(_skill_card(s) for s in candidates)
    text = render(template("router", ROUTER_TEMPLATE, templates), {
        "task": task_text(task, 2000),
        "skills": f"{cards}\n- {NONE_SKILL}: no skill applies"})
    return [Message("user", text)]


# ----------------------------------------------------------------------------- meta-synth
class MetaSkillDraft(BaseModel):
    """A revised authoring prior: Markdown with a Do / Don't list."""

    model_config = STRUCTURED_CONFIG
    body: str = Field(min_length=40, max_length=4000)


# The meta-synthesizer's template (``prompt_templates``; a run's ``prompts.dir`` may override it).
METASYNTH_TEMPLATE = (
    "# Meta-skill revision ({suite})\n"
    "The authoring guide below tells a skill author how to write skills (natural-language "
    "guidance injected into a solver's prompt). Revise it using the failure patterns the "
    "critic reported recently: keep what works, add Do / Don't items that would make new "
    "skills address these failures, remove advice that did not help. Markdown, under "
    "600 words.\n\n"
    "Current guide:\n{guide}\n\n"
    "Recent failure patterns:\n{patterns}\n\n"
    'Answer with JSON: {{"body": "<the full revised Markdown guide>"}}')


def metasynth_messages(suite: str, current: MetaSkill,
                       pattern_counts: Sequence[tuple[str, int]], *,
                       templates: Mapping[str, str] | None = None) -> list[Message]:
    patterns = "\n".join(f"- {p} (x{n})" for p, n in pattern_counts[:40]) or "- (none)"
    text = render(template("metasynth", METASYNTH_TEMPLATE, templates), {
        "suite": suite, "guide": clip(current.body, 3000), "patterns": patterns})
    return [Message("user", text)]
