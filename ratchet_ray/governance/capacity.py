"""The active cap (``curator.active_cap``): when a bank must make room, and whom it evicts.

Contracts:
- ``evictions``: the skills to evict so that ``extra`` more ACTIVE skills fit, each with its
  ``evicted`` event's reason; ``[]`` when they fit, None (bank unchanged) when every ACTIVE
  skill is ``do_not_retire``. ``stats`` and ``probation`` are called only when room is needed.
- ``eviction_order``: the ACTIVE, non-exempt skills lowest contribution first (ties: more trials
  first, so an untried skill keeps its chance; then id). ``dead_weight`` ids
  (``curator.evict_dead_weight_first``: ``governance.bypass.dead_weight``) come first, in id
  order. Ids on ``probation`` (``governance.probation``) rank by the 95 % Wilson lower bound of
  their c-hat here (-1 untried) and go first on a tie: an import keeps a slot against a native
  skill only on what it has shown here beyond doubt (docs/skill-packs.md).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable, Collection, Iterable, Mapping

from ratchet_ray.evidence.queries import EMPTY_STATS, SkillStats
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.governance import bypass
from ratchet_ray.governance.curator import exact, wilson_bounds
from ratchet_ray.settings.schema import CuratorSettings
from ratchet_ray.types import Skill

PROBATION_Z = 1.959963984540054
"""z of the 95 % Wilson lower bound an import on probation is ranked by under cap pressure."""


def eviction_order(skills: Iterable[Skill], stats: Mapping[str, SkillStats],
                   dead_weight: Collection[str] = (), probation: Collection[str] = ()
                   ) -> list[str]:
    """ACTIVE, non-``do_not_retire`` skill ids, the first to evict first (module contract)."""
    candidates = [s for s in skills if s.is_active and not s.do_not_retire]

    def key(skill: Skill) -> tuple:
        s = stats.get(skill.id, EMPTY_STATS)
        if skill.id in dead_weight:
            return (0, Fraction(0), 0, 0, skill.id)
        if skill.id in probation:
            lower = wilson_bounds(s, PROBATION_Z)[0] if s.trials else -1.0
            return (1, exact(lower), 0, -s.trials, skill.id)
        score = Fraction(s.successes - s.failures, s.trials) if s.trials else Fraction(0)
        return (1, score, 1, -s.trials, skill.id)

    return [s.id for s in sorted(candidates, key=key)]


def evictions(active: list[Skill], stats: Callable[[], Mapping[str, SkillStats]],
              settings: CuratorSettings, *, round_: int, store: EvidenceStore,
              probation: Callable[[Mapping[str, SkillStats]], Mapping[str, int]],
              extra: int = 1) -> list[tuple[str, SkillStats, str]] | None:
    """``[(skill id, its stats, reason)]`` to evict so ``extra`` more ACTIVE skills fit (module contract)."""
    need = len(active) + extra - settings.active_cap
    if need <= 0:
        return []
    table = stats()
    dead = {}
    if settings.evict_dead_weight_first:  # beyond the paper: unrouted skills go first
        with store.connect() as con:
            dead = bypass.dead_weight(con, active, settings.dead_weight_rounds, round_)
    trials_here = probation(table)  # imports that have not earned their trials go first
    order = eviction_order(active, table, dead, trials_here)
    if len(order) < need:
        return None
    reasons = []
    for skill_id in order[:need]:
        why = (f"dead weight: ACTIVE since round {dead[skill_id].active_since}, never routed"
               if skill_id in dead else
               f"on probation (imported; {trials_here[skill_id]} trials here)"
               if skill_id in trials_here else "lowest contribution")
        reasons.append((skill_id, table.get(skill_id, EMPTY_STATS), f"active cap {settings.active_cap} reached; {why}"))
    return reasons
