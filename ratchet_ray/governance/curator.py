"""Retirement and eviction rules (DESIGN.md section 1, step 6) as pure functions.

Contracts:
- ``should_retire(stats, settings)``: trials >= ``min_trials`` AND contribution <= -``retire_tau``.
  The comparison is exact in rational arithmetic: ``(successes - failures) / trials`` against the
  decimal value of tau as written (``0.10`` means 1/10), so a score of exactly -0.10 retires and
  float rounding can never flip a boundary case.
- ``curate(skills, stats, settings, tampering=None)`` returns one ``CurationDecision`` per
  ACTIVE skill (and per CANDIDATE the tampering rule retires), sorted by id: ``retire``, ``keep`` (enough trials, score above the bar), ``insufficient`` (fewer than
  ``min_trials``) or ``exempt`` (``do_not_retire``: never retired, but reported with its live
  score and whether it *would* be retired, so an operator can review unlock candidates).
- The tampering rule (``curator.retire_on_tampering``, on by default; off replicates the
  paper's Default): ``curate(..., tampering=...)`` (per skill, its routed train capsules graded
  as an attack on the grader, ``evidence.queries.tampering_by_skill``) retires a routable skill
  (ACTIVE, or CANDIDATE: those are routed during the bootstrap) with any such capsule at once,
  whatever its trials and score, with a reason starting ``tampering:`` (``TAMPERING_REASON``)
  that names the count, the first round, status and capsule. A ``do_not_retire`` skill that
  tampered is ``exempt`` (its reason says it tampered) unless
  ``curator.tampering_overrides_do_not_retire`` is set. The record counts every capsule ever
  routed to the skill, so a skill reinstated by hand is retired again at the next curation (mark
  it ``do_not_retire`` to keep it). With the rule off, tampering changes no decision (each
  decision still reports its ``tampering`` count).
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
from ratchet_ray.evidence.queries import EMPTY_STATS, SkillStats, TamperingStats
from ratchet_ray.evidence.tampering import TAMPERING_REASON
from ratchet_ray.types import Skill, SkillStatus

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
    tampering: int = 0
    """Routed train capsules graded as tampering (0 when the caller passed no tampering)."""

    @property
    def for_tampering(self) -> bool:
        """A retirement under the tampering rule (not the score rule)."""
        return self.action == "retire" and self.reason.startswith(f"{TAMPERING_REASON}:")

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


def tampering_reason(record: TamperingStats) -> str:
    """The retirement reason of the tampering rule; starts with ``tampering:``."""
    times = "attempt was" if record.capsules == 1 else "attempts were"
    return (f"{TAMPERING_REASON}: {record.capsules} routed train {times} graded as tampering "
            f"(first in round {record.first_round}: {record.first_status}, capsule "
            f"{record.first_capsule})")


def tampering_retires(skill: Skill, record: TamperingStats | None,
                      settings: CuratorSettings) -> bool:
    """Whether the tampering rule retires ``skill`` now (see module contract)."""
    if not settings.retire_on_tampering or record is None or record.capsules <= 0:
        return False
    if skill.status not in (SkillStatus.ACTIVE, SkillStatus.CANDIDATE):
        return False
    return not skill.do_not_retire or settings.tampering_overrides_do_not_retire


def _tampering_decision(skill: Skill, stats: SkillStats, record: TamperingStats,
                        settings: CuratorSettings) -> CurationDecision:
    score = f"c={stats.contribution:+.3f} over {stats.trials} trials"
    if tampering_retires(skill, record, settings):
        action: Action = "retire"
        reason = f"{tampering_reason(record)}; {score}"
        if skill.do_not_retire:
            reason += "; do_not_retire overridden (curator.tampering_overrides_do_not_retire)"
    else:  # do_not_retire without the override
        action = "exempt"
        reason = (f"do_not_retire; {score}; would be retired for {tampering_reason(record)} "
                  "(set curator.tampering_overrides_do_not_retire to retire it)")
    return CurationDecision(skill_id=skill.id, action=action, contribution=stats.contribution,
                            trials=stats.trials, successes=stats.successes,
                            failures=stats.failures, reason=reason, tampering=record.capsules)


def _decide(skill: Skill, stats: SkillStats, settings: CuratorSettings,
            record: TamperingStats | None = None) -> CurationDecision:
    if settings.retire_on_tampering and record is not None and record.capsules > 0:
        return _tampering_decision(skill, stats, record, settings)
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
                            failures=stats.failures, reason=reason,
                            tampering=record.capsules if record is not None else 0)


def curate(skills: Iterable[Skill], stats: Mapping[str, SkillStats],
           settings: CuratorSettings,
           tampering: Mapping[str, TamperingStats] | None = None) -> list[CurationDecision]:
    """One decision per ACTIVE skill, and per CANDIDATE skill the tampering rule retires (see
    module contract), sorted by id; other skills are ignored."""
    tampering = tampering or {}
    chosen = [s for s in skills if s.is_active or (
        s.status is SkillStatus.CANDIDATE and tampering_retires(s, tampering.get(s.id), settings))]
    return [_decide(s, stats.get(s.id, EMPTY_STATS), settings, tampering.get(s.id))
            for s in sorted(chosen, key=lambda s: s.id)]


def eviction_order(skills: Iterable[Skill], stats: Mapping[str, SkillStats]) -> list[str]:
    """ACTIVE, non-``do_not_retire`` skill ids, the first to evict first."""
    candidates = [s for s in skills if s.is_active and not s.do_not_retire]

    def key(skill: Skill) -> tuple:
        s = stats.get(skill.id, EMPTY_STATS)
        score = Fraction(s.successes - s.failures, s.trials) if s.trials else Fraction(0)
        return (score, -s.trials, skill.id)

    return [s.id for s in sorted(candidates, key=key)]
