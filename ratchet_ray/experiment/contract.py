"""The evaluator contract: one JSON line ``{"scalar", "vetoes", "metrics", "seeds", "lower_is_better"}``.

Contracts:
- ``format_contract(result)`` is the line an evaluator prints; ``parse_contract(text)``
  validates the LAST line of ``text`` that is a JSON object with a ``scalar`` key, raising
  ``ContractError`` naming the problem (the engine's crash).
- Types: ``scalar`` finite number, ``vetoes`` strings (any one vetoes), ``metrics`` an object,
  ``seeds`` ints, ``lower_is_better`` bool. ``metrics["scalar_per_seed"]`` feeds the noise
  margin; ``metrics["needs_review"]`` (reasons) makes the engine never merge the candidate.
- ``noise_margin(baseline, candidate)``: the standard error of the difference of the per-seed
  means, sqrt(var_b/n_b + var_c/n_c); 0.0 with fewer than two values on a side.
- ``repeat_noise(scalars)``: sqrt(2) x the sample std of repeated baseline scalars (None with
  fewer than two).
- ``max_adjusted_margin(margin, competed)``: ``margin x (1 + E[max] / sqrt(2))``, E[max] of
  ``competed`` standard normals (Blom), since the best so far is a maximum of noisy
  evaluations; 1 leaves it unchanged, 10 widen it 2.1x.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from statistics import NormalDist, variance
from typing import Any

CONTRACT_KEYS = ("scalar", "vetoes", "metrics", "seeds", "lower_is_better")
PER_SEED_KEY = "scalar_per_seed"
REVIEW_KEY = "needs_review"
REPEAT_ENV = "RATCHET_EVAL_REPEAT"
"""Set (1, 2, ...) by the engine on the baseline's noise repeats; an evaluator that takes seeds
derives other seeds from it (``skill_eval.repeat_seeds``)."""


class ContractError(ValueError):
    """The evaluator's output holds no valid contract line; the message says what is wrong."""


@dataclass(frozen=True)
class EvalResult:
    scalar: float
    vetoes: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=list)
    lower_is_better: bool = False

    def review(self) -> list[str]:
        """Why the evaluator wants a human to review this candidate (``metrics["needs_review"]``)."""
        values = self.metrics.get(REVIEW_KEY)
        if isinstance(values, str):
            return [values] if values else []
        return [str(v) for v in values] if isinstance(values, list) else []

    def per_seed(self) -> list[float]:
        values = self.metrics.get(PER_SEED_KEY)
        if not isinstance(values, list):
            return []
        return [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]


def format_contract(result: EvalResult) -> str:
    return json.dumps(asdict(result))  # the keys in CONTRACT_KEYS' order


_TYPES = {  # key -> (what it must be, its check), in the order a contract line is checked
    "scalar": ("a finite number", lambda v: isinstance(v, (int, float))
               and not isinstance(v, bool) and math.isfinite(v)),
    "vetoes": ("a list of strings", lambda v: isinstance(v, list)
               and all(isinstance(x, str) for x in v)),
    "metrics": ("a JSON object", lambda v: isinstance(v, dict)),
    "seeds": ("a list of ints", lambda v: isinstance(v, list)
              and all(isinstance(x, int) and not isinstance(x, bool) for x in v)),
    "lower_is_better": ("true or false", lambda v: isinstance(v, bool)),
}


def _validate(data: dict[str, Any]) -> EvalResult:
    missing = [k for k in CONTRACT_KEYS if k not in data]
    if missing:
        raise ContractError(f"contract line lacks {', '.join(missing)}; an evaluator prints "
                            '{"scalar": 0.5, "vetoes": [], "metrics": {}, "seeds": [42], '
                            '"lower_is_better": false}')
    for key, (what, valid) in _TYPES.items():
        if not valid(data[key]):
            raise ContractError(f"contract {key} must be {what}, got {data[key]!r}")
    return EvalResult(float(data["scalar"]), list(data["vetoes"]), dict(data["metrics"]),
                      list(data["seeds"]), data["lower_is_better"])


def parse_contract(text: str) -> EvalResult:
    """The last contract line of ``text`` (an evaluator's output tail), validated."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if not (line.startswith("{") and line.endswith("}")):
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and "scalar" in data:
            return _validate(data)
    raise ContractError("no contract line in the evaluator output: the evaluator must print one "
                        'JSON line with "scalar", "vetoes", "metrics", "seeds", "lower_is_better"')


def noise_margin(baseline: EvalResult, candidate: EvalResult) -> float:
    b, c = baseline.per_seed(), candidate.per_seed()
    if len(b) < 2 or len(c) < 2:
        return 0.0
    return math.sqrt(variance(b) / len(b) + variance(c) / len(c))


def repeat_noise(scalars: list[float]) -> float | None:
    """sqrt(2) x the sample std of repeated evaluations of one commit (module contract)."""
    if len(scalars) < 2:
        return None
    return math.sqrt(2.0 * variance(scalars))


def expected_max_normal(n: int) -> float:
    """E[max of ``n`` independent standard normals], Blom's approximation (0 for n <= 1)."""
    if n <= 1:
        return 0.0
    return NormalDist().inv_cdf((n - 0.375) / (n + 0.25))


def max_adjusted_margin(margin: float, competed: int) -> float:
    """``margin`` widened for a best that is the maximum of ``competed`` evaluations."""
    return margin * (1.0 + expected_max_normal(competed) / math.sqrt(2.0))


def improves(candidate: float, best: float, margin: float, lower_is_better: bool) -> bool:
    """True when ``candidate`` beats ``best`` by more than ``margin`` in the metric's direction."""
    return candidate < best - margin if lower_is_better else candidate > best + margin
