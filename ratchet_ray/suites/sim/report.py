"""``ratchet sim-report RUN_OR_SWEEP``: the truth-aware report of sim runs.

Contracts:
- ``write_sim_report(path, delta, out=None)`` analyses every sim run dir at or below ``path``
  with ``truth.analyze_run`` and writes into ``out`` (default ``<path>/sim_report``):
  ``sim_report.md``, ``rounds.csv`` (per run and round: measured, true and oracle pass@1, the
  Proposition 1 floor), ``skills.csv`` (per skill: true class and contribution, c-hat, c_cf,
  fate), ``arms.csv`` (per arm: mean and std over seeds) and one ``<arm>_s<seed>.png`` curve
  per run. Returns the paths written; ``FileNotFoundError`` when no sim run is found.
- Per arm: the paper's headline numbers (``metrics.loop_metrics``) plus the truth
  (``ARM_COLUMNS``); arms the world gives no way to matter (``NO_EFFECT_IN_SIM``) are marked
  with the reason. When any run refined skills (A10) a second table gives
  ``REFINE_COLUMNS`` (``RunTruth.refinement``).
"""

from __future__ import annotations

import csv
import io
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterable

from ratchet_ray.arm_summary import Stat, arm_sort_key, find_run_dirs, fmt_stat, mean_std
from ratchet_ray.metrics import ROLLING_WINDOW, loop_metrics
from ratchet_ray.storage.fsutil import atomic_write_text, atomic_write_with
from ratchet_ray.suites.sim.truth import DEFAULT_DELTA, NotASimRun, RunTruth, analyze_run

REPORT_DIR = "sim_report"


def headline(truth: RunTruth, window: int = ROLLING_WINDOW) -> dict[str, Any]:
    """One run's numbers for the arm table."""
    rows = [{"round": r.round, "eval_pass_at_1": r.measured} for r in truth.rounds]
    measured = loop_metrics(rows, window)
    true = loop_metrics([{"round": r.round, "eval_pass_at_1": r.true} for r in truth.rounds],
                        window)
    out: dict[str, Any] = {
        "arm": truth.arm, "seed": truth.seed, "rounds": len(truth.rounds),
        "round0": measured.round0, "peak": measured.peak, "rolling_gain": measured.rolling_gain,
        "true_round0": true.round0, "true_rolling": true.rolling_mean,
        "true_rolling_gain": true.rolling_gain,
        "oracle_final": truth.rounds[-1].oracle if truth.rounds else None,
        "e_p0": truth.e_p0, "floor": truth.floor,
        "rounds_below_floor_true": len(truth.below_floor("true")),
        "rounds_below_floor_measured": len(truth.below_floor("measured")),
    }
    out.update(truth.retirement())
    out["active_at_end"] = truth.active_at_end()
    probed = [s for s in truth.skills if s.c_cf is not None and s.c_hat is not None]
    out["probed_skills"] = len(probed)
    out["sign_agree_c_hat"] = mean_std(float((s.c_hat > 0) == s.helpful) for s in probed).mean
    out["sign_agree_c_cf"] = mean_std(float((s.c_cf > 0) == s.helpful) for s in probed).mean
    # c-hat estimates 2 p(skill) - 1, c_cf estimates p(skill) - p(NONE): both against the truth
    out["c_hat_abs_err"] = mean_std(abs(s.c_hat - s.c_true) for s in probed).mean
    out["c_cf_abs_err"] = mean_std(abs(s.c_cf - s.c_true) for s in probed).mean
    return out


ARM_COLUMNS = ("round0", "peak", "rolling_gain", "true_rolling", "true_rolling_gain",
               "precision", "recall", "harmful_gone", "helpful_kept", "rounds_to_retire",
               "retired", "rolled_back", "active_at_end", "evicted_helpful",
               "rounds_below_floor_true")
REFINE_COLUMNS = ("refined", "refined_better", "refine_delta", "lineages_helpful_kept",
                  "helpful_kept", "true_rolling_gain")
