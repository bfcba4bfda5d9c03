"""Curator (retirement, eviction order) and rollback gate, at their boundaries."""

from __future__ import annotations

import pytest
from skill_builders import make_skill
from hypothesis import given
from hypothesis import strategies as st

from ratchet_ray.settings.schema import CuratorSettings
from ratchet_ray.evidence.queries import SkillStats
from ratchet_ray.governance.capacity import eviction_order
from ratchet_ray.governance.curator import curate, meets_retirement_bar
from ratchet_ray.governance.rollback import RollbackGate

DEFAULT = CuratorSettings()


def stats(successes: int, failures: int) -> SkillStats:
    return SkillStats.from_counts(successes, failures)


def test_99_trials_is_not_enough_100_is():
    assert not meets_retirement_bar(stats(30, 69), DEFAULT)  # c = -0.394 but only 99 trials
    assert meets_retirement_bar(stats(30, 70), DEFAULT)


@pytest.mark.parametrize("successes, failures", [(45, 55), (99, 121), (360, 440), (990, 1210)])
def test_contribution_of_exactly_minus_tenth_retires(successes, failures):
    s = stats(successes, failures)
    assert s.contribution == -0.10
    assert meets_retirement_bar(s, DEFAULT)


def test_just_above_minus_tenth_is_kept():
    assert not meets_retirement_bar(stats(451, 549), DEFAULT)  # c = -0.098


@given(st.integers(1, 400), st.integers(0, 400), st.integers(0, 100).map(lambda k: k / 100))
def test_rule_agrees_with_exact_decimal_arithmetic(n, succ_raw, tau):
    successes = min(succ_raw, n)
    settings = CuratorSettings(retire_tau=tau, min_trials=1)
    expected = (successes - (n - successes)) * 100 <= -round(tau * 100) * n
    assert meets_retirement_bar(stats(successes, n - successes), settings) == expected


def test_harsh_retirement_a4_retires_at_zero():
    harsh = CuratorSettings(min_trials=20, retire_tau=0.0)
    assert meets_retirement_bar(stats(10, 10), harsh)
    assert not meets_retirement_bar(stats(11, 9), harsh)
    assert not meets_retirement_bar(stats(5, 14), harsh)


def test_curate_reports_every_active_skill_and_exempts_do_not_retire():
    skills = [make_skill("bad", "prime divisor sqrt"),
              make_skill("locked", "sliding window span", do_not_retire=True),
              make_skill("young", "regex pattern match"), make_skill("good", "heap priority queue"),
              make_skill("old", "date parsing iso", status="deprecated")]
    table = {"bad": stats(40, 60), "locked": stats(10, 90), "young": stats(0, 50),
             "good": stats(60, 40), "old": stats(0, 500)}
    decisions = {d.skill_id: d for d in curate(skills, table, DEFAULT)}
    assert sorted(decisions) == ["bad", "good", "locked", "young"]
    assert [decisions[k].action for k in ("bad", "good", "locked", "young")] == [
        "retire", "keep", "exempt", "insufficient"]
    assert decisions["locked"].contribution == -0.8 and "would be retired" in decisions["locked"].reason


def test_eviction_order_lowest_first_never_exempt_untried_last_among_ties():
    skills = [make_skill("a", "prime divisor sqrt"), make_skill("b", "sliding window span"),
              make_skill("c", "regex pattern match", do_not_retire=True),
              make_skill("d", "heap priority queue"), make_skill("e", "date parsing iso")]
    table = {"a": stats(5, 5), "b": stats(1, 9), "c": stats(0, 10), "e": stats(20, 20)}
    assert eviction_order(skills, table) == ["b", "e", "a", "d"]


def test_eviction_ranks_imports_on_probation_by_the_lower_bound_of_what_they_earned_here():
    """A native skill by its c-hat; an import on probation by the 95 % Wilson lower bound of its
    c-hat here (-1 untried), first on a tie: 18 of 20 here (bound about +0.40) outranks an
    untried native (0), not a native at +0.5; untried it ties a native at -1 and goes first."""
    topics = ["prime divisor sqrt", "sliding window span", "heap priority queue",
              "date parsing iso", "regex pattern match"]
    ids = ["p_untried", "p_good", "n_untried", "n_good", "n_bad"]
    skills = [make_skill(i, t) for i, t in zip(ids, topics)]
    table = {"p_good": stats(18, 2), "n_good": stats(15, 5), "n_bad": stats(0, 5)}
    probation = {"p_untried", "p_good"}
    assert eviction_order(skills, table, probation=probation) == [
        "p_untried", "n_bad", "n_untried", "p_good", "n_good"]
    assert eviction_order(skills, table) == [  # without probation: by c-hat alone
        "n_bad", "n_untried", "p_untried", "n_good", "p_good"]


# ------------------------------------------------------------------ rollback gate
def run(gate: RollbackGate, series: list[float], start: int = 0):
    return [gate.observe(start + i, p) for i, p in enumerate(series)]


def test_five_consecutive_regressions_fire_exactly_once():
    gate = RollbackGate(threshold=0.10, consecutive=5)
    decisions = run(gate, [0.40, 0.60, 0.45, 0.45, 0.45, 0.45, 0.45, 0.45, 0.45])
    assert [d.fire for d in decisions] == [False] * 6 + [True, False, False]
    assert decisions[6].restore_round == 1 and decisions[6].regressed_streak == 5
    assert [d.regressed_streak for d in decisions[7:]] == [1, 2]


def test_one_recovery_resets_the_counter():
    gate = RollbackGate(threshold=0.10, consecutive=5)
    decisions = run(gate, [0.6, 0.4, 0.4, 0.4, 0.4, 0.55, 0.4, 0.4, 0.4, 0.4])
    assert not any(d.fire for d in decisions)
    assert decisions[5].regressed_streak == 0 and decisions[-1].regressed_streak == 4
    assert gate.observe(10, 0.4).fire


def test_exactly_threshold_below_best_is_not_a_regression():
    gate = RollbackGate(threshold=0.10, consecutive=1)
    assert not gate.observe(0, 0.4).fire
    assert not gate.observe(1, 0.3).regressed  # 0.4 - 0.3 = 0.10000000000000003 in floats
    assert gate.observe(2, 0.275).fire


def test_gate_rebuilds_from_history_and_disabled_gate_never_fires():
    series = [0.5, 0.7, 0.3, 0.3, 0.3, 0.71, 0.2, 0.2]
    live = RollbackGate(0.10, 3)
    run(live, series)
    replayed = RollbackGate.from_history(list(enumerate(series))[::-1], 0.10, 3)
    assert vars(replayed) == vars(live)
    off = RollbackGate(0.10, 1, enabled=False)
    assert not any(d.fire for d in run(off, series))


def test_gate_rejects_bad_observations():
    gate = RollbackGate(0.10, 5)
    gate.observe(3, 0.5)
    with pytest.raises(ValueError, match="increasing order"):
        gate.observe(3, 0.5)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        gate.observe(4, 1.5)
