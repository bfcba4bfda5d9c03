"""The meta-synthesizer's prompt (``METASYNTH_TEMPLATE``): the current guide (clipped to 3,000
characters) and up to 40 recent failure patterns with counts; the answer is a ``MetaSkillDraft``
(the revised guide as Markdown with a Do / Don't list).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from pydantic import BaseModel, Field

from ratchet_ray.llm.base import Message
from ratchet_ray.settings.prompt_templates import render, template
from ratchet_ray.bank.skill_contract import DRAFT_CONFIG
from ratchet_ray.roles.prompt_base import clip
from ratchet_ray.types import MetaSkill


class MetaSkillDraft(BaseModel):
    """A revised authoring prior: Markdown with a Do / Don't list."""

    model_config = DRAFT_CONFIG
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
