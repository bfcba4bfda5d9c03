"""The contract line of the built-in evaluator ``ratchet experiment eval-skill-loop``: turns the
per-seed runs' ``loop.json`` rows into it, so the yardstick is one small, testable function.

Contracts:
- ``scalar``: the mean over seeds of the rolling gain (``metrics.loop_metrics``) or the final
  eval pass@1; the per-seed values go to ``metrics["scalar_per_seed"]``. Higher is better.
- Vetoes: mean final eval pass@1 below the Proposition 1 floor ``E[p0] - (tau + eps) - C *
  delta``, ``eps = sqrt(ln(2/delta) / (2 * N_min))`` (E[p0]: mean round-0 pass@1, the empty
  bank's rate); total cost over ``cost_budget_usd``; a seed that finished no round. The floor's
  parameters are the evaluator's own (``FloorParams``), never the candidate's config.
- ``repeat_seeds(seeds, k)`` shifts every seed by ``REPEAT_STRIDE * k`` for noise repeat k
  (``RATCHET_EVAL_REPEAT``): another reproducible set of seeds.
- ``yardstick_sha(configs, candidate_keys)``: sha256 of each seed's resolved ``LoopConfig``
  without ``results_dir``, ``tag``, ``prompts`` and the ``candidate_keys`` globs, so a candidate
  that moves a default the yardstick uses reports another hash (vetoed by the engine).
- ``governance_gaps(config)``: why the Curator or the rollback gate cannot act within
  ``config.rounds`` ([] when both can); a scalar measured there says nothing about them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from statistics import fmean
from typing import Any, Literal, Sequence

from ratchet_ray.experiment.contract import PER_SEED_KEY, REPEAT_ENV, EvalResult
from ratchet_ray.metrics import hoeffding_eps, loop_metrics, prop1_floor

REPEAT_STRIDE = 1000


def repeat_seeds(seeds: Sequence[int], repeat: str | int) -> list[int]:
    """``seeds`` for noise repeat ``repeat`` ('' or 0: the seeds themselves)."""
    text = str(repeat).strip()
    if not text:
        return list(seeds)
    if not text.isdigit():
        raise ValueError(f"${REPEAT_ENV}={text!r}: expected a repeat number >= 0 (the "
                         "experiment engine sets it on the baseline's noise repeats)")
    return [seed + REPEAT_STRIDE * int(text) for seed in seeds]


ScalarKind = Literal["rolling_gain", "final_pass"]
SCALAR_KINDS: tuple[str, ...] = ("rolling_gain", "final_pass")


@dataclass(frozen=True)
class FloorParams:
    tau: float = 0.10
    n_min: int = 100
    cap: int = 50
    delta: float = 1e-3

    def epsilon(self) -> float:
        return hoeffding_eps(self.n_min, self.delta)

    def floor(self, p0: float) -> float:
        """Proposition 1's lower bound on expected eval pass@1 given the no-skill rate ``p0``."""
        return prop1_floor(p0, self.tau, self.n_min, self.cap, self.delta)


def skill_loop_contract(runs: dict[int, list[dict[str, Any]]], *, scalar: ScalarKind,
                        floor: FloorParams = FloorParams(),
                        cost_budget_usd: float | None = None) -> EvalResult:
    """The contract for ``runs`` (seed -> that seed's ``loop.json`` rounds)."""
    if scalar not in SCALAR_KINDS:
        raise ValueError(f"unknown scalar {scalar!r}; valid: {', '.join(SCALAR_KINDS)}")
    vetoes: list[str] = []
    per_seed: list[float] = []
    round0: list[float] = []
    final: list[float] = []
    cost = 0.0
    for seed, rows in runs.items():
        m = loop_metrics(rows)
        cost += sum(float(r.get("cost_usd") or 0.0) for r in rows)
        evals = [r["eval_pass_at_1"] for r in rows if r.get("eval_pass_at_1") is not None]
        if m.round0 is None or not evals:
            vetoes.append(f"seed {seed}: no round with an eval pass finished")
            continue
        round0.append(m.round0)
        final.append(evals[-1])
        per_seed.append(m.rolling_gain if scalar == "rolling_gain" else evals[-1])
    metrics: dict[str, Any] = {PER_SEED_KEY: per_seed, "scalar_kind": scalar,
                               "cost_usd": round(cost, 6)}
    if round0:
        p0, final_mean = fmean(round0), fmean(final)
        bound = floor.floor(p0)
        metrics.update({"round0_pass_at_1": p0, "final_pass_at_1": final_mean,
                        "prop1_floor": bound, "prop1_epsilon": floor.epsilon()})
        if final_mean < bound:
            vetoes.append(f"final eval pass@1 {final_mean:.3f} is below the Proposition 1 floor "
                          f"{bound:.3f}")
    if cost_budget_usd is not None and cost > cost_budget_usd:
        vetoes.append(f"cost ${cost:.4f} is over the budget ${cost_budget_usd:.4f}")
    return EvalResult(fmean(per_seed) if per_seed else 0.0, vetoes, metrics,
                      sorted(runs), lower_is_better=False)


RUN_LOCAL_KEYS = ("results_dir", "tag", "prompts")


def yardstick_sha(configs: Sequence[Any], candidate_keys: Sequence[str] = ()) -> str:
    """The hash of the configs the evaluator resolves, candidate knobs left out (module contract)."""
    from ratchet_ray.experiment.manifest import flatten, key_matches

    h = hashlib.sha256()
    for config in configs:
        data = config.model_dump(mode="json")
        for key in RUN_LOCAL_KEYS:
            data.pop(key, None)
        kept = {k: v for k, v in flatten(data).items()
                if not key_matches(k, candidate_keys)}
        h.update(json.dumps(kept, sort_keys=True, default=str).encode() + b"\0")
    return h.hexdigest()


def governance_gaps(config: Any) -> list[str]:
    """Why the Curator or the rollback gate cannot act in ``config.rounds`` rounds (module contract)."""
    gaps = []
    rounds = int(config.rounds)
    rollback = config.rollback
    if rollback.enabled and rounds < rollback.consecutive + 2:
        gaps.append(f"rollback cannot act in {rounds} round(s): it needs a best round, then "
                    f"rollback.consecutive={rollback.consecutive} rounds below it (at least "
                    f"{rollback.consecutive + 2} rounds)")
    per_round = int(config.n_train) + int(config.n_eval)
    most = max(0, rounds - 1) * per_round
    if most < config.curator.min_trials:
        gaps.append(f"the Curator cannot retire a skill in {rounds} round(s): a skill gets at "
                    f"most {most} routed attempts ({per_round} a round after the one it is "
                    f"written in), fewer than curator.min_trials={config.curator.min_trials}")
    return gaps
