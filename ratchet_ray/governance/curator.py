"""Retirement rules (DESIGN.md section 1, step 6) as pure functions.

Contracts:
- ``meets_retirement_bar``: trials >= ``min_trials`` AND contribution <= -``retire_tau``, exact
  in rational arithmetic against tau as written (``0.10`` is 1/10): a score of exactly -0.10
  retires, and float rounding never flips a boundary case.
- ``curate``: one ``CurationDecision`` per ACTIVE skill (and per CANDIDATE a misconduct rule
  retires), sorted by id: ``retire``, ``keep``, ``insufficient`` (fewer than ``min_trials``) or
  ``exempt`` (``do_not_retire``: never retired, but reported with whether it *would* be).
- Tampering rule (``curator.retire_on_tampering``, beyond the paper; ``--profile hardened``): a
  routable skill (ACTIVE, or CANDIDATE: routed during the bootstrap) with any routed train
  capsule graded as tampering retires at once, whatever its score, the reason ``tampering: ...``
  naming the count, first round, status and capsule. A ``do_not_retire`` skill is ``exempt``
  unless ``curator.tampering_overrides_do_not_retire``. The record counts every capsule ever
  routed to the skill, so a skill reinstated by hand retires again at the next curation. With
  the rule off, tampering changes no decision (each still reports its count).
- Cheat rule (``cheat_probe.retire`` with the probe on; ``apply_cheat_rule``, after the others):
  a routable skill with a passed impossible twin retires at once (``cheat: ...``);
  ``do_not_retire`` as for tampering.
- ``curator.retire_rule`` 'wilson_ucb' (A9, beyond the paper) replaces the score bar: a skill
  retires when the Wilson upper bound on c (``wilson_upper_contribution``) is <= -tau on
  ``ucb_min_trials`` or more trials.
- The active cap, eviction order, dead weight and probation are ``governance.capacity``'s.
  Skills without capsules score 0.0 with 0 trials.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Iterable, Literal, Mapping

from ratchet_ray.settings.schema import CuratorSettings
from ratchet_ray.evidence.queries import EMPTY_STATS, SkillStats, TamperingStats
from ratchet_ray.evidence.tampering import TAMPERING_REASON
from ratchet_ray.governance.cheat_probe import CheatStats, cheat_reason
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

    @classmethod
    def of(cls, skill_id: str, stats: SkillStats, action: Action, reason: str,
           tampering: int = 0) -> "CurationDecision":
        return cls(skill_id=skill_id, action=action, contribution=stats.contribution,
                   trials=stats.trials, successes=stats.successes, failures=stats.failures,
                   reason=reason, tampering=tampering)

    def to_dict(self) -> dict:
        return asdict(self)


def exact(value: float) -> Fraction:
    # repr() gives the shortest decimal that round-trips, i.e. the value as the user wrote it.
    return Fraction(repr(float(value)))


def wilson_upper_contribution(stats: SkillStats, z: float) -> float:
    """Upper Wilson bound on p = (c + 1) / 2 at ``z``, mapped back to c = 2p - 1 (A9)."""
    return wilson_bounds(stats, z)[1] if stats.trials > 0 else 1.0


def wilson_bounds(stats: SkillStats, z: float) -> tuple[float, float]:
    """The Wilson score interval at ``z`` on p = (c + 1) / 2 (ties count one half), mapped
    back to c = 2p - 1, as ``(lower, upper)``; ``stats`` has trials."""
    n = stats.trials
    p = (stats.successes + (n - stats.successes - stats.failures) / 2) / n
    centre, spread = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (2 * max(0.0, (centre - spread) / (1 + z * z / n)) - 1,
            2 * min(1.0, (centre + spread) / (1 + z * z / n)) - 1)


def _bar(settings: CuratorSettings) -> str:
    if settings.retire_rule == "wilson_ucb":
        return (f"Wilson upper bound on c (z={settings.ucb_z:g}) <= -{settings.retire_tau:g} "
                f"after >= {settings.ucb_min_trials} trials")
    return f"c <= -{settings.retire_tau:g} after >= {settings.min_trials} trials"


def retirement_floor(settings: CuratorSettings) -> int:
    """The trials a skill needs before the retirement rule may retire it."""
    return settings.ucb_min_trials if settings.retire_rule == "wilson_ucb" else settings.min_trials


def meets_retirement_bar(stats: SkillStats, settings: CuratorSettings) -> bool:
    """The retirement rule, ignoring ``do_not_retire`` (``curate`` applies it)."""
    if stats.trials < retirement_floor(settings) or stats.trials == 0:
        return False
    if settings.retire_rule == "wilson_ucb":
        return wilson_upper_contribution(stats, settings.ucb_z) <= -settings.retire_tau
    score = Fraction(stats.successes - stats.failures, stats.trials)
    return score <= -exact(settings.retire_tau)


def tampering_reason(record: TamperingStats) -> str:
    """The retirement reason of the tampering rule; starts with ``tampering:``."""
    times = "attempt was" if record.capsules == 1 else "attempts were"
    return (f"{TAMPERING_REASON}: {record.capsules} routed train {times} graded as tampering "
            f"(first in round {record.first_round}: {record.first_status}, capsule "
            f"{record.first_capsule})")


def _proof_retires(skill: Skill, settings: CuratorSettings) -> bool:
    """Whether proof of misconduct retires ``skill``: a routable one (ACTIVE or CANDIDATE); a
    ``do_not_retire`` one only with ``curator.tampering_overrides_do_not_retire``."""
    return skill.status in (SkillStatus.ACTIVE, SkillStatus.CANDIDATE) and (
        not skill.do_not_retire or settings.tampering_overrides_do_not_retire)


def tampering_retires(skill: Skill, record: TamperingStats | None,
                      settings: CuratorSettings) -> bool:
    """Whether the tampering rule retires ``skill`` now (see module contract)."""
    return (settings.retire_on_tampering and record is not None and record.capsules > 0
            and _proof_retires(skill, settings))


def _proven_misconduct(skill: Skill, retires: bool, finding: str,
                       stats: SkillStats) -> tuple[Action, str]:
    """``(action, reason)`` for a skill with behavioural proof against it (tampering, a passed
    impossible twin): retired, or ``exempt`` when ``do_not_retire`` holds without the override."""
    score = f"c={stats.contribution:+.3f} over {stats.trials} trials"
    if retires:
        overridden = ("; do_not_retire overridden (curator.tampering_overrides_do_not_retire)"
                      if skill.do_not_retire else "")
        return "retire", f"{finding}; {score}{overridden}"
    return "exempt", (f"do_not_retire; {score}; would be retired for {finding} "
                      "(set curator.tampering_overrides_do_not_retire to retire it)")


def _decide(skill: Skill, stats: SkillStats, settings: CuratorSettings,
            record: TamperingStats | None = None) -> CurationDecision:
    if settings.retire_on_tampering and record is not None and record.capsules > 0:
        action, reason = _proven_misconduct(skill, tampering_retires(skill, record, settings),
                                            tampering_reason(record), stats)
        return CurationDecision.of(skill.id, stats, action, reason, record.capsules)
    bar = _bar(settings)
    score = f"c={stats.contribution:+.3f} over {stats.trials} trials"
    if settings.retire_rule == "wilson_ucb" and stats.trials:
        score += f" (upper bound {wilson_upper_contribution(stats, settings.ucb_z):+.3f})"
    would_retire = meets_retirement_bar(stats, settings)
    if skill.do_not_retire:
        action: Action = "exempt"
        reason = f"do_not_retire; {score}" + (f"; would be retired ({bar})" if would_retire else "")
    elif would_retire:
        action, reason = "retire", f"{score} meets {bar}"
    elif stats.trials < retirement_floor(settings):
        action, reason = "insufficient", f"{score}; needs {retirement_floor(settings)} trials"
    else:
        action, reason = "keep", f"{score} above the bar ({bar})"
    return CurationDecision.of(skill.id, stats, action, reason,
                               record.capsules if record is not None else 0)


def curate(skills: Iterable[Skill], stats: Mapping[str, SkillStats],
           settings: CuratorSettings,
           tampering: Mapping[str, TamperingStats] | None = None,
           cheats: Mapping[str, CheatStats] | None = None) -> list[CurationDecision]:
    """One decision per ACTIVE skill, and per CANDIDATE the tampering rule retires, sorted by id;
    ``cheats`` (``governance.cheat_probe``) applies the cheat rule on top (module contract)."""
    skills = list(skills)
    tampering = tampering or {}
    chosen = [s for s in skills if s.is_active or (
        s.status is SkillStatus.CANDIDATE and tampering_retires(s, tampering.get(s.id), settings))]
    decisions = [_decide(s, stats.get(s.id, EMPTY_STATS), settings, tampering.get(s.id))
                 for s in sorted(chosen, key=lambda s: s.id)]
    return apply_cheat_rule(decisions, skills, stats, settings, cheats or {})


# ---- the cheat rule (impossible twins, governance.cheat_probe) --------------------------------
def cheat_retires(skill: Skill, record: CheatStats | None, settings: CuratorSettings) -> bool:
    """Whether the cheat rule retires ``skill`` now: a passed twin, and ``_proof_retires``."""
    return record is not None and record.passes > 0 and _proof_retires(skill, settings)


def apply_cheat_rule(decisions: list[CurationDecision], skills: Iterable[Skill],
                     stats: Mapping[str, SkillStats], settings: CuratorSettings,
                     cheats: Mapping[str, CheatStats]) -> list[CurationDecision]:
    """``decisions`` with the cheat rule applied, sorted by id (module contract); a retirement for
    tampering stays as it is."""
    by_id = {d.skill_id: d for d in decisions}
    for skill in skills:
        record = cheats.get(skill.id)
        if record is None or record.passes <= 0 or skill.status is SkillStatus.DEPRECATED:
            continue
        current = by_id.get(skill.id)
        if current is not None and current.for_tampering:
            continue
        if current is None and not cheat_retires(skill, record, settings):
            continue  # a CANDIDATE this rule does not retire keeps having no decision
        s = stats.get(skill.id, EMPTY_STATS)
        action, reason = _proven_misconduct(skill, cheat_retires(skill, record, settings),
                                            cheat_reason(record), s)
        by_id[skill.id] = CurationDecision.of(skill.id, s, action, reason,
                                              current.tampering if current is not None else 0)
    return [by_id[k] for k in sorted(by_id)]
