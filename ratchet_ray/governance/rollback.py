"""The persistence-gated rollback (the paper's step 7; docs/architecture.md, the loop's phases).

Contracts:
- A round *regresses* when its eval pass@1 is more than ``threshold`` below the best pass@1 of
  any earlier round (or this one); differences within ``TOLERANCE`` of the threshold count as
  at it (no regression), so float noise (0.4 - 0.3 = 0.10000000000000003) flips nothing.
- ``observe`` fires on the ``consecutive``-th regressed round in a row, with ``restore_round`` =
  the best round. Firing, or any non-regressed round, resets the streak, so 5 regressions in a
  row fire once. A disabled gate tracks the same state but never fires.
- The gate is a pure function of its observation history: ``RollbackGate.from_history`` replays
  it (for resume) into the same state.
- ``restored``: each skill's copy in the snapshot, DEPRECATED when born later, and DEPRECATED
  whatever the snapshot says when the Curator's tampering or cheat rule retires it: a rollback
  never brings back a skill that tampered or cheated.

Example::

    gate = RollbackGate(threshold=0.10, consecutive=5)
    for round_, p in enumerate([0.5, 0.3, 0.3, 0.3, 0.3, 0.3]):
        decision = gate.observe(round_, p)
    assert decision.fire and decision.restore_round == 0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from ratchet_ray.evidence.queries import TamperingStats
from ratchet_ray.governance.cheat_probe import CheatStats
from ratchet_ray.governance.curator import cheat_retires, tampering_retires
from ratchet_ray.settings.schema import CuratorSettings
from ratchet_ray.types import Skill, SkillStatus

TOLERANCE = 1e-9


@dataclass(frozen=True)
class RollbackDecision:
    fire: bool
    restore_round: int | None
    regressed_streak: int
    regressed: bool = False
    best_round: int | None = None
    best_pass_at_1: float | None = None


class RollbackGate:
    """Counts consecutive regressed rounds and fires once the streak reaches ``consecutive``."""

    def __init__(self, threshold: float, consecutive: int, enabled: bool = True):
        if consecutive < 1:
            raise ValueError(f"consecutive must be >= 1, got {consecutive}")
        if threshold < 0:
            raise ValueError(f"threshold must be >= 0, got {threshold}")
        self.threshold = threshold
        self.consecutive = consecutive
        self.enabled = enabled
        self.best_round: int | None = None
        self.best_pass_at_1: float | None = None
        self.streak = 0
        self.last_round: int | None = None

    @classmethod
    def from_history(cls, history: Iterable[tuple[int, float]], threshold: float,
                     consecutive: int, enabled: bool = True) -> "RollbackGate":
        """Rebuild the gate by replaying ``(round, eval pass@1)`` pairs in round order."""
        gate = cls(threshold, consecutive, enabled)
        for round_, pass_at_1 in sorted(history):
            gate.observe(round_, pass_at_1)
        return gate

    def observe(self, round_: int, pass_at_1: float) -> RollbackDecision:
        """Record one round's eval pass@1 and say whether to restore the best round's bank."""
        if not 0.0 <= pass_at_1 <= 1.0:
            raise ValueError(f"pass@1 must lie in [0, 1], got {pass_at_1} for round {round_}")
        if self.last_round is not None and round_ <= self.last_round:
            raise ValueError(f"rounds must be observed in increasing order: {round_} after {self.last_round}")
        self.last_round = round_
        if self.best_pass_at_1 is None or pass_at_1 > self.best_pass_at_1:
            self.best_round, self.best_pass_at_1 = round_, pass_at_1
        regressed = self.best_pass_at_1 - pass_at_1 > self.threshold + TOLERANCE
        self.streak = self.streak + 1 if regressed else 0
        fire = regressed and self.streak >= self.consecutive and self.enabled
        streak_seen = self.streak
        if fire or self.streak >= self.consecutive:
            self.streak = 0
        return RollbackDecision(fire=fire, restore_round=self.best_round if fire else None,
                                regressed_streak=streak_seen, regressed=regressed,
                                best_round=self.best_round, best_pass_at_1=self.best_pass_at_1)


def restored(current: Mapping[str, Skill], snapshot: Iterable[Skill],
             tampered: Mapping[str, TamperingStats], cheated: Mapping[str, CheatStats],
             settings: CuratorSettings) -> dict[str, Skill]:
    """``{skill id: what a restore brings back}`` for every skill of bank or snapshot, by id."""
    wanted = {s.id: s for s in snapshot}
    out = {}
    for skill_id in sorted(set(current) | set(wanted)):
        target = wanted.get(skill_id) or current[skill_id].model_copy(
            update={"status": SkillStatus.DEPRECATED})
        if (tampering_retires(target, tampered.get(skill_id), settings)
                or cheat_retires(target, cheated.get(skill_id), settings)):
            target = target.model_copy(update={"status": SkillStatus.DEPRECATED})
        out[skill_id] = target
    return out
