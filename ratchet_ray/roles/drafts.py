"""A new skill's and a revision's way into the bank (``Synthesizer._author``,
``Reviser._revise``): draft -> validate -> hand to the bank, re-prompting on what it refuses.

Contract of ``reprompt_until_added``:
- Up to ``1 + max_reprompts`` attempts, each ``draft(i, feedback)`` (the notes so far, oldest
  first). A ``DraftError`` ends the loop: its replies go to ``outcome.replies`` and
  ``"<name>: <error>"`` to ``outcome.failed`` (a good draft's replies are ``draft``'s to record).
- A draft copying the schema lock's placeholders (``copies_template``) is re-prompted with
  ``notes.template``; else ``to_skill(draft)`` makes the skill, and a ``ValidationError`` ends
  the loop (``"<name>: invalid skill: ..."``).
- ``submit(skill)`` (``SkillBank.add`` / ``refine``): ``added`` records the id in
  ``outcome.created`` and evictions in ``outcome.evicted`` and returns the skill; ``duplicate``
  records the bank's skill in ``outcome.duplicates`` (an id clash also marks the id ``taken``)
  and re-prompts with ``notes.duplicate``; ``too_long`` with ``notes.too_long``; ``leakage`` is
  recorded in ``outcome.leaked`` every time and re-prompted once with its reason (which names
  the spans); anything else ends the loop (``"<name>: <status>: <reason>"``).
- Out of attempts: ``"<name>: still rejected after <n> re-prompts (<last note>)"``. Returns the
  added skill, or None with the reason in ``outcome.failed``; errors from ``submit`` propagate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Collection, Sequence

from pydantic import ValidationError

from ratchet_ray.bank.skill_contract import SkillDraft, unique_id
from ratchet_ray.llm.base import Reply
from ratchet_ray.roles.synthesizer_prompt import copies_template
from ratchet_ray.types import Guidance, Skill, SkillStatus


def slugify(text: str) -> str:
    """A valid skill id (``^[a-z0-9][a-z0-9_-]{0,79}$``) from free text; never empty."""
    slug = re.sub(r"[^a-z0-9_\-]+", "_", text.lower()).strip("_-")
    slug = re.sub(r"_+", "_", slug)[:60].strip("_-")
    return slug or "skill"


class DraftError(Exception):
    """A draft could not be written; ``replies`` keeps every generation for accounting."""

    def __init__(self, message: str, replies: list[Reply]):
        super().__init__(message)
        self.replies = replies


def draft_to_skill(draft: SkillDraft, taken: Collection[str], suite: str) -> Skill:
    """Validate an LLM draft into an ACTIVE synthesized ``Skill`` with a fresh id
    (``bank.skill_contract.unique_id``; tags gain ``auto`` and the suite); raises pydantic's
    ``ValidationError``."""
    skill_id = unique_id(slugify(draft.id or draft.name), taken)
    tags = list(dict.fromkeys([*(t.strip() for t in draft.tags if t.strip()), "auto", suite]))
    g = draft.guidance
    return Skill(
        id=skill_id, name=skill_id, description=draft.description, intent=draft.intent,
        signals_match=[s.strip() for s in draft.signals_match if s.strip()], tags=tags,
        preconditions=[p.strip() for p in draft.preconditions if p.strip()],
        status=SkillStatus.ACTIVE, author="synthesized",
        guidance=Guidance(applies_when=g.applies_when, key_insight=g.key_insight,
                          common_pitfalls=[p.strip() for p in g.common_pitfalls if p.strip()],
                          verify_before_returning=g.verify_before_returning),
    )


@dataclass(frozen=True)
class RepromptNotes:
    """The feedback texts an author gives the LLM; only their wording differs between authors."""

    template: str
    duplicate: Callable[[Skill, str], str]  # (the refused skill, the bank id it duplicates)
    too_long: Callable[[Skill, str], str]  # (the refused skill, the bank's reason)


def reprompt_until_added(name: str, outcome: Any, max_reprompts: int,
                         draft: Callable[[int, Sequence[str]], SkillDraft],
                         to_skill: Callable[[SkillDraft], Skill],
                         submit: Callable[[Skill], Any], notes: RepromptNotes,
                         taken: set[str]) -> Skill | None:
    """The added skill or None (module contract); ``outcome`` is a ``SynthOutcome``."""
    feedback: list[str] = []
    leak_reprompted = False
    for attempt in range(1 + max_reprompts):
        try:
            drafted = draft(attempt, list(feedback))
        except DraftError as exc:
            outcome.replies.extend(exc.replies)
            outcome.failed.append(f"{name}: {exc}")
            return None
        if copies_template(drafted):
            feedback.append(notes.template)
            continue
        try:
            skill = to_skill(drafted)
        except ValidationError as exc:
            outcome.failed.append(f"{name}: invalid skill: {exc.errors()[:3]}")
            return None
        added = submit(skill)
        if added.status == "added":
            outcome.created.append(added.skill_id or skill.id)
            outcome.evicted.extend(added.evicted)
            return skill
        if added.status == "duplicate" and added.duplicate_of:
            outcome.duplicates.append(added.duplicate_of)
            if added.duplicate_of == skill.id:  # an id clash (e.g. a deprecated skill's id)
                taken.add(skill.id)
            feedback.append(notes.duplicate(skill, added.duplicate_of))
        elif added.status == "leakage":
            outcome.leaked.append(f"{skill.id}: {added.reason}")
            if leak_reprompted:
                outcome.failed.append(f"{name}: still quotes task content after one "
                                      "leakage re-prompt")
                return None
            leak_reprompted = True
            feedback.append(added.reason)
        elif added.status == "too_long":
            feedback.append(notes.too_long(skill, added.reason))
        else:
            outcome.failed.append(f"{name}: {added.status}: {added.reason}")
            return None
    outcome.failed.append(f"{name}: still rejected after {max_reprompts} "
                          f"re-prompts ({feedback[-1] if feedback else 'no feedback'})")
    return None
