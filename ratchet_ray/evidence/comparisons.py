"""Paired statistics over eval outcomes: is an arm's difference from the Default real, and how
sure is one run's headline?

Every arm of a sweep runs the same seeds, and a seed fixes the eval split, so two arms' eval
outcomes pair up by ``(seed, round, task)``; paired statistics use that, where means ± std over
seeds throw it away. Outcomes are ``{(round, task_id): passed}`` of a run's first-attempt eval
capsules (``eval_outcomes``; an infrastructure failure counts as a failure).

``paired_comparison`` pairs two arms on the seeds both have (with at least two rounds in common)
and, per seed, the tasks both have in every round used. Its difference is the mean over seeds
of the per-seed rolling-gain difference (``metrics.loop_metrics``'s rolling gain, from the
outcomes), with a percentile bootstrap interval (seeds resampled, then tasks within each seed,
the same task draws for both arms) and the exact McNemar test on the discordant window pairs.
Identical outcomes give a difference of exactly 0, an interval [0, 0] and p = 1. ``headline``
gives a run's round-0 and peak pass@1 with Wilson intervals and its rolling gain with a
bootstrap interval over tasks. Every bootstrap uses ``numpy.random.default_rng(BOOTSTRAP_SEED)``
by default: the same evidence gives the same interval.

McNemar treats the pairs as independent, but a task recurs every round, so its p is optimistic
when outcomes are sticky; the bootstrap resamples whole tasks and is the one to read for "is the
gain difference real".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.metrics import ROLLING_WINDOW

Z95 = 1.959963984540054
BOOTSTRAP_SEED = 20260522
BOOTSTRAP_SAMPLES = 2000

Outcomes = Mapping[tuple[int, str], bool]


def eval_outcomes(run_dir: str | Path) -> dict[tuple[int, str], bool]:
    """``{(round, task_id): passed}`` of the run's first-attempt eval capsules."""
    with EvidenceStore(run_dir).connect() as con:
        return outcomes_from(con)


def outcomes_from(con) -> dict[tuple[int, str], bool]:
    """``eval_outcomes`` over an open evidence connection."""
    return {(int(r), str(t)): bool(p) for r, t, p in nq.fetch_all(con, "eval_first_attempts")}


def _rounds(outcomes: Outcomes) -> list[int]:
    return sorted({r for r, _ in outcomes})


def window_rounds(rounds: list[int], window: int = ROLLING_WINDOW) -> list[int]:
    """The rounds the rolling gain averages: the last ``window`` after the first (all rounds
    when there is only one), as ``metrics.loop_metrics`` chooses them."""
    later = rounds[1:] or rounds
    return later[-window:]


def _tasks_in_all(outcomes: Outcomes, rounds: list[int]) -> set[str]:
    """The tasks graded in every one of ``rounds``."""
    return set.intersection(*[{t for r, t in outcomes if r == rnd} for rnd in rounds])


def _matrix(outcomes: Outcomes, rounds: list[int], tasks: list[str]) -> np.ndarray:
    """``rounds x tasks`` 0/1 matrix."""
    data = np.array([[1.0 if outcomes.get((r, t)) else 0.0 for t in tasks] for r in rounds])
    return data.reshape(len(rounds), len(tasks))


def _gain(matrix: np.ndarray, window: list[int], rounds: list[int],
          columns: np.ndarray | None = None) -> np.ndarray | float:
    """Rolling gain of a ``rounds x tasks`` matrix; with ``columns`` (``B x n`` task draws) one
    gain per draw."""
    first = rounds.index(rounds[0])
    rows = [rounds.index(r) for r in window]
    if columns is None:
        if matrix.shape[1] == 0:
            return 0.0
        return float(matrix[rows].mean() - matrix[first].mean())
    drawn = matrix[:, columns]  # rounds x B x n
    return drawn[rows].mean(axis=(0, 2)) - drawn[first].mean(axis=1)


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def describe(self, digits: int = 3) -> str:
        return f"[{self.low:+.{digits}f}, {self.high:+.{digits}f}]"