NO_EFFECT_IN_SIM = {
    "A7": "not modelled in the sim world: the cap of 50 never binds there (no run holds more than "
          "about 30 active skills), so raising it to 100 changes nothing",
    "A8": "not modelled in the sim world: the sim Synthesizer only asks whether its prompt carries "
          "an authoring guide (A3 removes it), not what the guide says, so a refreshed "
          "meta-skill changes nothing",
}
"""Arms the simulator reads but its world gives no way to matter (said in the report)."""


def arm_table(heads: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per arm: n seeds and mean / std of every ``ARM_COLUMNS`` number."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for h in heads:
        groups.setdefault(h["arm"], []).append(h)
    table = []
    for arm in sorted(groups, key=arm_sort_key):
        row: dict[str, Any] = {"arm": arm, "seeds": len(groups[arm])}
        for column in dict.fromkeys([*ARM_COLUMNS, *REFINE_COLUMNS]):
            stat = mean_std(g[column] for g in groups[arm])
            row[f"{column}_mean"], row[f"{column}_std"] = stat.mean, stat.std
        table.append(row)
    return table


def _fmt(mean: float | None, std: float | None, signed: bool = False) -> str:
    return fmt_stat(Stat(mean, std, 0), signed=signed, missing="–")


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """``rows`` as CSV (empty without rows), all or nothing (``atomic_write_text``): a full disk
    leaves the previous file, never a torn or empty one."""
    text = io.StringIO(newline="")
    if rows:
        writer = csv.DictWriter(text, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    atomic_write_text(path, text.getvalue())


def _plot(truth: RunTruth, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rounds = [r.round for r in truth.rounds]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(rounds, [r.measured for r in truth.rounds], label="measured eval pass@1", alpha=0.6)
    ax.plot(rounds, [r.true for r in truth.rounds], label="true expected pass@1 (as routed)")
    ax.plot(rounds, [r.oracle for r in truth.rounds], "--", label="best bank the truth allows")
    ax.axhline(truth.e_p0, color="grey", lw=0.8, label="E[p0] (no skills)")
    ax.axhline(truth.floor, color="red", lw=0.8, ls=":", label="Proposition 1 floor")
    ax.set_xlabel("round")
    ax.set_ylim(min(0.0, truth.floor - 0.05), 1.0)
    ax.set_title(f"sim {truth.arm} seed {truth.seed}")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    try:  # all or nothing, as the CSVs
        atomic_write_with(path, lambda handle: fig.savefig(handle, dpi=90, format="png"))
    finally:
        plt.close(fig)


def _markdown(truths: list[RunTruth], heads: list[dict[str, Any]],
              table: list[dict[str, Any]]) -> str:
    t0 = truths[0]
    lines = ["# sim report (truth-aware)", "",
             f"{len(truths)} run(s). True pass@1 = expected pass@1 of the routing decisions "
             "taken (mean of p(task | skill) over the eval capsules); oracle = the best bank the "
             "skills written so far allow (cap ignored). Proposition 1 floor = E[p0] - (tau + eps) "
             f"- C delta with delta = {t0.delta:g} and eps = sqrt(ln(2/delta) / (2 N_min)), from "
             "each run's own config.", "",
             "## Per arm (mean ± std over seeds)", "",
             "| arm | seeds | round 0 | peak | rolling gain | true rolling | true gain | "
             "retire precision | retire recall | harmful gone | helpful kept | rounds to retire "
             "| retired | rolled back | active at end | helpful evicted | rounds < floor |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in table:
        cells = [_fmt(row[f"{c}_mean"], row[f"{c}_std"], signed=c.endswith("gain"))
                 for c in ARM_COLUMNS]
        arm = row["arm"] + (" (not modelled in sim)" if row["arm"] in NO_EFFECT_IN_SIM else "")
        lines.append(f"| {arm} | {row['seeds']} | " + " | ".join(cells) + " |")
    notes = [f"- {arm}: {NO_EFFECT_IN_SIM[arm]}." for arm in NO_EFFECT_IN_SIM
             if any(row["arm"] == arm for row in table)]
    lines += ["", "Retire precision / recall: the Curator's retirements against the truth; "
              "harmful gone / helpful kept: the share not ACTIVE / ACTIVE at the end, whatever "
              "deprecated them (retired, evicted, rolled back) or brought them back; rolled back: "
              "skills a rollback deprecated at least once; active at end: the live bank's count.",
              *([""] + notes if notes else [])]
    if any(h["refined"] for h in heads):
        lines += _refine_table(table)
    lines += ["", "## Per run", "",
              "| arm | seed | E[p0] | eps | floor | min true | rounds < floor (true / measured) "
              "| harmful | retired (harmful) | evicted (helpful) "
              "| c-hat / c_cf vs truth (sign agree, "
              "mean abs error) |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for truth, h in zip(truths, heads):
        low = min((r.true for r in truth.rounds), default=None)
        agree = (f"{h['sign_agree_c_hat']:.2f} / {h['sign_agree_c_cf']:.2f}, |err| "
                 f"{h['c_hat_abs_err']:.2f} / {h['c_cf_abs_err']:.2f} ({h['probed_skills']} "
                 "skills)" if h["probed_skills"] else "no probes")
        lines.append(
            f"| {truth.arm} | {truth.seed} | {truth.e_p0:.3f} | {truth.eps:.3f} | "
            f"{truth.floor:.3f} | {_fmt(low, None)} | {h['rounds_below_floor_true']} / "
            f"{h['rounds_below_floor_measured']} | {h['harmful']} | {h['retired']} "
            f"({h['retired_harmful']}) | {h['evicted']} ({h['evicted_helpful']}) | {agree} |")
    lines += ["", "Files: rounds.csv, skills.csv, arms.csv, one <arm>_s<seed>.png per run.", ""]
    return "\n".join(lines)


def _refine_table(table: list[dict[str, Any]]) -> list[str]:
    """The refinement table (module contract)."""
    lines = ["", "## Refinement (mean ± std over seeds)", "",
             "| arm | versions refined | revisions better than parent | mean change of true "
             "effect | helpful lineages kept | helpful versions kept | true gain |",
             "|---|---|---|---|---|---|---|"]
    for row in table:
        cells = [_fmt(row[f"{c}_mean"], row[f"{c}_std"], signed=c.endswith(("gain", "delta")))
                 for c in REFINE_COLUMNS]
        lines.append(f"| {row['arm']} | " + " | ".join(cells) + " |")
    return lines + ["", "A revision is a new skill id of its parent's lineage; each version's "
                    "trials, c-hat and truth are its own. Helpful lineages kept: lineages with "
                    "a truly helpful version whose ACTIVE version at the end is helpful."]


def write_sim_report(path: str | Path, delta: float = DEFAULT_DELTA,
                     out: str | Path | None = None) -> list[Path]:
    """Analyse the sim runs under ``path`` and write the report (see module contracts)."""
    root = Path(path)
    truths = []
    for run_dir in find_run_dirs(root):
        if (run_dir / "config.yaml").is_file():
            try:
                truths.append(analyze_run(run_dir, delta))
            except NotASimRun:  # a non-sim run next to sim runs: not ours to report (a sim run
                continue        # whose files are garbled is its own error, never left out)
    if not truths:
        raise FileNotFoundError(f"no sim run under {root}: pass a run dir of `python -m "
                                "jobs.skill_loop sim` or a sweep folder of `python -m "
                                "jobs.ablations sim`")
    truths.sort(key=lambda t: (arm_sort_key(t.arm), t.seed))
    out_dir = Path(out) if out is not None else root / REPORT_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    heads = [headline(t) for t in truths]
    table = arm_table(heads)
    rounds = [{"arm": t.arm, "seed": t.seed, **asdict(r), "floor": t.floor, "e_p0": t.e_p0}
              for t in truths for r in t.rounds]
    skills = [{"arm": t.arm, "seed": t.seed, **asdict(s), "c_true": s.c_true,
               "harmful": s.harmful, "helpful": s.helpful} for t in truths for s in t.skills]
    written = [out_dir / "sim_report.md", out_dir / "rounds.csv", out_dir / "skills.csv",
               out_dir / "arms.csv"]
    atomic_write_text(written[0], _markdown(truths, heads, table))
    _write_csv(written[1], rounds)
    _write_csv(written[2], skills)
    _write_csv(written[3], table)
    for truth in truths:
        png = out_dir / f"{truth.arm}_s{truth.seed}.png"
        _plot(truth, png)
        written.append(png)
    return written
