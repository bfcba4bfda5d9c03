"""Arm A9 (issue 24, beyond the paper): retirement on the upper Wilson bound of the contribution.
A clearly harmful skill goes at the trial floor, an uncertain one is kept past the paper's
N_min, and the Default's rule is untouched."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from skill_builders import TOPICS, make_skill

from ratchet_ray.settings.schema import CuratorSettings
from ratchet_ray.evidence.queries import SkillStats
from ratchet_ray.governance.curator import (curate, meets_retirement_bar,
                                            wilson_upper_contribution)

A9 = CuratorSettings(retire_rule="wilson_ucb")
DEFAULT = CuratorSettings()


def stats(successes: int, failures: int) -> SkillStats:
    return SkillStats.from_counts(successes, failures)


def test_wilson_upper_bound_by_hand():
    # 0 of 10: upper p = z^2 / (n + z^2)
    z = 1.96
    assert wilson_upper_contribution(stats(0, 10), z) == pytest.approx(
        2 * z * z / (10 + z * z) - 1, abs=1e-12)
    # 40 of 100: p=0.4, centre 0.4192, spread 1.96*sqrt(0.0024+0.000096)
    p, n = 0.4, 100
    upper = (p + z * z / (2 * n) + z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (
        1 + z * z / n)
    assert wilson_upper_contribution(stats(40, 60), z) == pytest.approx(2 * upper - 1, abs=1e-12)
    assert wilson_upper_contribution(stats(0, 0), z) == 1.0


def test_counterfactual_ties_count_half():
    # c_cf stats: 10 pairs, 2 wins, 6 losses, 2 ties -> p-hat = (2 + 1) / 10
    cf = SkillStats(trials=10, successes=2, failures=6, contribution=-0.4)
    assert wilson_upper_contribution(cf, 1.96) == pytest.approx(
        wilson_upper_contribution(stats(3, 7), 1.96), abs=1e-12)


def test_clearly_harmful_retires_at_the_floor_default_waits_for_n_min():
    harmful = stats(0, 5)
    assert meets_retirement_bar(harmful, A9) and not meets_retirement_bar(harmful, DEFAULT)
    assert not meets_retirement_bar(stats(0, 4), A9)  # below ucb_min_trials = 5
    decision = curate([make_skill("bad", TOPICS[0])], {"bad": harmful}, A9)[0]
    assert decision.action == "retire"
    assert "Wilson upper bound on c (z=1.96) <= -0.1 after >= 5 trials" in decision.reason
    assert "upper bound -0." in decision.reason


def test_uncertain_skill_is_kept_past_n_min_under_a9():
    uncertain = stats(40, 60)  # c = -0.2 over 100: the Default retires it
    assert meets_retirement_bar(uncertain, DEFAULT) and not meets_retirement_bar(uncertain, A9)
    decision = curate([make_skill("meh", TOPICS[1])], {"meh": uncertain}, A9)[0]
    assert decision.action == "keep"
    young = curate([make_skill("new", TOPICS[2])], {"new": stats(1, 2)}, A9)[0]
    assert young.action == "insufficient" and "needs 5 trials" in young.reason


def test_helpful_skill_is_never_retired_under_a9():
    assert not meets_retirement_bar(stats(60, 40), A9)
    assert not meets_retirement_bar(stats(3, 2), A9)


@given(st.integers(min_value=0, max_value=300), st.integers(min_value=0, max_value=300))
def test_a9_retires_only_skills_whose_score_is_below_the_bar(successes, failures):
    s = stats(successes, failures)
    if meets_retirement_bar(s, A9):
        # the point estimate is below the bound, so it is below -tau too
        assert s.contribution <= -A9.retire_tau and s.trials >= A9.ucb_min_trials
    assert wilson_upper_contribution(s, 1.96) >= s.contribution - 1e-12


def test_the_default_rule_is_the_papers():
    assert DEFAULT.retire_rule == "threshold"
    assert meets_retirement_bar(stats(45, 55), DEFAULT)  # exactly -0.10 after 100
    assert not meets_retirement_bar(stats(0, 99), DEFAULT)
