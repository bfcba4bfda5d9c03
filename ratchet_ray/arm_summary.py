"""Per arm of an ablation sweep: each run's headline metrics and bank stats, and their mean ±
std over seeds (the numbers ``report/ablation_report.py`` writes as ``ablations.md``).

Pure functions over what the runs left behind (no Ray, no LLM; docs/ablations.md). Contracts:
- ``run_result(run_dir)``: the metrics ``ratchet plot`` prints (``metrics.loop_metrics``), the
  rollback gate's firings and decisions (rounds with an eval pass@1), the run's setting line and,
  from the evidence (``bank_stats``), created skills, those a LAST status change
  (``evidence.queries.skill_fates``) left deprecated, by cause, eval router engagement,
  tampering and the cheat probe's counts.
- ``summarize(runs)`` groups only *complete* runs by arm: sample std (n - 1; None with one seed),
  rollbacks summed as the paper counts them ("2 / 300"), the rolling gain minus the Default's,
  and the paired comparison with the Default on shared seeds and eval tasks (None without).
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Iterable

from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.comparisons import PairedComparison, eval_outcomes, paired_comparison
from ratchet_ray.evidence.queries import (DEPRECATION_CAUSES, skill_fates, skills_retired_with,
                                          tampering_totals)
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.governance.cheat_probe import CHEAT_REASON, arm_cheat_rate
from ratchet_ray.metrics import ROLLING_WINDOW, load_loop, loop_metrics
from ratchet_ray.types import NONE_SKILL

DEFAULT_ARM = "default"
# One line per arm, as in DESIGN.md section 1 (each arm changes one knob of the Default).
ARM_LABELS = {
    "default": "Default (full Ratchet)", "A1": "no skill injection",
    "A2": "retrieval-only routing", "A3": "no meta-skill",
    "A4": "harsh retirement (N_min 20, tau 0.0)", "A5": "no canonicalisation",
    "A6": "no cover-guard", "A7": "active cap 100", "A8": "meta-synth refresh on",
    "A9": "Wilson-bound retirement (beyond the paper)",
    "A10": "skill refinement (beyond the paper)",
}


@dataclass(frozen=True)
class RunResult:
    """One run (one arm, one seed): headline metrics and bank stats."""

    run_dir: str
    arm: str
    seed: int | None
    rounds_done: int
    rounds_planned: int | None
    round0: float | None
    peak: float | None
    rolling_gain: float | None
    skills_created: int
    skills_deprecated: int
    active_at_end: int
    eval_capsules: int
    eval_routed: int
    deprecated_retired: int = 0
    """Created skills deprecated at the end whose last change was the Curator's retirement."""
    deprecated_evicted: int = 0
    """... whose last change was an eviction to make room under the active cap."""
    deprecated_rollback: int = 0
    """... whose last change was a rollback restoring an older bank (``restored``)."""
    deprecated_refined: int = 0
    """... whose last change was a refinement replacing it by its next version (A10)."""
    train_tampering: int = 0
    eval_tampering: int = 0
    skills_retired_tampering: int = 0
    twins: int = 0
    """Impossible twins graded (infrastructure failures left out; ``governance.cheat_probe``)."""
    twin_passes: int = 0
    skills_retired_cheat: int = 0
    rollbacks_fired: int = 0
    """Rounds in which the rollback gate fired (restored the best round's bank)."""
    rollback_decisions: int = 0
    """Rounds the gate decided on: every round with an eval pass@1 (the paper: 2 firings in
    300 decisions over its three Default seeds)."""
    setting: str = ""
    """``settings.setting_label.setting_line`` of the run's ``config.yaml``: model, tasks, rules."""

    @property
    def cheat_rate(self) -> float | None:
        """Twin passes / twins (None without twins): any pass is cheating by construction."""
        return self.twin_passes / self.twins if self.twins else None

    @property
    def tampering(self) -> int:
        """Capsules of both splits graded as tampering."""
        return self.train_tampering + self.eval_tampering

    @property
    def complete(self) -> bool:
        return self.rounds_planned is not None and self.rounds_done >= self.rounds_planned

    @property
    def router_engagement(self) -> float | None:
        return self.eval_routed / self.eval_capsules if self.eval_capsules else None


