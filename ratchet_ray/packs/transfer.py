"""Transfer of a skill pack, measured: one run B's row, and the table over runs and seeds
(``ratchet skill transfer``, ``ratchet sim-transfer``; docs/skill-packs.md). Only reads run dirs.

Contracts:
- A ``Judge`` names which skills of a finished run are harmful *there*, and the word its
  columns carry (``label``): ``truth_judge(suite)`` (``harmful``, the suite's ``skill_truth``
  hook; None for a suite that knows none), ``measured_judge(min_pairs)`` (``harmful_cf``:
  retired in the run, or c_cf there below 0 over at least ``min_pairs`` probed pairs), and
  ``judge_for(suite, min_pairs)``: the truth where there is one, else the measured judge.
- ``transfer_row(run_dir, imported, condition, arm, judge=None)``: round-0 eval pass@1, the
  rolling mean and gain (``metrics.loop_metrics``), the imported skills, those ACTIVE at the end
  (``imported_kept``), how many of them the judge calls harmful and of those the ones still
  ACTIVE, every harmful skill still ACTIVE (native ones too), and ``settled_round``: the last
  round a skill was retired or evicted (None: none was). ``judge`` None: the run suite's.
- ``columns(label)``: the row's keys in table order; ``transfer_table(rows, cols=None)``: one
  Markdown table (``cols`` None: ``columns("harmful")``).
- ``imported_records(run_dir, imported)``: what run B measured of each imported skill.
- ``summary_rows(rows)``: per (condition, arm) in first-seen order: n, mean ± sample std of
  round0, rolling_mean and rolling_gain, the mean of imported_kept, the sums of the harm
  counts, and the settled rounds seen.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from ratchet_ray.arm_summary import fmt_stat, mean_std
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.metrics import loop_metrics
from ratchet_ray.report.data import round_rows, skill_events, skill_rows
from ratchet_ray.run_config.files import load_config

HARMFUL = "harmful"

Verdicts = tuple[dict[str, str], set[str]]
"""(status of every skill of the run by id, lowercase; the ids of those the judge calls
harmful)."""


@dataclass(frozen=True)
class Judge:
    """Which skills of a finished run are harmful there (module contract)."""

    label: str
    judge: Callable[[Path], Verdicts]


def truth_judge(suite: str) -> Judge | None:
    """The judge of a world that knows each skill's true effect, or None (module contract)."""
    from ratchet_ray.suites.hooks import skill_truth

    truth = skill_truth(suite)
    return None if truth is None else Judge(HARMFUL, truth)


def measured_judge(min_pairs: int) -> Judge:
    """Harmful where measured in the run itself: retired there, or c_cf < 0 over at least
    ``min_pairs`` probed pairs (module contract)."""
    if min_pairs < 1:
        raise ValueError(f"min_pairs={min_pairs}: a c_cf needs at least 1 probed pair")

    def judge(run_dir: Path) -> Verdicts:
        with EvidenceStore(run_dir).connect() as con:
            rows = skill_rows(con, run_dir)
        harmful = {r.skill_id for r in rows
                   if r.end_event == "retired"
                   or (r.cf_pairs >= min_pairs and r.c_cf is not None and r.c_cf < 0)}
        return {r.skill_id: r.status for r in rows}, harmful

    return Judge("harmful_cf", judge)


def judge_for(suite: str, min_pairs: int = 5) -> Judge:
    """The suite's truth where it knows one, else ``measured_judge(min_pairs)``."""
    return truth_judge(suite) or measured_judge(min_pairs)


def columns(label: str = HARMFUL) -> tuple[str, ...]:
    """The row's keys in table order (module contract)."""
    return ("condition", "arm", "round0", "rolling_mean", "rolling_gain", "imported",
            "imported_kept", f"imported_{label}", f"imported_{label}_kept", f"{label}_kept",
            "settled_round")


def _r3(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def transfer_row(run_dir: str | Path, imported: Iterable[str], condition: str, arm: str,
                 judge: Judge | None = None) -> dict[str, Any]:
    """One run's transfer numbers (module contract)."""
    run_dir, imported = Path(run_dir), set(imported)
    judge = judge or judge_for(load_config([run_dir / "config.yaml"]).suite)
    metrics = loop_metrics(round_rows(run_dir))
    status, harmful = judge.judge(run_dir)
    with EvidenceStore(run_dir).connect() as con:
        shed = max((e["round"] for e in skill_events(con)
                    if e["event"] in ("retired", "evicted")), default=None)
    active = {i for i, s in status.items() if s == "active"}
    label = judge.label
    return {
        "condition": condition, "arm": arm,
        "round0": _r3(metrics.round0), "rolling_mean": _r3(metrics.rolling_mean),
        "rolling_gain": _r3(metrics.rolling_gain),
        "imported": len(imported & set(status)),
        "imported_kept": len(imported & active),
        f"imported_{label}": len(imported & harmful),
        f"imported_{label}_kept": len(imported & harmful & active),
        f"{label}_kept": len(harmful & active),
        "settled_round": None if shed is None else int(shed),
    }


def imported_records(run_dir: str | Path, imported: Iterable[str]) -> list[dict[str, Any]]:
    """What run B measured of each imported skill (module contract), sorted by id."""
    run_dir, imported = Path(run_dir), set(imported)
    with EvidenceStore(run_dir).connect() as con:
        rows = [r for r in skill_rows(con, run_dir) if r.skill_id in imported]
    return [{"skill": r.skill_id, "status": r.status, "trials": r.trials,
             "c_hat": _r3(r.c_hat), "cf_pairs": r.cf_pairs, "c_cf": _r3(r.c_cf),
             "ended": f"{r.end_event} in round {r.end_round}" if r.end_event else None}
            for r in sorted(rows, key=lambda r: r.skill_id)]


def _cell(column: str, value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:+.3f}" if "gain" in column or column.startswith("c_") else f"{value:.3f}"
    return str(value)


def transfer_table(rows: list[dict[str, Any]], cols: Iterable[str] | None = None) -> str:
    """The rows as a Markdown table (module contract)."""
    cols = tuple(cols or columns())
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_cell(c, r.get(c)) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _mean_std(values: list[float | None], signed: bool = False) -> str:
    return fmt_stat(mean_std(values), signed=signed, missing="-")


def summary_rows(rows: list[dict[str, Any]], label: str = HARMFUL) -> list[dict[str, Any]]:
    """Per (condition, arm) over the rows' seeds (module contract)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["condition"], row["arm"]), []).append(row)
    return [{
        "condition": condition, "arm": arm, "n": len(group),
        "round0": _mean_std([r["round0"] for r in group]),
        "rolling_mean": _mean_std([r["rolling_mean"] for r in group]),
        "rolling_gain": _mean_std([r["rolling_gain"] for r in group], signed=True),
        "imported_kept": f"{statistics.fmean(r['imported_kept'] for r in group):.1f}",
        f"imported_{label} (kept)": (f"{sum(r[f'imported_{label}'] for r in group)} "
                                     f"({sum(r[f'imported_{label}_kept'] for r in group)})"),
        f"{label}_kept": sum(r[f"{label}_kept"] for r in group),
        "settled_round": ", ".join(_cell("settled_round", r["settled_round"]) for r in group),
    } for (condition, arm), group in groups.items()]
