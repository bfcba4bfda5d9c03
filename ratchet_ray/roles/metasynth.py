"""The Meta-Synthesizer: rewrite a suite's authoring prior (MetaSkill) from recent verdicts.

Runs every ``MetaSettings.refresh_every_rounds`` rounds or ``refresh_every_tasks`` train tasks
(off in the Default; ablation A8 turns it on). ``refresh`` targets the window's verdict patterns,
counted, and returns a NEW ``MetaSkill`` (active, minor version bumped, id
``<base>_v<major>_<minor>_<patch>``, ``created_round=round_``; the caller stores it with
``SkillBank.add_metaskill``), or None with ``error`` ``"<ExcName>: ..."`` when the LLM failed: it
never raises for LLM trouble, and ``replies`` keeps every generation. A ``current`` for another
suite is a caller bug (ValueError).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ratchet_ray.settings.schema import RoleLimits, RoleSettings
from ratchet_ray.llm.base import LLMClient, Reply
from ratchet_ray.llm.structured import ask_structured
from ratchet_ray.roles.metasynth_prompt import MetaSkillDraft, metasynth_messages
from ratchet_ray.types import MetaSkill, SkillStatus, Verdict


@dataclass
class MetaRefresh:
    metaskill: MetaSkill | None
    replies: list[Reply] = field(default_factory=list)
    error: str = ""


def bump_version(version: str) -> str:
    """``0.1.0`` -> ``0.2.0``; anything unparsable restarts at ``0.2.0``."""
    parts = version.split(".")
    if len(parts) == 3 and all(p.isdigit() for p in parts):
        return f"{parts[0]}.{int(parts[1]) + 1}.0"
    return "0.2.0"


def versioned_id(base_id: str, version: str) -> str:
    base = re.sub(r"_v\d+(_\d+)*$", "", base_id)[:60]
    return f"{base}_v{version.replace('.', '_')}"


def pattern_counts(verdicts: Sequence[Verdict]) -> list[tuple[str, int]]:
    """Patterns by frequency (ties alphabetical, so the prompt is deterministic)."""
    counts = Counter(" ".join(v.pattern.lower().split()) for v in verdicts)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def refresh(llm: LLMClient, suite: str, current: MetaSkill, verdicts: Sequence[Verdict], *,
            round_: int = -1, limits: RoleLimits | None = None,
            seed: int | None = None, templates: Mapping[str, str] | None = None) -> MetaRefresh:
    limits = limits or RoleSettings().metasynth
    if current.suite != suite:
        raise ValueError(f"refresh: meta-skill {current.id} is for suite {current.suite!r}, "
                         f"not {suite!r}; pass SkillBank.active_metaskill({suite!r})")
    messages = metasynth_messages(suite, current, pattern_counts(verdicts), templates=templates)
    result = ask_structured(llm, messages, MetaSkillDraft, max_tokens=limits.max_tokens,
                            temperature=limits.temperature, seed=seed)
    if result.value is None:
        return MetaRefresh(None, result.replies, result.error)
    version = bump_version(current.version)
    meta = MetaSkill(id=versioned_id(current.id, version), suite=suite, version=version,
                     status=SkillStatus.ACTIVE, body=result.value.body.strip(),
                     created_round=round_)
    return MetaRefresh(meta, list(result.replies))
