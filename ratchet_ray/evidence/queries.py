"""Typed helpers over named evidence queries (``evidence.named_queries`` holds their SQL).

Contracts:
- ``skill_stats(con, split)`` counts, per skill id, the capsules of ``split`` routed to it (NONE
  excluded); ids are never reused, so that is every capsule since it was added. Infrastructure
  failures (they still count in pass@1) and impossible twins (``governance.cheat_probe``) say
  nothing about the skill and are excluded. The writer keeps one row per capsule id, so rows are
  counted as they are.
- Tampering (``evidence.tampering``) never counts infrastructure failures, nor impossible twins
  (whose attempt has its own capsule); ``tampering_by_skill``, what the Curator retires on, also
  leaves out older runs' capsules whose only finding was the static screen
  (``tampering.SCREEN_ONLY_TRACE``): suspicion is not proof.
- ``skill_fates`` gives each skill's status changes from the bank's own ``skill_event`` rows, in
  the order it logged them: a skill's last change IS its live status.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.tampering import (
    SCREEN_ONLY_TRACE, SUSPICION_LIKE, TAMPERING_REASON, TAMPERING_STATUSES)
from ratchet_ray.types import NONE_SKILL, Verdict


@dataclass(frozen=True)
class SkillStats:
    """Outcome balance of one skill on its routed capsules: c = (successes - failures) / trials."""

    trials: int
    successes: int
    failures: int
    contribution: float

    @classmethod
    def from_counts(cls, successes: int, failures: int) -> "SkillStats":
        trials = successes + failures
        # One correctly rounded division of exact integers: a score of exactly -1/10 becomes the
        # same double as the literal -0.10.
        score = (successes - failures) / trials if trials else 0.0
        return cls(trials=trials, successes=successes, failures=failures, contribution=score)


EMPTY_STATS = SkillStats(trials=0, successes=0, failures=0, contribution=0.0)


def skill_stats(con: duckdb.DuckDBPyConnection, split: str = "train") -> dict[str, SkillStats]:
    """Per-skill contribution over the ``split`` capsules routed to each skill."""
    rows = nq.fetch_all(con, "skill_stats", split=split, none=NONE_SKILL)
    return {skill_id: SkillStats.from_counts(int(ok), int(trials) - int(ok))
            for skill_id, trials, ok in rows}


@dataclass(frozen=True)
class TamperingStats:
    """The tampering record of one skill: how many of its routed capsules were graded as an
    attack on the grader, the first and last round it happened, and the first such capsule."""

    capsules: int
    first_round: int
    last_round: int
    first_capsule: str
    first_status: str


_STATUSES = sorted(TAMPERING_STATUSES)  # a DuckDB list parameter


def tampering_by_skill(con: duckdb.DuckDBPyConnection, split: str = "train"
                       ) -> dict[str, TamperingStats]:
    """Per skill, its routed ``split`` capsules graded as tampering (module contracts)."""
    rows = nq.fetch_all(con, "tampering_by_skill", split=split, none=NONE_SKILL,
                        statuses=_STATUSES, screen_only=SCREEN_ONLY_TRACE)
    return {skill_id: TamperingStats(capsules=int(n), first_round=int(first), last_round=int(last),
                                     first_capsule=str(capsule), first_status=str(status))
            for skill_id, n, first, last, capsule, status in rows}


def tampering_capsules(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every capsule graded as tampering, with its route and the grader's trace, in (round,
    split, task, capsule) order."""
    return nq.fetch_dicts(con, "tampering_capsules", statuses=_STATUSES)


def suspicious_capsules(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every capsule whose trace records a static screen's suspicion (never a verdict)."""
    return nq.fetch_dicts(con, "suspicious_capsules", pattern=SUSPICION_LIKE)


def tampering_totals(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """``train_tampering`` / ``eval_tampering`` capsules and ``skills_retired_tampering``."""
    train, eval_ = nq.fetch_one(con, "tampering_totals", statuses=_STATUSES)
    return {"train_tampering": int(train or 0), "eval_tampering": int(eval_ or 0),
            "skills_retired_tampering": skills_retired_with(con, f"{TAMPERING_REASON}:")}


def skills_retired_with(con: duckdb.DuckDBPyConnection, prefix: str) -> int:
    """How many skills were retired with a reason starting ``prefix`` (``cheat:``...)."""
    (retired,) = nq.fetch_one(con, "skills_retired_with", prefix=prefix)
    return int(retired or 0)


def recent_verdicts(con: duckdb.DuckDBPyConnection, current_round: int, window: int) -> list[Verdict]:
    """Verdicts of the last ``window`` rounds up to and including ``current_round``, ordered by
    round, created_at, capsule."""
    if window <= 0:
        raise ValueError(f"window must be a positive number of rounds, got {window}")
    rows = nq.fetch_dicts(con, "verdicts_between", after=current_round - window,
                          last=current_round)
    return [Verdict(**{k: v for k, v in row.items() if v is not None}) for row in rows]


def registered_skill_ids(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Ids that entered the bank through the SkillBank (any skill event except a rejection)."""
    return {row[0] for row in nq.fetch_all(con, "registered_skill_ids")}


STATUS_EVENTS = ("added", "loaded", "retired", "evicted", "refined", "reinstated", "restored")
"""The skill events that set a skill's status (``status_after``); the others (``rejected``,
``meta_*``) never change a skill's status."""
DEPRECATION_CAUSES = {"retired": "retired", "evicted": "evicted", "refined": "refined",
                      "restored": "rollback"}


@dataclass(frozen=True)
class SkillFate:
    """Every status change of one skill, in the order the bank logged them."""

    skill_id: str
    changes: tuple[tuple[int, str, str], ...]
    """``(round, event, status_after)`` per change."""

    @property
    def created(self) -> bool:
        """Written by the Synthesizer (an ``added`` event), not loaded from a user's bank."""
        return any(event == "added" for _, event, _ in self.changes)

    @property
    def status(self) -> str:
        """The skill's status now: the last change's ``status_after``."""
        return self.changes[-1][2]

    @property
    def cause(self) -> str | None:
        """What deprecated it last (retired / evicted / refined / rollback); None when it is not
        deprecated."""
        if self.status != "deprecated":
            return None
        return DEPRECATION_CAUSES.get(self.changes[-1][1], self.changes[-1][1])

    def first(self, event: str, status: str | None = None) -> int | None:
        """Round of the first ``event`` (with that ``status_after`` when given), else None."""
        return next((r for r, e, s in self.changes
                     if e == event and (status is None or s == status)), None)


def skill_fates(con) -> dict[str, SkillFate]:
    """Every skill's status changes from the bank's own ``skill_event`` rows (module contract)."""
    rows = nq.fetch_all(con, "skill_status_changes", events=list(STATUS_EVENTS))
    changes: dict[str, list[tuple[int, str, str]]] = {}
    for skill_id, round_, event, status in rows:
        changes.setdefault(skill_id, []).append((int(round_), event, status))
    return {k: SkillFate(k, tuple(v)) for k, v in sorted(changes.items())}
