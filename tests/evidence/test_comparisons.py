"""Paired statistics (``evidence.comparisons``) against hand-computed cases."""

from __future__ import annotations

import math

import pytest

from ratchet_ray.evidence.comparisons import (
    Interval, headline, mcnemar_exact, paired_comparison, wilson)


def outcomes(table: dict[int, str]) -> dict[tuple[int, str], bool]:
    """``{round: "1010"}`` -> one task per character, ``1`` = passed."""
    return {(r, f"t{i}"): c == "1" for r, row in table.items() for i, c in enumerate(row)}


def test_mcnemar_exact_matches_the_binomial_tail_by_hand():
    # b=10, c=2: 2 * P(X <= 2), X ~ Bin(12, 1/2) = 2 * (1 + 12 + 66) / 4096.
    assert mcnemar_exact(10, 2) == pytest.approx(2 * 79 / 4096)
    assert mcnemar_exact(2, 10) == mcnemar_exact(10, 2)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == 1.0  # capped: the two tails overlap at the centre
    assert mcnemar_exact(6, 0) == pytest.approx(2 / 64)


def test_wilson_interval_by_hand():
    interval = wilson(5, 10)
    z = 1.959963984540054
    half = z * math.sqrt(0.25 / 10 + z * z / 400) / (1 + z * z / 10)
    assert interval.low == pytest.approx(0.5 - half)
    assert interval.high == pytest.approx(0.5 + half)
    assert wilson(0, 0) is None


def test_rolling_gain_is_the_window_mean_minus_round_zero():
    run = outcomes({0: "0000", 1: "1000", 2: "1100", 3: "1110"})
    assert headline(run, window=2).rolling_gain == pytest.approx((0.5 + 0.75) / 2 - 0.0)
    assert headline(run, window=10).rolling_gain == pytest.approx((0.25 + 0.5 + 0.75) / 3)


def test_identical_arms_differ_by_exactly_zero():
    seeds = {s: outcomes({0: "0101", 1: "1101", 2: "1111"}) for s in (42, 7, 13)}
    result = paired_comparison("A7", seeds, {s: dict(v) for s, v in seeds.items()})
    assert result.diff == 0.0
    assert result.interval == Interval(0.0, 0.0)
    assert (result.arm_better, result.default_better, result.p_value) == (0, 0, 1.0)
    assert not result.real


def test_an_arm_that_loses_every_gain_is_told_apart_and_the_pairing_counts():
    default = {s: outcomes({0: "0" * 20, 1: "1" * 15 + "0" * 5, 2: "1" * 16 + "0" * 4})
               for s in (42, 7, 13)}
    flat = {s: outcomes({0: "0" * 20, 1: "0" * 20, 2: "0" * 20}) for s in (42, 7, 13)}
    result = paired_comparison("A1", flat, default, window=10)
    assert result.diff == pytest.approx(-(15 + 16) / 40)
    assert result.interval.high < 0 and result.real
    assert (result.arm_better, result.default_better) == (0, 3 * 31)
    assert result.p_value == pytest.approx(2 / 2 ** 93)
    assert result.seeds == [7, 13, 42] and result.tasks == 60


def test_the_bootstrap_is_fixed_by_its_seed_and_pairs_only_shared_seeds_and_tasks():
    default = {42: outcomes({0: "0110", 1: "1110"}), 7: outcomes({0: "0000", 1: "0101"})}
    arm = {42: outcomes({0: "0110", 1: "1111"}), 7: outcomes({0: "0000", 1: "1101"}),
           99: outcomes({0: "1111", 1: "1111"})}
    arm[42].pop((1, "t3"))  # a task missing in one round is left out of that seed's pairs
    first = paired_comparison("A2", arm, default, samples=500, seed=3)
    again = paired_comparison("A2", arm, default, samples=500, seed=3)
    assert first == again
    assert first.seeds == [7, 42] and first.tasks == 3 + 4
    # seed 42 on t0..t2: gains 1/3 vs 1/3; seed 7 on t0..t3: 3/4 vs 2/4.
    assert first.diff == pytest.approx((0 + 0.25) / 2)
    assert first.interval.low <= first.diff <= first.interval.high
    assert paired_comparison("A2", {1: arm[7]}, default) is None


def test_a_headline_carries_its_n_and_says_when_the_gain_is_noise():
    noisy = headline(outcomes({0: "010", 1: "110", 2: "011"}))
    assert (noisy.round0.value, noisy.round0.n) == (pytest.approx(1 / 3), 3)
    assert noisy.peak_round == 1 and noisy.tasks == 3
    assert noisy.within_noise
    clear = headline(outcomes({0: "0" * 40, 1: "1" * 36 + "0" * 4, 2: "1" * 38 + "00"}))
    assert clear.rolling_gain == pytest.approx(0.925)
    assert not clear.within_noise and clear.gain_interval.low > 0.8
    assert headline({}).round0 is None


def test_no_pairs_without_a_shared_seed_or_a_second_shared_round():
    default = {42: outcomes({0: "01", 1: "11"})}
    assert paired_comparison("A1", {7: outcomes({0: "01", 1: "11"})}, default) is None
    assert paired_comparison("A1", {42: outcomes({0: "00"})}, default) is None