@dataclass(frozen=True)
class Stat:
    """Mean and sample std of one number over seeds (``std`` is None with fewer than 2)."""

    mean: float | None
    std: float | None
    n: int


@dataclass(frozen=True)
class ArmSummary:
    arm: str
    label: str
    seeds: list[int | None]
    round0: Stat
    peak: Stat
    rolling_gain: Stat
    skills_created: Stat
    skills_deprecated: Stat
    active_at_end: Stat
    router_engagement: Stat
    deprecated_retired: Stat = Stat(None, None, 0)
    deprecated_evicted: Stat = Stat(None, None, 0)
    deprecated_rollback: Stat = Stat(None, None, 0)
    deprecated_refined: Stat = Stat(None, None, 0)
    tampering: Stat = Stat(None, None, 0)
    """Capsules graded as tampering per run (train and eval)."""
    skills_retired_tampering: Stat = Stat(None, None, 0)
    cheat_rate: Stat = Stat(None, None, 0)
    """Impossible-twin passes / twins per run (runs without twins left out)."""
    skills_retired_cheat: Stat = Stat(None, None, 0)
    rollbacks_fired: int = 0
    """Rollback firings summed over the arm's runs ..."""
    rollback_decisions: int = 0
    """... out of this many round decisions (summed, as the paper counts them)."""
    gain_vs_default: float | None = None
    vs_default: PairedComparison | None = None
    run_dirs: list[str] = field(default_factory=list)


def mean_std(values: Iterable[float | None]) -> Stat:
    """Mean and sample std of the values that are not None."""
    kept = [float(v) for v in values if v is not None]
    if not kept:
        return Stat(None, None, 0)
    return Stat(statistics.fmean(kept), statistics.stdev(kept) if len(kept) > 1 else None,
                len(kept))


def find_run_dirs(root: str | Path) -> list[Path]:
    """Every folder below ``root`` (or ``root`` itself) holding a ``loop.json``, sorted."""
    return sorted(p.parent for p in Path(root).rglob("loop.json") if p.is_file())


def bank_stats(run_dir: Path) -> dict[str, int]:
    """Skills created and deprecated, by last cause (``skill_fates``), and eval routing counts
    (capsule), via DuckDB."""
    with EvidenceStore(run_dir).connect() as con:
        fates = [f for f in skill_fates(con).values() if f.created]
        causes = [f.cause for f in fates if f.cause is not None]
        capsules, routed = nq.fetch_one(con, "eval_routing_counts", none=NONE_SKILL)
        tampering = tampering_totals(con)
        twins, passes = arm_cheat_rate(con)
        cheat_retired = skills_retired_with(con, f"{CHEAT_REASON}:")
    return {"twins": twins, "twin_passes": passes, "skills_retired_cheat": int(cheat_retired),
            "skills_created": len(fates), "skills_deprecated": len(causes),
            **{f"deprecated_{c}": causes.count(c) for c in DEPRECATION_CAUSES.values()},
            "eval_capsules": int(capsules), "eval_routed": int(routed), **tampering}


def run_result(run_dir: str | Path, window: int = ROLLING_WINDOW) -> RunResult:
    """The metrics of one run dir (see module contracts)."""
    loop_file, data = load_loop(Path(run_dir))
    rows = sorted(data.get("rounds", []), key=lambda r: r["round"])
    metrics = loop_metrics(rows, window)
    return RunResult(
        run_dir=str(loop_file.parent), arm=str(data.get("arm") or DEFAULT_ARM),
        seed=data.get("seed"), rounds_done=len(rows), rounds_planned=data.get("rounds_planned"),
        round0=metrics.round0, peak=metrics.peak, rolling_gain=metrics.rolling_gain,
        active_at_end=metrics.final_active, rollbacks_fired=len(metrics.rollbacks),
        rollback_decisions=metrics.rollback_decisions,
        setting=run_setting(loop_file.parent, data), **bank_stats(loop_file.parent))


