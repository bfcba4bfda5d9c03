"""The sim world's A1-A8 table against the paper's MBPP+ ablation table, each arm labelled by
what the world's agreement with the paper can mean for it.

Contracts:
- ``PAPER_MBPP``: the paper's MBPP+ hard-100 table (Claude Opus 4.7, 100 rounds, seeds 42, 7,
  13): per arm (round 0, peak, rolling gain), each (mean, sample std over the 3 seeds).
- ``ARM_BASIS``: what the world's number for an arm rests on: ``FITTED`` (the Default row the
  parameters were fitted on), ``PREDICTION`` (no mechanism added for the arm), ``ADDED`` (a
  mechanism added so the arm would move, its settings in ``ADDED_FOR``: agreement is a
  consistency check, not a prediction) or ``NOT_MODELLED`` (A7, A8: the Default run for run).
- ``render_vs_paper(rows)`` (``ablation_table.ArmSeed`` rows): one line per arm of the paper's
  table that the sweep ran: basis, sim rolling gain, its difference to the Default paired by
  seed (SE = sample std / sqrt(n)), the paper's gain and difference (SE =
  sqrt((s_arm^2 + s_default^2) / 3), unpaired seeds), each difference's ``verdict`` and their
  ``agreement``; a ``NOT_MODELLED`` arm's agreement is "not modelled", never a verdict.
"""

from __future__ import annotations

import math
import statistics
from typing import Sequence

from ratchet_ray.arm_summary import DEFAULT_ARM, arm_sort_key

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
FITTED = "fitted on this row"
PREDICTION = "prediction"
ADDED = "mechanism added for this arm (a hypothesis)"
NOT_MODELLED = "not modelled"
ARM_BASIS = {"default": FITTED, "A1": PREDICTION, "A2": ADDED, "A3": ADDED, "A4": ADDED,
             "A5": ADDED, "A6": ADDED, "A7": NOT_MODELLED, "A8": NOT_MODELLED}
ADDED_FOR = {
    "A2": ("misapply_cost", "surface_share", "route_preference"),
    "A3": ("no_guide_helpful_drop",),
    "A4": ("train_lift", "route_easy_p0", "redraft_helpful_drop"),
    "A5": ("phrase_share", "impurity_cost"),
    "A6": ("submodes", "cross_submode", "idea_share"),
}
"""The ``sim.*`` settings added to the world for each ``ADDED`` arm (docs/simulator.md)."""
COLUMNS = ("arm", "basis", "sim rolling gain", "sim vs Default", "sim verdict", "paper rolling gain",
           "paper vs Default", "paper verdict", "agrees")


def verdict(diff: float, se: float) -> str:
    """"lower" / "higher" when ``diff`` is beyond 2 standard errors, else "within noise"."""
    if diff < -2 * se:
        return "lower"
    if diff > 2 * se:
        return "higher"
    return "within noise"


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def agreement(sim: str, paper: str, sim_diff: float, paper_diff: float) -> str:
    """"yes" (same verdict), "sign" (one is within noise and both differences have the same
    strict sign; 0 has none) or "NO"."""
    if sim == paper:
        return "yes"
    if "within noise" in (sim, paper) and _sign(sim_diff) == _sign(paper_diff) != 0:
        return "sign"
    return "NO"


def basis_label(arm: str) -> str:
    """The basis cell: ``ARM_BASIS``'s label, with the settings added for an ``ADDED`` arm."""
    basis = ARM_BASIS.get(arm, NOT_MODELLED)
    if basis != ADDED:
        return basis
    keys = ", ".join(f"`sim.{k}`" for k in ADDED_FOR[arm])
    return f"mechanism added for {arm} ({keys}): a hypothesis"


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
            lines.append(f"| {arm} | {basis_label(arm)} | {mean:+.3f}{spread} | – | – "
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
        if ARM_BASIS.get(arm) == NOT_MODELLED:
            sim = agrees = NOT_MODELLED  # the world runs the Default here: nothing to compare
        lines.append(f"| {arm} | {basis_label(arm)} | {mean:+.3f}{spread} "
                     f"| {diff:+.3f} ± {se:.3f} (SE) | {sim} | {p_mean:+.3f} ± {p_std:.3f} | {p_diff:+.3f} ± {p_se:.3f} (SE) | {paper} "
                     f"| {agrees} |")
    return "\n".join(lines)
