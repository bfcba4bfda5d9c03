"""Probation of skills imported from a skill pack (``ratchet skill import``, ``bank.pack``).

Contracts (a mixin over ``SkillBank``: ``log``, ``config``, ``_skills``, ``stats``):
- A skill is *imported* when its ``loaded`` event's reason starts with ``PACK_REASON_PREFIX``
  (``pack:<pack hash> ...``, written by ``bank.pack_import``). Its record in the source run never
  enters this run's evidence, so every score the Curator reads of it (c-hat, c_cf, trials) is
  earned here: retirement judges it by the same rule as a native skill, on its own capsules.
- An imported skill is *on probation* while it is routable (ACTIVE or CANDIDATE) and has fewer
  trials here than ``probation_floor(curator settings)``: ``curator.probation_min_trials`` when
  set (capped at the retirement floor), else the retirement floor (``min_trials``, or A9's
  ``ucb_min_trials``). Under cap pressure a skill on probation is ranked by the 95 % Wilson
  lower bound of its c-hat here (-1 untried) where a native skill is ranked by its c-hat, and
  goes first on a tie (``curator.eviction_order(..., probation=...)``): it keeps a slot against a
  native skill only on what it has shown in this run beyond doubt.
- Imports come through ``SkillBank.import_pack`` (``bank.pack_import``).
"""

from __future__ import annotations

from ratchet_ray.settings.schema import CuratorSettings
from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.queries import EMPTY_STATS, SkillStats

PACK_REASON_PREFIX = "pack:"
"""How a ``loaded`` event names the pack a skill came from (``pack:<sha256[:16]> ...``)."""
TRUSTED_REASON_PREFIX = "trusted-pack:"
"""... and a skill imported without probation (``bank.probation`` false): not on probation."""


def probation_floor(settings: CuratorSettings) -> int:
    """Trials an imported skill must earn in this run before it leaves probation."""
    floor = settings.ucb_min_trials if settings.retire_rule == "wilson_ucb" else settings.min_trials
    if settings.probation_min_trials is not None:
        return min(floor, settings.probation_min_trials)
    return floor


def imported_from_events(events: list[dict]) -> dict[str, str]:
    """``{skill id: pack hash prefix}`` of every skill a pack import brought in (its latest)."""
    out = {}
    for ev in events:
        reason = str(ev.get("reason") or "")
        if ev.get("event") == "loaded" and reason.startswith(PACK_REASON_PREFIX):
            out[ev["skill_id"]] = reason[len(PACK_REASON_PREFIX):].split(" ", 1)[0]
    return out


class ProbationMixin:
    """``SkillBank.imported`` / ``probation`` (see module contract)."""

    def imported(self) -> dict[str, str]:
        """``{skill id: pack hash prefix}`` of the bank's skills that came from a pack."""
        if not any(self.log.store.part_paths("skill_event")):
            return {}
        with self.log.store.connect() as con:
            events = nq.fetch_dicts(con, "skill_events")
        return {k: v for k, v in imported_from_events(events).items() if k in self._skills}

    def probation(self, stats: dict[str, SkillStats] | None = None) -> dict[str, int]:
        """``{skill id: trials earned here}`` of the imported skills still on probation."""
        imported = self.imported()
        if not imported:
            return {}
        stats = self.stats() if stats is None else stats
        floor = probation_floor(self.config.curator)
        out = {}
        for skill_id in imported:
            skill = self._skills[skill_id]
            trials = stats.get(skill_id, EMPTY_STATS).trials
            if skill.status.value != "deprecated" and trials < floor:
                out[skill_id] = trials
        return out
