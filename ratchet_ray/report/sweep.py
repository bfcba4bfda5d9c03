"""The report's view of several runs: arms over seeds, and a sweep's A1–A8 table.

Contracts:
- ``expand(paths)``: the run dirs covered, in argument order; a folder of run dirs (a
  ``jobs.ablations`` sweep) stands for every run dir under it and is returned in ``sweeps``;
  anything else raises ``NotARunDir``.
- ``arm_curves(runs)``: per arm, each seed's eval and train pass@1 per round, with mean and
  sample std over the seeds that finished the round.
- ``arm_headlines(runs)``: per arm, round 0 / peak / rolling gain as mean ± sample std over all
  its seeds (``arm_summary.mean_std``).
- ``sweep_table(sweep_dir)``: ``arm_summary.summarize`` of its complete runs plus the per-arm
  columns the suite registered (``suites.hooks.sweep_report``) in ``extra`` /
  ``extra_columns`` / ``extra_title`` (None when none; ``extra_error`` when they failed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ratchet_ray.arm_summary import (DEFAULT_ARM, ArmSummary, RunResult, arm_sort_key,
                                     find_run_dirs, mean_std, run_result, summarize)
from ratchet_ray.report.data import NotARunDir, RunData, check_run_dir
from ratchet_ray.report.provenance import raw_config


@dataclass
class Expanded:
    run_dirs: list[Path]
    sweeps: list[Path]


def expand(paths: Iterable[str | Path]) -> Expanded:
    """Run dirs and sweep folders from the command line's arguments (module contracts)."""
    runs: list[Path] = []
    sweeps: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise NotARunDir(f"{path} does not exist: pass a run dir or a sweep folder")
        try:
            found = [check_run_dir(path)]
        except NotARunDir:
            found = find_run_dirs(path) if path.is_dir() else []
            if not found:
                raise
            sweeps.append(path)
        runs += [r for r in found if r not in runs]
    return Expanded(runs, sweeps)


def pass_series(run: RunData, split: str) -> dict[int, float]:
    """``{round: pass@1}`` of ``split`` (eval, train) over the run's rounds that have one."""
    key = f"{split}_pass_at_1"
    return {r["round"]: r[key] for r in run.rounds if r.get(key) is not None}


def _by_arm(runs: list[RunData]) -> list[tuple[str, list[RunData]]]:
    """The runs grouped by arm, arms in the ablation table's order."""
    by_arm: dict[str, list[RunData]] = {}
    for run in runs:
        by_arm.setdefault(str(run.identity.get("arm") or DEFAULT_ARM), []).append(run)
    return [(arm, by_arm[arm]) for arm in sorted(by_arm, key=arm_sort_key)]


def arm_curves(runs: list[RunData]) -> dict[str, dict[str, Any]]:
    """``{arm: {"seeds": {label: {split: {round: p}}}, "mean": {split: [(round, mean, std)]}}}``."""
    out: dict[str, dict[str, Any]] = {}
    for arm, group in _by_arm(runs):
        seeds = {run.label: {s: pass_series(run, s) for s in ("eval", "train")}
                 for run in group}
        mean: dict[str, list[tuple[int, float, float]]] = {}
        for split in ("eval", "train"):
            rounds = sorted({r for s in seeds.values() for r in s[split]})
            stats = [(r, mean_std(s[split].get(r) for s in seeds.values())) for r in rounds]
            mean[split] = [(r, st.mean, st.std or 0.0) for r, st in stats]
        out[arm] = {"seeds": seeds, "mean": mean, "n": len(group)}
    return out


def arm_headlines(runs: list[RunData]) -> list[dict[str, Any]]:
    """Per arm: seeds and round-0 / peak / rolling-gain mean ± std (module contracts)."""
    return [{"arm": arm, "seeds": [r.identity.get("seed") for r in group],
             "rounds": [len(r.rounds) for r in group],
             **{name: mean_std(getattr(r.metrics, name) for r in group)
                for name in ("round0", "peak", "rolling_gain")}}
            for arm, group in _by_arm(runs)]


@dataclass
class SweepTable:
    root: Path
    runs: list[RunResult]
    arms: list[ArmSummary]
    extra: list[dict[str, Any]] | None
    extra_columns: tuple[str, ...] = ()
    extra_error: str | None = None
    extra_title: str = ""


def sweep_table(sweep_dir: Path) -> SweepTable:
    """The A1–A8 table of ``sweep_dir`` and the suite's extra columns (contracts)."""
    runs = [run_result(d) for d in find_run_dirs(sweep_dir)]
    title, rows, columns, error = suite_columns([Path(r.run_dir) for r in runs])
    return SweepTable(sweep_dir, runs, summarize(runs), rows, columns, error, title)


def suite_columns(run_dirs: list[Path]) -> tuple[str, list[dict[str, Any]] | None,
                                                  tuple[str, ...], str | None]:
    """``(title, rows, columns, error)``: the extra per-arm columns the runs' suite reports
    (``suites.hooks.sweep_report``, e.g. the sim suite's truth), for a sweep or for single
    runs; rows None when the suite has none, ``error`` when computing them failed."""
    from ratchet_ray.suites.hooks import sweep_report

    rows, columns, error, title = None, (), None, ""
    by_suite: dict[str, list[Path]] = {}
    for run_dir in run_dirs:
        by_suite.setdefault(raw_config(run_dir).get("suite") or "", []).append(run_dir)
    for suite, dirs in sorted(by_suite.items()):
        try:
            extra = sweep_report(suite, dirs) if suite else None
        except Exception as exc:  # noqa: BLE001 - the rest of the report stands without it
            error = f"{type(exc).__name__}: {exc}"
            continue
        if extra is not None:
            title, rows, columns = extra
    return title, rows, tuple(columns), error
