"""Counterfactual contribution of each skill from the probes of ``curator.counterfactual``.

A probe is a train capsule with ``attempt >= 1`` routed to NONE: the same task and round
attempted again without the skill its first attempt was routed to. ``probe_selected`` is a pure
function of run seed, round and task, so a resumed run probes the same ones.
``counterfactual_stats`` counts, over the probed pairs (infra failures on either side dropped),
``trials`` = pairs, ``successes`` = skill passed and NONE failed, ``failures`` = the reverse, so
``(successes - failures) / trials`` = pass(skill) - pass(NONE) on the same tasks = c_cf, to which
the Curator's rule applies unchanged.
"""

from __future__ import annotations

import duckdb

from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.queries import SkillStats
from ratchet_ray.seeding import derive_seed
from ratchet_ray.types import NONE_SKILL

PROBE_ATTEMPT = 1


def probe_selected(seed: int, round_: int, task_id: str, fraction: float) -> bool:
    return fraction > 0.0 and (
        derive_seed(seed, round_, task_id, "counterfactual-probe") < fraction * 2**31)


def counterfactual_stats(con: duckdb.DuckDBPyConnection) -> dict[str, SkillStats]:
    """c_cf per probed skill (see module contract)."""
    rows = nq.fetch_all(con, "counterfactual_pairs", none=NONE_SKILL)
    return {skill_id: SkillStats(trials=int(pairs), successes=int(wins), failures=int(losses),
                                 contribution=(int(wins) - int(losses)) / int(pairs))
            for skill_id, pairs, wins, losses in rows}
