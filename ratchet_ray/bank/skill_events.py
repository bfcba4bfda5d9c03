"""What the SkillBank returns and records: ``AddResult``, ``BankError`` and the skill-event log.

``EventLog.flush`` writes the buffered ``skill_event`` rows as one evidence part per round, so a
multi-skill change (curate, restore) is one atomic write; while ``held`` (a batch is open) it
keeps buffering. Events: added, rejected, evicted, retired, refined, reinstated, restored,
loaded, meta_added, meta_retired, meta_restored.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.queries import SkillStats, registered_skill_ids
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.types import SkillStatus

# "leakage": refused before the bank by the leakage guard (synthesis.leak_sources.guarded_adder).
AddStatus = Literal["added", "duplicate", "too_long", "cap_full", "invalid", "leakage"]


class BankError(ValueError):
    """A bank operation is not allowed; the message says why and what to do instead."""


@dataclass(frozen=True)
class AddResult:
    """Outcome of ``SkillBank.add`` (also ``reinstate`` / ``load``): ``duplicate_of`` names the
    skill a ``duplicate`` collides with (for the re-prompt); ``evicted``: deprecated for room."""

    status: AddStatus
    skill_id: str
    duplicate_of: str | None = None
    evicted: list[str] = field(default_factory=list)
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "added"


class EventLog:
    """Buffered writer of ``skill_event`` rows for one run."""

    def __init__(self, run_dir: Path, run_id: str):
        self.store = EvidenceStore(run_dir, cached=True)  # the bank reads it every round
        self.run_id = run_id
        self._pending: list[dict] = []
        self.held = False  # a batch is open (``SkillBank.begin_batch``): flush waits for its commit

    def emit_raw(self, round_: int, skill_id: str, event: str, status_after: SkillStatus | None,
                 contribution: float | None, trials: int | None, reason: str,
                 sources: int | None = None) -> None:
        """Buffer one row; ``sources``: the failure verdicts a synthesized skill was drafted
        from (an ``added`` event's; None otherwise or when unknown)."""
        self._pending.append({
            "run_id": self.run_id, "round": round_, "skill_id": skill_id, "event": event,
            "status_after": status_after.value if status_after is not None else "",
            "contribution": contribution, "trials": trials, "reason": reason,
            "created_at": time.time(), "sources": sources,
        })

    def emit(self, round_: int, skill_id: str, event: str, status_after: SkillStatus | None,
             stats: SkillStats | None, reason: str, sources: int | None = None) -> None:
        self.emit_raw(round_, skill_id, event, status_after,
                      stats.contribution if stats else None, stats.trials if stats else None,
                      reason, sources)

    def flush(self) -> None:
        if self.held:
            return
        pending, self._pending = self._pending, []
        for r in sorted({row["round"] for row in pending}):
            self.store.append("skill_event", r, [row for row in pending if row["round"] == r])

    def pending_keys(self) -> list[list]:
        """``[skill_id, created_at]`` of every buffered row (they identify them once written)."""
        return [[row["skill_id"], row["created_at"]] for row in self._pending]

    def discard(self) -> None:
        self._pending = []

    def recorded_keys(self) -> set[tuple[str, float]]:
        """``(skill_id, created_at)`` of every written row."""
        if not self.store.part_paths("skill_event"):
            return set()
        with self.store.connect() as con:
            return set(nq.fetch_all(con, "skill_event_keys"))

    def registered_ids(self) -> set[str]:
        """Ids that entered the bank through the SkillBank (any event except a rejection)."""
        with self.store.connect() as con:
            return registered_skill_ids(con)
