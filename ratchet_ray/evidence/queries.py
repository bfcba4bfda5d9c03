"""Read-side helpers over the DuckDB views of ``EvidenceStore.connect()``.

Contracts:
- ``skill_stats(con, split)`` counts, per skill id, the capsules of ``split`` routed to that skill
  (the NONE route excluded). Skill ids are never reused, so "since it was added" is every capsule
  carrying the id. Infrastructure failures are excluded: they say nothing about the skill (they
  still count in pass@1, see ``pass_at_1_by_round``), and so are impossible twins (a twin's
  failure is expected, ``governance.cheat_probe``). The writer guarantees one row per capsule id
  (a resumed run skips ids in ``EvidenceStore.capsule_ids``), so rows are counted as they are.
- ``recent_verdicts(con, current_round, window)`` returns the verdicts of rounds
  ``current_round - window + 1 .. current_round`` in a stable order (round, created_at, capsule).
- ``pass_at_1_by_round(con)`` gives one dict per (round, split) with infra failures in the
  denominator.
- Tampering (``evidence.tampering``: capsules whose exit status is in
  ``TAMPERING_STATUSES``; infrastructure failures never count, nor impossible twins, which
  grade an attempt that has its own capsule again): ``tampering_by_skill(con,
  split)`` -> ``{skill_id: TamperingStats}`` over the capsules of ``split`` routed to a skill
  (NONE excluded); ``tampering_capsules(con)`` lists every such capsule, any split or route,
  in (round, split, task, capsule) order; ``tampering_totals(con)`` counts them per split and
  counts the skills the Curator retired for tampering (``skill_event`` reason
  ``tampering: ...``). Suspicion is not proof: ``tampering_by_skill`` (what the Curator retires
  on) leaves out capsules of older runs whose only finding was the static screen
  (``tampering.SCREEN_ONLY_TRACE``); ``suspicious_capsules(con)`` lists the capsules whose trace
  records a screen's suspicion (``tampering.SUSPICION_PREFIX``), whatever their status.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

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

SKILL_STATS_SQL = """
SELECT skill_id, count(*) AS trials, count_if(passed) AS successes
FROM capsule
WHERE split = ? AND skill_id <> ? AND NOT coalesce(infra_failure, false)
  AND NOT coalesce(impossible, false)
GROUP BY skill_id
"""


def skill_stats(con: duckdb.DuckDBPyConnection, split: str = "train") -> dict[str, SkillStats]:
    """Per-skill contribution over the ``split`` capsules routed to each skill."""
    rows = con.execute(SKILL_STATS_SQL, [split, NONE_SKILL]).fetchall()
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


TAMPERING_BY_SKILL_SQL = """
WITH hit AS (
  SELECT skill_id, round, capsule_id, exit_status,
         row_number() OVER (PARTITION BY skill_id ORDER BY round, created_at, capsule_id) AS nth
  FROM capsule
  WHERE split = ? AND skill_id <> ? AND list_contains(?, exit_status)
    AND NOT coalesce(infra_failure, false)
    AND NOT coalesce(impossible, false)
    AND NOT contains(coalesce(grader_trace, ''), ?))
SELECT skill_id, count(*) AS capsules, min(round) AS first_round, max(round) AS last_round,
       max(capsule_id) FILTER (WHERE nth = 1) AS first_capsule,
       max(exit_status) FILTER (WHERE nth = 1) AS first_status
FROM hit
GROUP BY skill_id
"""

TAMPERING_CAPSULES_SQL = """
SELECT round, split, task_id, skill_id, exit_status, coalesce(attempt, 0) AS attempt,
       capsule_id, grader_trace
FROM capsule
WHERE list_contains(?, exit_status) AND NOT coalesce(infra_failure, false)
  AND NOT coalesce(impossible, false)
ORDER BY round, split, task_id, capsule_id
"""

TAMPERING_TOTALS_SQL = """
SELECT count(*) FILTER (WHERE split = 'train') AS train_tampering,
       count(*) FILTER (WHERE split = 'eval') AS eval_tampering
FROM capsule
WHERE list_contains(?, exit_status) AND NOT coalesce(infra_failure, false)
  AND NOT coalesce(impossible, false)
"""

SUSPICIOUS_CAPSULES_SQL = """
SELECT round, split, task_id, skill_id, exit_status, coalesce(attempt, 0) AS attempt,
       capsule_id, grader_trace
