"""A sweep's ablation report, written into its folder: ``ablations.md`` (the arm table, the
per-run table, then incomplete runs and the caller's failures, never averaged) and
``ablations.json`` (the same numbers, machine-readable), from ``arm_summary``'s numbers; the
HTML report's Sweeps section shows the same Markdown (``report.sections``).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ratchet_ray.arm_summary import (DEFAULT_ARM, ArmSummary, RunResult, arm_sort_key,
                                     find_run_dirs, fmt_number, fmt_stat, paired_cells,
                                     run_result, summarize)
from ratchet_ray.metrics import ROLLING_WINDOW
from ratchet_ray.storage.fsutil import atomic_write_text

REPORT_MD = "ablations.md"
REPORT_JSON = "ablations.json"


def rollback_rate(fired: int, decisions: int) -> str:
    """``"2 / 300"``: rollback firings per round decisions (``n/a`` without a decision)."""
    return f"{fired} / {decisions}" if decisions else "n/a"


def _refined(count: float | None) -> str:
    """The A10 share of a deprecation count, after the three causes every arm has: only where
    a refinement deprecated something, so the other arms' cells read as before."""
    return f" / {fmt_number(count, 1)} refined" if count else ""


def _relative(path: str, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return path


def report_markdown(summaries: list[ArmSummary], runs: list[RunResult], root: Path,
                    failures: dict[str, str] | None = None, window: int = ROLLING_WINDOW) -> str:
    """``ablations.md``: the arm table, the per-run table, then incomplete and failed runs."""
    from ratchet_ray.settings.setting_label import combined

    lines = [
        f"# Ablations: {root.name}: {combined(r.setting for r in runs)}", "",
        f"Mean ± sample std over seeds (complete runs only). Rolling gain = mean eval pass@1 of "
        f"the last {window} rounds minus round 0 (with fewer rounds: every round after round 0). "
        "Created = skills the Synthesizer wrote; deprecated = those of them deprecated at the "
        "end, by what deprecated them last (retired by the Curator / evicted at the cap / "
        "rolled back), so created - deprecated = active at the end (a loaded user bank aside). "
        "Router engagement = share of eval capsules routed to a skill (not NONE). Tampering = "
        "capsules graded as an attack on the grader (train + eval) / skills the Curator retired "
        "for it. Cheat rate = impossible twins passed / graded (a twin fails every honest "
        "answer, so any pass is cheating; n/a: no twin, e.g. cheat_probe off) / skills the "
        "Curator retired for it. Rollbacks = the gate's firings / its round decisions, summed "
        "over the arm's runs (the paper: 2 / 300 over its Default's three seeds). "
        "Δ vs Default = the paired rolling-gain difference on the seeds "
        "and eval tasks "
        "both ran, with its 95 % bootstrap interval (seeds, then tasks, resampled; **bold**: the "
        "interval excludes 0, a real difference); p = exact McNemar test on the discordant "
        "(seed, round, task) pairs of the window rounds (pairs taken as independent, so "
        "optimistic when a task's outcome repeats across rounds).", "",
        "| arm | change | seeds | round-0 pass@1 | peak | rolling gain | Δ vs Default [95 % CI] "
        "| p "
        "| created | deprecated (retired / evicted / rolled back) | active at end "
        "| router engagement (eval) | tampering (capsules / skills retired) "
        "| cheat rate (twins passed / graded; skills retired) | rollbacks (fired / decisions) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        if s.arm == DEFAULT_ARM:
            delta = p_value = "—"
        elif s.vs_default is None:  # no shared seed or task: the plain difference of means
            delta, p_value = fmt_number(s.gain_vs_default, signed=True), "n/a"
        else:
            delta, p_value = paired_cells(s.vs_default)
        lines.append(
            f"| {s.arm} | {s.label} | {', '.join(str(x) for x in s.seeds)} "
            f"| {fmt_stat(s.round0)} | {fmt_stat(s.peak)} "
            f"| {fmt_stat(s.rolling_gain, signed=True)} | {delta} | {p_value} "
            f"| {fmt_stat(s.skills_created, 1)} | {fmt_stat(s.skills_deprecated, 1)} "
            f"({fmt_number(s.deprecated_retired.mean, 1)} / {fmt_number(s.deprecated_evicted.mean, 1)} / "
            f"{fmt_number(s.deprecated_rollback.mean, 1)}{_refined(s.deprecated_refined.mean)}) "
            f"| {fmt_stat(s.active_at_end, 1)} | {fmt_stat(s.router_engagement)} "
            f"| {fmt_stat(s.tampering, 1)} / {fmt_stat(s.skills_retired_tampering, 1)} "
            f"| {fmt_stat(s.cheat_rate)}; {fmt_stat(s.skills_retired_cheat, 1)} "
            f"| {rollback_rate(s.rollbacks_fired, s.rollback_decisions)} |")
    lines += ["", "## Runs", "",
              "| arm | seed | rounds | round-0 | peak | rolling gain | created "
              "| deprecated (retired / evicted / rolled back) "
              "| active | engagement | tampering (capsules / retired) "
              "| cheat rate (passed / twins; retired) | rollbacks (fired / decisions) | run dir |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(runs, key=lambda r: (arm_sort_key(r.arm), str(r.seed))):
        lines.append(
            f"| {r.arm} | {r.seed} | {r.rounds_done}/{r.rounds_planned} | {fmt_number(r.round0)} "
            f"| {fmt_number(r.peak)} | {fmt_number(r.rolling_gain, signed=True)} | {r.skills_created} "
            f"| {r.skills_deprecated} ({r.deprecated_retired} / {r.deprecated_evicted} / "
            f"{r.deprecated_rollback}{_refined(r.deprecated_refined)}) | {r.active_at_end} "
            f"| {fmt_number(r.router_engagement)} "
            f"| {r.tampering} / {r.skills_retired_tampering} "
            f"| {fmt_number(r.cheat_rate)} ({r.twin_passes} / {r.twins}; {r.skills_retired_cheat}) "
            f"| {rollback_rate(r.rollbacks_fired, r.rollback_decisions)} "
            f"| {_relative(r.run_dir, root)} |")
    incomplete = [r for r in runs if not r.complete]
    if incomplete:
        lines += ["", "## Incomplete runs (not averaged)", ""]
        lines += [f"- {r.arm} seed {r.seed}: {r.rounds_done} of {r.rounds_planned} rounds "
                  f"({_relative(r.run_dir, root)})" for r in incomplete]
    if failures:
        lines += ["", "## Failed", ""]
        lines += [f"- {name}: {message}" for name, message in sorted(failures.items())]
    return "\n".join(lines) + "\n"


def report_json(summaries: list[ArmSummary], runs: list[RunResult],
                failures: dict[str, str] | None = None,
                window: int = ROLLING_WINDOW) -> dict[str, Any]:
    """``ablations.json``: the same numbers as the Markdown, machine-readable."""
    return {
        "rolling_window": window, "std": "sample (n - 1); null with one seed",
        "arms": [asdict(s) for s in summaries],
        "runs": [asdict(r) | {"complete": r.complete, "router_engagement": r.router_engagement,
                              "tampering": r.tampering, "cheat_rate": r.cheat_rate}
                 for r in runs],
        "failed": dict(sorted((failures or {}).items())),
    }


def write_report(sweep_dir: str | Path, failures: dict[str, str] | None = None
                 ) -> tuple[Path, Path, list[ArmSummary]]:
    """Write ``ablations.md`` and ``ablations.json`` into ``sweep_dir`` from the runs below it."""
    root, window = Path(sweep_dir), ROLLING_WINDOW
    runs = [run_result(d, window) for d in find_run_dirs(root)]
    summaries = summarize(runs, window)
    md, js = root / REPORT_MD, root / REPORT_JSON
    # Atomic: a disk that fills leaves the previous report, never a torn one.
    atomic_write_text(md, report_markdown(summaries, runs, root, failures, window))
    atomic_write_text(js, json.dumps(report_json(summaries, runs, failures, window), indent=2)
                      + "\n")
    return md, js, summaries
