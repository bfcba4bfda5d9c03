"""Any two runs compared task by task (``ratchet compare`` and the report's comparison section):
paired statistics outside an ablation sweep.

Two runs pair up when they ran the same eval tasks under the same seed (which fixes split, task
order and sampling): their first-attempt eval capsules pair by ``(round, task)``. Others are
refused (``NotPaired``, one line naming what differs): an unpaired difference would mix the
change with the draw of tasks.

``paired_runs(reference, other)`` -> ``RunPair``: per round both finished, the paired difference
of eval pass@1 (other minus reference, on the tasks both graded), its 95 % bootstrap interval
(tasks resampled, one draw for both) and the exact McNemar p; and the rolling gain's paired
difference as a sweep computes it (``comparisons.paired_comparison``). ``describe`` gives the
terminal's lines, ``pair_rows`` the report's rows. Bootstraps are seeded
(``comparisons.BOOTSTRAP_SEED``): the same runs give the same intervals.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ratchet_ray.evidence.comparisons import (BOOTSTRAP_SAMPLES, BOOTSTRAP_SEED, Interval,
                                              Outcomes, PairedComparison, eval_outcomes,
                                              mcnemar_exact, paired_comparison)
from ratchet_ray.metrics import ROLLING_WINDOW


class NotPaired(ValueError):
    """Two runs that cannot be compared task by task; the message says what differs."""


@dataclass(frozen=True)
class RoundPair:
    round: int
    tasks: int
    reference: float
    """The reference run's pass@1 on the paired tasks."""
    other: float
    diff: float
    interval: Interval
    other_better: int
    """Tasks the other run passed and the reference failed."""
    reference_better: int
    p_value: float


@dataclass(frozen=True)
class RunPair:
    reference: str
    other: str
    seed: int
    rounds: list[RoundPair]
    rolling: PairedComparison | None
    """None when the runs share fewer than two rounds (no rolling gain)."""


def _identity(run_dir: Path) -> tuple[int, list[str]]:
    """The run's seed and eval task ids, from its config.yaml (the resolved config the run
    wrote: read as data, the evidence layer resolves nothing) and eval_ids.json."""
    from ratchet_ray.settings.schema import read_config_file

    try:
        seed = read_config_file(run_dir / "config.yaml")["seed"]
        ids = json.loads((run_dir / "eval_ids.json").read_text())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        why = (f"{exc.strerror}: {exc.filename}" if isinstance(exc, OSError) and exc.strerror
               else f"no {exc} in its config.yaml" if isinstance(exc, KeyError) else str(exc))
        raise NotPaired(f"{run_dir}: its seed or eval task ids cannot be read ({why}); compare "
                        "run dirs that `ratchet run` wrote") from exc
    return int(seed), [str(i) for i in ids]


def check_paired(reference: Path, other: Path) -> int:
    """The seed both runs share, else ``NotPaired`` naming what differs."""
    seed_a, ids_a = _identity(reference)
    seed_b, ids_b = _identity(other)
    if seed_a != seed_b:
        raise NotPaired(f"{other.name} ran seed {seed_b} and {reference.name} seed {seed_a}: "
                        "a paired comparison needs the same seed and eval tasks; compare runs "
                        "of one --seed (and one --n-eval / --subset)")
    if set(ids_a) != set(ids_b):
        shared = len(set(ids_a) & set(ids_b))
        raise NotPaired(f"{other.name} and {reference.name} do not share their eval tasks "
                        f"({len(ids_b)} and {len(ids_a)} tasks, {shared} in common): a paired "
                        "comparison needs the same eval split; compare runs of one --seed, "
                        "--n-eval / --subset and dataset")
    return seed_a


def round_pair(reference: Outcomes, other: Outcomes, round_: int,
               samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED) -> RoundPair:
    """One round's paired difference (module contract) on the tasks both runs graded in it."""
    tasks = sorted({t for r, t in reference if r == round_} & {t for r, t in other if r == round_})
    a = np.array([1.0 if reference[(round_, t)] else 0.0 for t in tasks])
    b = np.array([1.0 if other[(round_, t)] else 0.0 for t in tasks])
    per_task = b - a
    draws = np.random.default_rng(seed).integers(0, len(tasks), size=(samples, len(tasks)))
    low, high = np.percentile(per_task[draws].mean(axis=1), [2.5, 97.5])
    better, worse = int((per_task > 0).sum()), int((per_task < 0).sum())
    return RoundPair(round=round_, tasks=len(tasks), reference=float(a.mean()),
                     other=float(b.mean()), diff=float(per_task.mean()),
                     interval=Interval(float(low), float(high)), other_better=better,
                     reference_better=worse, p_value=mcnemar_exact(better, worse))


def paired_runs(reference: Path, other: Path, window: int = ROLLING_WINDOW) -> RunPair:
    """``other`` against ``reference``, round by round and on rolling gain (module contract)."""
    reference, other = Path(reference), Path(other)
    seed = check_paired(reference, other)
    ref_out, other_out = eval_outcomes(reference), eval_outcomes(other)
    rounds = sorted({r for r, _ in ref_out} & {r for r, _ in other_out})
    rows = [round_pair(ref_out, other_out, r) for r in rounds]
    rows = [r for r in rows if r.tasks]
    if not rows:
        raise NotPaired(f"{other.name} and {reference.name} share no graded eval round yet; "
                        "compare them once both have finished a round")
    rolling = paired_comparison(other.name, {seed: other_out}, {seed: ref_out}, window)
    return RunPair(reference=reference.name, other=other.name, seed=seed, rounds=rows,
                   rolling=rolling)


def _verdict(interval: Interval) -> str:
    return "real" if interval.excludes_zero() else "within noise"


def pair_rows(pair: RunPair) -> list[list[str]]:
    """``[what, n, reference, other, diff, 95 % interval, discordant +/-, McNemar p, verdict]``
    per round, then the rolling gain's row."""
    rows = [[f"round {r.round} pass@1", str(r.tasks), f"{r.reference:.3f}", f"{r.other:.3f}",
             f"{r.diff:+.3f}", r.interval.describe(), f"{r.other_better}/{r.reference_better}",
             f"{r.p_value:.3g}", _verdict(r.interval)] for r in pair.rounds]
    c = pair.rolling
    if c is not None:
        rows.append(["rolling gain", str(c.tasks), "", "", f"{c.diff:+.3f}", c.interval.describe(),
                     f"{c.arm_better}/{c.default_better}", f"{c.p_value:.3g}",
                     _verdict(c.interval)])
    return rows


PAIR_HEAD = ["", "tasks", "reference", "other", "Δ", "95% interval", "+/-", "McNemar p",
             "verdict"]


def describe(pair: RunPair) -> list[str]:
    """The comparison as aligned text lines (the terminal's)."""
    rows = [PAIR_HEAD, *pair_rows(pair)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(PAIR_HEAD))]
    lines = [f"{pair.other} vs {pair.reference} (seed {pair.seed}; Δ = other - reference; "
             "+/- = tasks only the other / only the reference passed)"]
    lines += ["  " + "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
              for row in rows]
    return lines
