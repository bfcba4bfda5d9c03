"""Retirement and eviction rules (DESIGN.md section 1, step 6) as pure functions.

Contracts:
- ``should_retire(stats, settings)``: trials >= ``min_trials`` AND contribution <= -``retire_tau``.
  The comparison is exact in rational arithmetic: ``(successes - failures) / trials`` against the
  decimal value of tau as written (``0.10`` means 1/10), so a score of exactly -0.10 retires and
  float rounding can never flip a boundary case.
- ``curate(skills, stats, settings)`` returns one ``CurationDecision`` per ACTIVE skill, sorted by
  id: ``retire``, ``keep`` (enough trials, score above the bar), ``insufficient`` (fewer than
  ``min_trials``) or ``exempt`` (``do_not_retire``: never retired, but reported with its live
  score and whether it *would* be retired, so an operator can review unlock candidates).
- ``eviction_order(skills, stats)`` lists the ACTIVE, non-exempt skills lowest contribution first
  (ties: more trials first, so an untried skill keeps its chance; then id) -- the order in which
  a full bank makes room.
Skills without capsules score 0.0 with 0 trials.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Iterable, Literal, Mapping

from ratchet_ray.config import CuratorSettings
from ratchet_ray.evidence.queries import EMPTY_STATS, SkillStats
from ratchet_ray.types import Skill

Action = Literal["retire", "keep", "insufficient", "exempt"]


@dataclass(frozen=True)
class CurationDecision:
    skill_id: str
    action: Action
    contribution: float
    trials: int
    successes: int
    failures: int
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)


def _exact(value: float) -> Fraction:
    # repr() gives the shortest decimal that round-trips, i.e. the value as the user wrote it.
    return Fraction(repr(float(value)))


def meets_retirement_bar(stats: SkillStats, settings: CuratorSettings) -> bool:
    """The retirement rule, ignoring ``do_not_retire`` (see ``should_retire``)."""
    if stats.trials < settings.min_trials or stats.trials == 0:
        return False
    score = Fraction(stats.successes - stats.failures, stats.trials)
    return score <= -_exact(settings.retire_tau)


def should_retire(skill: Skill, stats: SkillStats, settings: CuratorSettings) -> bool:
    return not skill.do_not_retire and meets_retirement_bar(stats, settings)


def _decide(skill: Skill, stats: SkillStats, settings: CuratorSettings) -> CurationDecision:
    bar = f"c <= -{settings.retire_tau:g} after >= {settings.min_trials} trials"
    score = f"c={stats.contribution:+.3f} over {stats.trials} trials"
    would_retire = meets_retirement_bar(stats, settings)
    if skill.do_not_retire:
        action: Action = "exempt"
        reason = f"do_not_retire; {score}" + (f"; would be retired ({bar})" if would_retire else "")
    elif would_retire:
        action, reason = "retire", f"{score} meets {bar}"
    elif stats.trials < settings.min_trials:
        action, reason = "insufficient", f"{score}; needs {settings.min_trials} trials"
    else:
        action, reason = "keep", f"{score} above the bar ({bar})"
    return CurationDecision(skill_id=skill.id, action=action, contribution=stats.contribution,
                            trials=stats.trials, successes=stats.successes,
                            failures=stats.failures, reason=reason)


def curate(skills: Iterable[Skill], stats: Mapping[str, SkillStats],
           settings: CuratorSettings) -> list[CurationDecision]:
    """One decision per ACTIVE skill (see module contract); non-active skills are ignored."""
    active = sorted((s for s in skills if s.is_active), key=lambda s: s.id)
    return [_decide(s, stats.get(s.id, EMPTY_STATS), settings) for s in active]


def eviction_order(skills: Iterable[Skill], stats: Mapping[str, SkillStats]) -> list[str]:
    """ACTIVE, non-``do_not_retire`` skill ids, the first to evict first."""
    candidates = [s for s in skills if s.is_active and not s.do_not_retire]

    def key(skill: Skill) -> tuple:
        s = stats.get(skill.id, EMPTY_STATS)
        score = Fraction(s.successes - s.failures, s.trials) if s.trials else Fraction(0)
        return (score, -s.trials, skill.id)

    return [s.id for s in sorted(candidates, key=key)]
