"""The Synthesizer's refinement step (``synth.refine``, arm A10, beyond the paper).

Contracts:
- ``refine_targets``: the ACTIVE, retirable skills with at least ``synth.refine_min_failures``
  verdicts among the window's that blame the skill (``REFINE_ATTRIBUTIONS``: it hurt, or
  changed nothing, on a task it was meant for), most first (ties by id), at most
  ``synth.refine_max_per_round``, each with those verdicts in order. A failure the skill helped
  on or did not apply to (a routing miss) is no reason to rewrite it.
- ``Reviser._revise`` (a ``Synthesizer`` mixin) drafts the revision (``refine_messages``, a whole
  ``SkillDraft``), validates it like a new skill, names it ``<lineage>_v<n>`` (unique among
  ``taken``) and hands it to ``refine_skill`` (``SkillBank.refine``), re-prompting like a new
  skill (``roles.drafts``). On success the revision's id goes to ``outcome.created`` and the
  parent's to ``outcome.refined``; else ``outcome.failed`` says why and the bank is unchanged.
  Never raises for LLM trouble.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ratchet_ray.settings.schema import SynthSettings
from ratchet_ray.roles.drafts import RepromptNotes, draft_to_skill, reprompt_until_added
from ratchet_ray.roles.refiner_prompt import refine_messages
from ratchet_ray.seeding import derive_seed
from ratchet_ray.bank.skill_contract import SkillDraft, unique_id
from ratchet_ray.types import Capsule, MetaSkill, Skill, Verdict

REFINE_ATTRIBUTIONS = frozenset({"hurt", "neutral"})
"""The Critic's attributions of a routed failure that count toward revising the skill."""
REVISION_EXAMPLES = 5
"""Routed failures shown in a revision prompt (the most confident verdicts)."""


@dataclass(frozen=True)
class RefineTarget:
    skill: Skill
    verdicts: tuple[Verdict, ...]


def refine_targets(verdicts: Sequence[Verdict], active_skills: Sequence[Skill],
                   settings: SynthSettings) -> list[RefineTarget]:
    """The skills this round revises (module contract)."""
    eligible = {s.id: s for s in active_skills if s.is_active and not s.do_not_retire}
    routed: dict[str, list[Verdict]] = {}
    for verdict in verdicts:
        if verdict.skill_id in eligible and verdict.attribution in REFINE_ATTRIBUTIONS:
            routed.setdefault(verdict.skill_id, []).append(verdict)
    ranked = sorted((k for k, v in routed.items() if len(v) >= settings.refine_min_failures),
                    key=lambda k: (-len(routed[k]), k))
    return [RefineTarget(eligible[k], tuple(routed[k]))
            for k in ranked[:settings.refine_max_per_round]]


class Reviser:
    """``Synthesizer._revise`` (module contract); uses the Synthesizer's settings, llm and
    ``_structured`` / ``_example``."""

    def _revise(self, target: RefineTarget, metaskill: MetaSkill | None,
                refine_skill: Callable[[Skill, str], Any], taken: set[str], outcome: Any,
                round_: int, capsules: Mapping[str, Capsule]) -> Skill | None:
        parent = target.skill
        chosen = sorted(target.verdicts, key=lambda v: -v.confidence)[:REVISION_EXAMPLES]
        examples = [self._example(v, capsules) for v in chosen]

        def draft(attempt: int, feedback: Sequence[str]) -> SkillDraft:
            messages = refine_messages(self.suite, metaskill, parent, examples, list(feedback),
                                       failures=len(target.verdicts))
            seed = derive_seed(self.seed, round_, parent.id, attempt, "refine")
            return self._structured(messages, SkillDraft, self.limits.max_tokens, seed, outcome)

        def to_skill(drafted: SkillDraft) -> Skill:
            skill = draft_to_skill(drafted, taken, self.suite)
            rid = unique_id(f"{parent.lineage_id[:72]}_v{parent.lineage_version + 1}", taken)
            return skill.model_copy(update={"id": rid, "name": rid})

        notes = RepromptNotes(
            template="Your draft repeated the schema lock's placeholder text. "
                     "Write the revised skill's real guidance.",
            duplicate=lambda _skill, dup: (f"Your revision duplicates the existing skill "
                                           f"`{dup}`. Keep to `{parent.id}`'s own scope."),
            too_long=lambda _skill, reason: (
                f"Your revision was too long ({reason}). Keep the whole skill under "
                f"{self.settings.max_skill_chars} characters."))
        skill = reprompt_until_added(f"revision of {parent.id}", outcome,
                                     self.settings.max_reprompts, draft, to_skill,
                                     lambda s: refine_skill(s, parent.id), notes, taken)
        if skill is None:
            return None
        outcome.refined.append(parent.id)
        return skill.as_revision_of(parent)  # as the bank holds it