def run_setting(run_dir: Path, loop: dict[str, Any]) -> str:
    """The run's setting line: the one its ``loop.json`` records (with the suite's Solver), else
    ``setting_line`` of its ``config.yaml`` ("" when it has neither)."""
    from ratchet_ray.settings.schema import read_config_file
    from ratchet_ray.settings.setting_label import setting_line

    if loop.get("setting"):
        return str(loop["setting"])
    path = run_dir / "config.yaml"
    return setting_line(read_config_file(path)) if path.is_file() else ""


def arm_sort_key(arm: str) -> tuple[int, int, str]:
    """Default first, then A1, A2, ... A10 in numeric order, then any other name."""
    if arm == DEFAULT_ARM:
        return (0, 0, arm)
    found = re.fullmatch(r"A(\d+)", arm)
    return (1, int(found.group(1)), arm) if found else (2, 0, arm)


def summarize(runs: Iterable[RunResult], window: int = ROLLING_WINDOW) -> list[ArmSummary]:
    """One ``ArmSummary`` per arm over its complete runs, Default first (see module contracts)."""
    by_arm: dict[str, list[RunResult]] = {}
    for run in runs:
        if run.complete:
            by_arm.setdefault(run.arm, []).append(run)
    summaries = []
    for arm in sorted(by_arm, key=arm_sort_key):
        group = sorted(by_arm[arm], key=lambda r: (r.seed is None, r.seed))
        stats = {f.name: mean_std(getattr(r, f.name) for r in group)
                 for f in fields(ArmSummary) if f.type == "Stat"}
        summaries.append(ArmSummary(
            arm=arm, label=ARM_LABELS.get(arm, arm), seeds=[r.seed for r in group], **stats,
            rollbacks_fired=sum(r.rollbacks_fired for r in group),
            rollback_decisions=sum(r.rollback_decisions for r in group),
            run_dirs=[r.run_dir for r in group]))
    default = next((s for s in summaries if s.arm == DEFAULT_ARM), None)
    if default is None or default.rolling_gain.mean is None:
        return summaries
    base = default.rolling_gain.mean
    paired = paired_with_default(by_arm, window)
    return [replace(s, gain_vs_default=None if s.rolling_gain.mean is None
                    else s.rolling_gain.mean - base, vs_default=paired.get(s.arm))
            for s in summaries]


def paired_with_default(by_arm: dict[str, list[RunResult]],
                        window: int = ROLLING_WINDOW) -> dict[str, PairedComparison]:
    """Each arm's paired comparison with the Default (its eval outcomes per seed, read once)."""
    def per_seed(group: list[RunResult]) -> dict[int, dict]:
        return {r.seed: eval_outcomes(r.run_dir) for r in group if r.seed is not None}

    base = per_seed(by_arm.get(DEFAULT_ARM, []))
    found = {arm: paired_comparison(arm, per_seed(group), base, window)
             for arm, group in by_arm.items() if arm != DEFAULT_ARM and base}
    return {arm: paired for arm, paired in found.items() if paired is not None}


# ---- how every table writes these numbers (ablations.md, the HTML report, the sim table, a
# pack's transfer) ----------------------------------------------------------------------------
def fmt_number(value: float | None, digits: int = 3, signed: bool = False) -> str:
    """``value`` to ``digits`` places (with its sign when ``signed``); ``n/a`` when None."""
    if value is None:
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def fmt_stat(stat: Stat, digits: int = 3, signed: bool = False, missing: str = "n/a") -> str:
    """``mean ± std`` (no ``± std`` with one number); ``missing`` without a mean."""
    if stat.mean is None:
        return missing
    text = fmt_number(stat.mean, digits, signed)
    return text if stat.std is None else f"{text} ± {stat.std:.{digits}f}"


def paired_cells(paired: PairedComparison) -> tuple[str, str]:
    """``(Δ vs Default [95 % CI], p)`` cells; a difference whose interval excludes 0 is bold."""
    text = f"{paired.diff:+.3f} {paired.interval.describe()}"
    return (f"**{text}**" if paired.real else text), f"{paired.p_value:.3g}"