@dataclass(frozen=True)
class PairedComparison:
    arm: str
    seeds: list[int]
    tasks: int
    """Paired tasks summed over seeds."""
    window: list[int]
    diff: float
    """Mean over seeds of (arm's rolling gain - Default's), on the paired tasks."""
    interval: Interval
    arm_better: int
    """Discordant window pairs where the arm passed and the Default failed."""
    default_better: int
    p_value: float

    @property
    def real(self) -> bool:
        """The 95 % interval excludes 0: the difference is not noise."""
        return self.interval.excludes_zero()


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs: twice the smaller
    binomial(b + c, 1/2) tail, capped at 1."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def paired_comparison(arm: str, runs: Mapping[int, Outcomes], default: Mapping[int, Outcomes],
                      window: int = ROLLING_WINDOW, samples: int = BOOTSTRAP_SAMPLES,
                      seed: int = BOOTSTRAP_SEED) -> PairedComparison | None:
    """The arm against the Default on shared seeds (module contract); None if nothing is shared."""
    seeds = sorted(set(runs) & set(default))
    pairs = []  # per seed: (arm matrix, default matrix, window, rounds)
    for s in seeds:
        rounds = sorted(set(_rounds(runs[s])) & set(_rounds(default[s])))
        if len(rounds) < 2:  # a rolling gain needs a round after round 0
            continue
        shared = sorted(_tasks_in_all(runs[s], rounds) & _tasks_in_all(default[s], rounds))
        if shared:
            pairs.append((s, _matrix(runs[s], rounds, shared), _matrix(default[s], rounds, shared),
                          window_rounds(rounds, window), rounds))
    if not pairs:
        return None
    diffs = np.array([_gain(a, w, r) - _gain(d, w, r) for _, a, d, w, r in pairs])
    rng = np.random.default_rng(seed)
    per_seed = []  # B bootstrap gain differences per seed
    for _, a, d, w, r in pairs:
        columns = rng.integers(0, a.shape[1], size=(samples, a.shape[1]))
        per_seed.append(_gain(a, w, r, columns) - _gain(d, w, r, columns))
    draws = np.array(per_seed)  # seeds x B
    picks = rng.integers(0, len(pairs), size=(samples, len(pairs)))
    boot = draws[picks, np.arange(samples)[:, None]].mean(axis=1)
    low, high = np.percentile(boot, [2.5, 97.5])
    b = c = 0
    for _, a, d, w, r in pairs:
        rows = [r.index(x) for x in w]
        b += int(((a[rows] == 1) & (d[rows] == 0)).sum())
        c += int(((a[rows] == 0) & (d[rows] == 1)).sum())
    return PairedComparison(
        arm=arm, seeds=[p[0] for p in pairs], tasks=sum(p[1].shape[1] for p in pairs),
        window=sorted({x for p in pairs for x in p[3]}), diff=float(diffs.mean()),
        interval=Interval(float(low), float(high)), arm_better=b, default_better=c,
        p_value=mcnemar_exact(b, c))


def wilson(successes: float, n: int, z: float = Z95) -> Interval | None:
    """Wilson score interval of a proportion (None without trials)."""
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return Interval(max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class Proportion:
    value: float
    n: int
    interval: Interval


@dataclass(frozen=True)
class Headline:
    """One run's headline numbers with their n and 95 % intervals."""

    round0: Proportion | None
    peak: Proportion | None
    peak_round: int | None
    rolling_gain: float | None
    gain_interval: Interval | None
    tasks: int

    @property
    def within_noise(self) -> bool:
        """The rolling gain's interval includes 0 (or there is none to judge by)."""
        return self.gain_interval is None or not self.gain_interval.excludes_zero()


def headline(outcomes: Outcomes, window: int = ROLLING_WINDOW, samples: int = BOOTSTRAP_SAMPLES,
             seed: int = BOOTSTRAP_SEED) -> Headline:
    """Round 0 and peak pass@1 (n tasks, Wilson interval) and the rolling gain with a bootstrap
    interval over the tasks present in every round (module contract)."""
    rounds = _rounds(outcomes)
    if not rounds:
        return Headline(None, None, None, None, None, 0)

    def proportion(rnd: int) -> Proportion:
        got = [p for (r, _), p in outcomes.items() if r == rnd]
        return Proportion(sum(got) / len(got), len(got), wilson(sum(got), len(got)))

    per_round = {r: proportion(r) for r in rounds}
    peak_round = max(rounds, key=lambda r: (per_round[r].value, -r))
    tasks = sorted(_tasks_in_all(outcomes, rounds))
    matrix = _matrix(outcomes, rounds, tasks)
    gain = interval = None
    if len(rounds) > 1 and tasks:
        w = window_rounds(rounds, window)
        gain = float(_gain(matrix, w, rounds))
        columns = np.random.default_rng(seed).integers(0, len(tasks), size=(samples, len(tasks)))
        low, high = np.percentile(_gain(matrix, w, rounds, columns), [2.5, 97.5])
        interval = Interval(float(low), float(high))
    return Headline(per_round[rounds[0]], per_round[peak_round], peak_round, gain, interval,
                    len(tasks))
