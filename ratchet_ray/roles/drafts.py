"""Turning an LLM's draft into a skill, for new skills and revisions alike.

``slugify`` returns a valid, non-empty skill id; ``draft_to_skill`` validates a draft into an
ACTIVE synthesized ``Skill`` with a fresh id (``bank.skill_contract.unique_id``; tags gain
``auto`` and the suite) or raises pydantic's ``ValidationError``.
"""

from __future__ import annotations

import re
from typing import Collection

from ratchet_ray.llm.base import Reply
from ratchet_ray.bank.skill_contract import SkillDraft, unique_id
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
    """Validate an LLM draft into an ACTIVE synthesized ``Skill`` with a fresh unique id."""
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
