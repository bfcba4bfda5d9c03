"""The sim world's A1-A8 prediction against the paper's MBPP+ ablation table.

Contracts:
- ``PAPER_MBPP``: the paper's MBPP+ hard-100 table (Claude Opus 4.7, 100 rounds, seeds 42, 7,
  13): per arm (round 0, peak, rolling gain), each (mean, sample std over the 3 seeds).
- ``verdict(diff, se)``: "lower" / "higher" when the difference to the Default is beyond 2
  standard errors, else "within noise".
- ``render_vs_paper(rows)`` (``ablation_table.ArmSeed`` rows of one sweep): one line per arm
  in the paper's table: the sim's rolling gain, its difference to the Default paired by seed
  (SE = sample std / sqrt(n)), the paper's gain and difference (SE = sqrt((s_arm^2 +
  s_default^2) / 3), the seeds being unpaired there) and whether the two verdicts agree:
  "yes" (same verdict), "sign" (one is within noise, the means have the same sign) or "NO".
  Arms the sweep did not run are left out.
"""

from __future__ import annotations

import math
import statistics
from typing import Sequence

from ratchet_ray.ablations import DEFAULT_ARM, arm_sort_key

PAPER_MBPP: dict[str, tuple[tuple[float, float], tuple[float, float], tuple[float, float]]] = {
    "default": ((0.258, 0.047), (0.658, 0.042), (0.328, 0.018)),
    "A1": ((0.283, 0.031), (0.375, 0.000), (0.002, 0.005)),
    "A2": ((0.242, 0.012), (0.492, 0.042), (0.077, 0.065)),
    "A3": ((0.200, 0.035), (0.592, 0.047), (0.187, 0.036)),
    "A4": ((0.300, 0.035), (0.433, 0.042), (-0.019, 0.010)),
    "A5": ((0.275, 0.020), (0.708, 0.012), (0.374, 0.023)),
    "A6": ((0.217, 0.024), (0.700, 0.035), (0.363, 0.033)),
    "A7": ((0.292, 0.042), (0.650, 0.089), (0.317, 0.110)),
    "A8": ((0.250, 0.035), (0.725, 0.020), (0.372, 0.017)),
}
COLUMNS = ("arm", "sim rolling gain", "sim vs Default", "sim verdict", "paper rolling gain",
           "paper vs Default", "paper verdict", "agrees")


def verdict(diff: float, se: float) -> str:
    """The difference's verdict at 2 standard errors (see the module contract)."""
    if diff < -2 * se:
        return "lower"
    if diff > 2 * se:
        return "higher"
    return "within noise"


def agreement(sim: str, paper: str, sim_diff: float, paper_diff: float) -> str:
    """'yes', 'sign' or 'NO' (see the module contract)."""
    if sim == paper:
        return "yes"
    if "within noise" in (sim, paper) and (sim_diff >= 0) == (paper_diff >= 0):
        return "sign"
    return "NO"


def render_vs_paper(rows: Sequence) -> str:
    """The predicted-vs-paper Markdown table of ``rows`` (see the module contract)."""
    gains: dict[str, dict] = {}
    for row in rows:
        if row.result.rolling_gain is not None:
            gains.setdefault(row.arm, {})[row.seed] = row.result.rolling_gain
    base = gains.get(DEFAULT_ARM, {})
    paper_base = PAPER_MBPP[DEFAULT_ARM][2]
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for arm in sorted(set(gains) & set(PAPER_MBPP), key=arm_sort_key):
        own = list(gains[arm].values())
        mean = statistics.fmean(own)
        spread = f" ± {statistics.stdev(own):.3f}" if len(own) > 1 else ""
        (p_mean, p_std) = PAPER_MBPP[arm][2]
        if arm == DEFAULT_ARM:
            lines.append(f"| {arm} | {mean:+.3f}{spread} | – | – "
                         f"| {p_mean:+.3f} ± {p_std:.3f} | – | – | – |")
            continue
        paired = [g - base[s] for s, g in gains[arm].items() if s in base]
        diff = statistics.fmean(paired) if paired else math.nan
        se = statistics.stdev(paired) / math.sqrt(len(paired)) if len(paired) > 1 else math.inf
        sim = verdict(diff, se) if paired else "–"
        p_diff = p_mean - paper_base[0]
        p_se = math.sqrt((p_std ** 2 + paper_base[1] ** 2) / 3)
        paper = verdict(p_diff, p_se)
        agrees = agreement(sim, paper, diff, p_diff) if paired else "–"
        lines.append(f"| {arm} | {mean:+.3f}{spread} | {diff:+.3f} ± {se:.3f} (SE) | {sim} "
                     f"| {p_mean:+.3f} ± {p_std:.3f} | {p_diff:+.3f} ± {p_se:.3f} (SE) | {paper} "
                     f"| {agrees} |")
    return "\n".join(lines)
