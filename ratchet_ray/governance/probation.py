"""Probation of skills imported from a skill pack (``ratchet skill import``, ``bank.probation``).

Contracts:
- A skill is *imported* when its ``loaded`` event's reason starts with ``PACK_REASON_PREFIX``
  (``bank.pack_import``). Its source record never enters this run's evidence, so every score the
  Curator reads of it is earned here, and retirement judges it like a native skill.
- It is *on probation* while routable (ACTIVE or CANDIDATE) with fewer trials here than
  ``probation_floor``: ``curator.probation_min_trials`` when set (capped at the retirement
  floor), else the retirement floor (``min_trials``, or A9's ``ucb_min_trials``). Under cap
  pressure it then ranks by its Wilson lower bound (``governance.capacity.eviction_order``).
"""

from __future__ import annotations

from typing import Callable, Mapping

from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.queries import EMPTY_STATS, SkillStats
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.governance.curator import retirement_floor
from ratchet_ray.settings.schema import CuratorSettings
from ratchet_ray.types import Skill, SkillStatus

PACK_REASON_PREFIX = "pack:"
"""How a ``loaded`` event names the pack a skill came from (``pack:<sha256[:16]> ...``)."""
TRUSTED_REASON_PREFIX = "trusted-pack:"
"""... and a skill imported without probation (``bank.probation`` false): not on probation."""


def probation_floor(settings: CuratorSettings) -> int:
    """Trials an imported skill must earn in this run before it leaves probation."""
    floor, own = retirement_floor(settings), settings.probation_min_trials
    return floor if own is None else min(floor, own)


def imported_from_events(events: list[dict]) -> dict[str, str]:
    """``{skill id: pack hash prefix}`` of every skill a pack import brought in (its latest)."""
    out = {}
    for ev in events:
        reason = str(ev.get("reason") or "")
        if ev.get("event") == "loaded" and reason.startswith(PACK_REASON_PREFIX):
            out[ev["skill_id"]] = reason[len(PACK_REASON_PREFIX):].split(" ", 1)[0]
    return out


def imported(store: EvidenceStore, skill_ids: Mapping[str, object]) -> dict[str, str]:
    """``{skill id: pack hash prefix}`` of the skills in ``skill_ids`` that came from a pack,
    read from the run's skill events."""
    if not any(store.part_paths("skill_event")):
        return {}
    with store.connect() as con:
        events = nq.fetch_dicts(con, "skill_events")
    return {k: v for k, v in imported_from_events(events).items() if k in skill_ids}


def on_probation(skills: Mapping[str, Skill], imported_ids: Mapping[str, str],
                 stats: Callable[[], Mapping[str, SkillStats]],
                 settings: CuratorSettings) -> dict[str, int]:
    """``{skill id: trials earned here}`` of the imported skills still on probation; ``stats``
    is only read when some skill was imported."""
    if not imported_ids:
        return {}
    table, floor = stats(), probation_floor(settings)
    trials = {i: table.get(i, EMPTY_STATS).trials for i in imported_ids}
    return {i: n for i, n in trials.items()
            if skills[i].status is not SkillStatus.DEPRECATED and n < floor}
