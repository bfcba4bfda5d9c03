"""The Synthesizer's revision prompt (``synth.refine``, arm A10, beyond the paper).

``refine_messages`` is ONE user message: ``REFINE_HEADING``, the authoring guide as for a new
skill (under A3 the bare schema), the current skill's authored fields as YAML (nothing the loop
sets), the routed failures' examples and any feedback on an earlier draft; it asks for the whole
revised skill as a ``SkillDraft``, validated exactly like a new skill. The revision's id is the
loop's (``<lineage>_v<n>``), not the model's.
"""

from __future__ import annotations

from typing import Sequence

import yaml

from ratchet_ray.llm.base import Message
from ratchet_ray.roles.synthesizer_prompt import authoring_guide
from ratchet_ray.types import AUTHORED_FIELDS, MetaSkill, Skill

REFINE_HEADING = "# Skill revision"


def authored_yaml(skill: Skill) -> str:
    """The fields an author writes (``types.AUTHORED_FIELDS``), as the skill file shows them."""
    data = skill.model_dump(mode="json")
    return yaml.safe_dump({k: data[k] for k in AUTHORED_FIELDS}, sort_keys=False,
                          allow_unicode=True, width=1_000_000).strip()


def refine_messages(suite: str, metaskill: MetaSkill | None, skill: Skill,
                    examples: Sequence[str], feedback: Sequence[str] = (), *,
                    failures: int) -> list[Message]:
    """Ask for the revision of ``skill`` from its routed failures (module contract)."""
    parts = [
        f"{REFINE_HEADING} ({suite})\n\n"
        "Revise ONE existing skill: natural-language guidance (never code) injected into a "
        "solver's prompt. The solver was given this skill on the tasks below and still failed; "
        "the critic's verdicts say why, and whether the skill helped, hurt or did not apply. "
        "Keep what the skill gets right and its scope (the same kind of task); change what made "
        "these attempts fail. Write guidance that transfers to new tasks: never a task's "
        "answer, test values or function names.",
        authoring_guide(metaskill, whole=True),
        f"Current skill (`{skill.id}`, version {skill.lineage_version} of lineage "
        f"`{skill.lineage_id}`):\n{authored_yaml(skill)}",
        f"Routed failures ({len(examples)} examples shown of {failures}):\n"
        + "\n---\n".join(examples),
    ]
    if feedback:
        parts.append("Feedback on your previous draft:\n" + "\n".join(f"- {f}" for f in feedback))
    parts.append("Answer with the JSON object of the complete revised skill.")
    return [Message("user", "\n\n".join(p for p in parts if p))]
