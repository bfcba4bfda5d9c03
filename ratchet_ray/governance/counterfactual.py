"""Counterfactual contribution of each skill from the probes of ``curator.counterfactual``.

Contracts:
- A probe is a train capsule with ``attempt >= 1`` routed to NONE: the same task of the same
  round, attempted again without the skill its first attempt (``attempt == 0``) was routed to.
- ``probe_selected(seed, round_, task_id, fraction)``: whether that routed train task gets a probe;
  a pure function of the run seed, the round and the task, so a resumed run probes the same ones.
- ``counterfactual_stats(con)`` -> ``{skill_id: SkillStats}`` over the probed pairs (infra
  failures on either side dropped): ``trials`` = pairs, ``successes`` = pairs the skill passed and
  NONE failed, ``failures`` = pairs NONE passed and the skill failed, so
  ``(successes - failures) / trials`` = pass(skill) - pass(NONE) on the same tasks = c_cf, and the
  Curator's rule (``governance.curator``) applies to it unchanged.
"""

from __future__ import annotations

import duckdb

from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.queries import SkillStats
from ratchet_ray.seeding import derive_seed
from ratchet_ray.types import NONE_SKILL

PROBE_ATTEMPT = 1

def probe_selected(seed: int, round_: int, task_id: str, fraction: float) -> bool:
    if fraction <= 0.0:
        return False
    return derive_seed(seed, round_, task_id, "counterfactual-probe") < fraction * 2**31


def counterfactual_stats(con: duckdb.DuckDBPyConnection) -> dict[str, SkillStats]:
    """c_cf per probed skill (see module contract)."""
    rows = nq.fetch_all(con, "counterfactual_pairs", none=NONE_SKILL)
    return {skill_id: SkillStats(trials=int(pairs), successes=int(wins), failures=int(losses),
                                 contribution=(int(wins) - int(losses)) / int(pairs))
            for skill_id, pairs, wins, losses in rows}
