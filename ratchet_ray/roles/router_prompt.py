"""The Router's prompt and its structured answer.

``router_messages`` is ONE user message from ``ROUTER_TEMPLATE``: the task and one card per
candidate (id, intent, when it applies) plus ``NONE``. ``router_choice_model``: ``skill_id`` an
enum of the candidate ids plus ``"NONE"`` (cached per candidate set).
"""

from __future__ import annotations

import functools
from typing import Literal, Mapping, Sequence

from pydantic import BaseModel, create_model

from ratchet_ray.llm.base import Message
from ratchet_ray.settings.prompt_templates import render, template
from ratchet_ray.bank.skill_contract import DRAFT_CONFIG
from ratchet_ray.roles.prompt_base import task_text
from ratchet_ray.types import NONE_SKILL, Skill, Task


class RouterChoice(BaseModel):
    """The Router's answer: one candidate skill id, or NONE."""

    model_config = DRAFT_CONFIG
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
