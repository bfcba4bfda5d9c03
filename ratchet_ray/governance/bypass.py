"""Silent bypass and cost per skill, read from a run's evidence.

Contracts:
- Dead weight (``dead_weight``): a skill ACTIVE now whose latest activation (the last event
  leaving it ``active``) was in round ``a``, with no capsule routed to it after ``a`` (a skill
  added in round ``a``'s synthesis is routable from ``a + 1``), while the evidence reaches round
  ``a + k`` (``k`` = ``curator.dead_weight_rounds``): ``k`` full rounds and never routed.
- Routed but ignored (``ignored_skills``): on the counterfactual probe pairs
  (``governance.counterfactual``), the Solver's two outputs are compared by ``similarity``
  (difflib's ratio on whitespace-collapsed text, 1.0 = identical); a skill is *ignored* when at
  least ``share`` of its (at least ``min_pairs``) pairs reach ``near``: the guidance did not
  change what the Solver wrote. Sampling at temperature > 0 makes outputs differ anyway, so this
  under-reports there.
- Cost (``skill_costs``): the tokens a skill adds to the Solver's prompt per routing
  (``guidance_text()`` at ~4 characters a token, the rate limiter's estimate) times its routed
  capsules per split; ``gain_per_1k`` = its net train balance (successes - failures, of c-hat or
  c_cf as the caller's stats say) per 1,000 train prompt tokens (None before its first).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import duckdb

from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.queries import EMPTY_STATS, SkillStats
from ratchet_ray.types import NONE_SKILL, Skill, SkillStatus

CHARS_PER_TOKEN = 4
NEAR_IDENTICAL = 0.95
IGNORED_SHARE = 0.8
MIN_PAIRS = 3


@dataclass(frozen=True)
class DeadWeight:
    skill_id: str
    active_since: int
    rounds_unrouted: int


@dataclass(frozen=True)
class IgnoredStats:
    skill_id: str
    pairs: int
    near_identical: int
    mean_similarity: float
    ignored: bool


def similarity(a: str, b: str) -> float:
    """difflib ratio of the two texts, whitespace runs collapsed (module contract)."""
    x, y = (re.sub(r"\s+", " ", t or "").strip() for t in (a, b))
    return difflib.SequenceMatcher(None, x, y, autojunk=False).ratio()


def last_round(con: duckdb.DuckDBPyConnection) -> int | None:
    value = nq.fetch_one(con, "last_round")[0]
    return None if value is None else int(value)


def activity(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, int], dict[str, int]]:
    """``({skill: the last round an event made it active}, {skill: capsules routed to it
    after that round})``."""
    since = {s: int(r) for s, r in nq.fetch_all(con, "activation_rounds")}
    routed = {s: int(n) for s, n in nq.fetch_all(con, "routings_since_activation")}
    return since, routed


def dead_weight(con: duckdb.DuckDBPyConnection, skills: Iterable[Skill], k: int,
                current_round: int | None = None) -> dict[str, DeadWeight]:
    """The ACTIVE skills that are dead weight at ``current_round`` (default: the last), by id."""
    if k < 1:
        raise ValueError(f"dead-weight rounds k={k}: use 1 or more (curator.dead_weight_rounds)")
    now = last_round(con) if current_round is None else current_round
    if now is None:
        return {}
    since, routed = activity(con)
    out = {}
    for skill in skills:
        if skill.status is not SkillStatus.ACTIVE or skill.id not in since:
            continue
        idle = now - since[skill.id]
        if idle >= k and routed.get(skill.id, 0) == 0:
            out[skill.id] = DeadWeight(skill.id, since[skill.id], idle)
    return out


def ignored_skills(con: duckdb.DuckDBPyConnection, *, near: float = NEAR_IDENTICAL,
                   share: float = IGNORED_SHARE, min_pairs: int = MIN_PAIRS
                   ) -> dict[str, IgnoredStats]:
    """Per probed skill, how often its probe pair's outputs are near-identical (contract)."""
    pairs: dict[str, list[float]] = {}
    for skill_id, with_skill, without in nq.fetch_all(con, "probe_outputs", none=NONE_SKILL):
        pairs.setdefault(skill_id, []).append(similarity(with_skill, without))
    out = {}
    for skill_id, sims in pairs.items():
        close = sum(s >= near for s in sims)
        out[skill_id] = IgnoredStats(skill_id, len(sims), close, sum(sims) / len(sims),
                                     len(sims) >= min_pairs and close >= share * len(sims))
    return out


def guidance_tokens(skill: Skill) -> int:
    """Tokens the skill's rendered guidance adds to one Solver prompt (estimate)."""
    return -(-len(skill.guidance_text()) // CHARS_PER_TOKEN)


def skill_costs(con: duckdb.DuckDBPyConnection, skills: Iterable[Skill],
                stats: Mapping[str, SkillStats]) -> list[dict[str, Any]]:
    """One row per skill: prompt tokens per routing, routings and tokens per split, c-hat and
    its gain per 1k train tokens (module contract), sorted by id."""
    routings: dict[str, dict[str, int]] = {}
    for skill_id, split, n in nq.fetch_all(con, "routings_by_skill_split", none=NONE_SKILL):
        routings.setdefault(skill_id, {})[split] = int(n)
    rows = []
    for skill in sorted(skills, key=lambda s: s.id):
        per = guidance_tokens(skill)
        r = routings.get(skill.id, {})
        train_tokens = per * r.get("train", 0)
        st = stats.get(skill.id, EMPTY_STATS)
        rows.append({"skill_id": skill.id, "status": skill.status.value,
                     "tokens_per_routing": per, "train_routings": r.get("train", 0),
                     "eval_routings": r.get("eval", 0), "train_tokens": train_tokens,
                     "eval_tokens": per * r.get("eval", 0),
                     "contribution": round(st.contribution, 4), "trials": st.trials,
                     "gain_per_1k": (round(1000 * (st.successes - st.failures) / train_tokens, 6)
                                     if train_tokens else None)})
    return rows