FROM capsule
WHERE grader_trace LIKE ? AND NOT coalesce(impossible, false)
ORDER BY round, split, task_id, capsule_id
"""

TAMPERING_RETIRED_SQL = """
SELECT count(DISTINCT skill_id) FROM skill_event
WHERE event = 'retired' AND starts_with(coalesce(reason, ''), ?)
"""


_STATUSES = sorted(TAMPERING_STATUSES)  # a DuckDB list parameter


def tampering_by_skill(con: duckdb.DuckDBPyConnection, split: str = "train"
                       ) -> dict[str, TamperingStats]:
    """Per skill, its routed ``split`` capsules graded as tampering (see module contracts)."""
    rows = con.execute(TAMPERING_BY_SKILL_SQL, [split, NONE_SKILL, _STATUSES,
                                                SCREEN_ONLY_TRACE]).fetchall()
    return {skill_id: TamperingStats(capsules=int(n), first_round=int(first), last_round=int(last),
                                     first_capsule=str(capsule), first_status=str(status))
            for skill_id, n, first, last, capsule, status in rows}


def tampering_capsules(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every capsule graded as tampering, with its route and the grader's trace."""
    return _rows_as_dicts(con.execute(TAMPERING_CAPSULES_SQL, [_STATUSES]))


def suspicious_capsules(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every capsule whose trace records a static screen's suspicion (never a verdict), with
    its route, status and trace."""
    return _rows_as_dicts(con.execute(SUSPICIOUS_CAPSULES_SQL, [SUSPICION_LIKE]))


def tampering_totals(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """``train_tampering`` / ``eval_tampering`` capsules and ``skills_retired_tampering``."""
    train, eval_ = con.execute(TAMPERING_TOTALS_SQL, [_STATUSES]).fetchone()
    return {"train_tampering": int(train or 0), "eval_tampering": int(eval_ or 0),
            "skills_retired_tampering": skills_retired_with(con, f"{TAMPERING_REASON}:")}


def skills_retired_with(con: duckdb.DuckDBPyConnection, prefix: str) -> int:
    """How many skills were retired with a reason starting ``prefix`` (``cheat:``...)."""
    (retired,) = con.execute(TAMPERING_RETIRED_SQL, [prefix]).fetchone()
    return int(retired or 0)


def _rows_as_dicts(relation: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in relation.description]
    return [dict(zip(names, row)) for row in relation.fetchall()]


def recent_verdicts(con: duckdb.DuckDBPyConnection, current_round: int, window: int) -> list[Verdict]:
    """Verdicts of the last ``window`` rounds up to and including ``current_round``."""
    if window <= 0:
        raise ValueError(f"window must be a positive number of rounds, got {window}")
    cursor = con.execute(
        "SELECT * FROM verdict WHERE round > ? AND round <= ? ORDER BY round, created_at, capsule_id",
        [current_round - window, current_round])
    verdicts = []
    for row in _rows_as_dicts(cursor):
        verdicts.append(Verdict(**{k: v for k, v in row.items() if v is not None}))
    return verdicts


def pass_at_1_by_round(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """One dict per (round, split): total, resolved, infra_failures, pass_at_1."""
    cursor = con.execute(
        "SELECT round, split, count(*) AS total, count_if(passed) AS resolved, "
        "count_if(coalesce(infra_failure, false)) AS infra_failures "
        "FROM capsule GROUP BY round, split ORDER BY round, split")
    out = []
    for row in _rows_as_dicts(cursor):
        row["pass_at_1"] = row["resolved"] / row["total"] if row["total"] else 0.0
        out.append(row)
    return out


def recent_skill_events(con: duckdb.DuckDBPyConnection, limit: int = 20) -> list[dict[str, Any]]:
    """The latest ``limit`` skill events, newest first (the ``audit`` command)."""
    cursor = con.execute(
        "SELECT round, skill_id, event, status_after, contribution, trials, reason, created_at "
        "FROM skill_event ORDER BY created_at DESC, round DESC LIMIT ?", [limit])
    return _rows_as_dicts(cursor)


def failed_llm_calls(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Failed LLM calls per role (the ``audit`` command's outage summary): how many, over which
    rounds, and the latest error. A router outage shows here, not as a silent NONE route."""
    cursor = con.execute(
        "SELECT role, count(*) AS failed, min(round) AS first_round, max(round) AS last_round, "
        "arg_max(error, round) AS last_error FROM llm_call WHERE NOT ok "
        "GROUP BY role ORDER BY failed DESC, role")
    return _rows_as_dicts(cursor)


def registered_skill_ids(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Ids that entered the bank through the SkillBank (any skill event except a rejection)."""
    rows = con.execute("SELECT DISTINCT skill_id FROM skill_event WHERE event <> 'rejected'").fetchall()
    return {row[0] for row in rows}
