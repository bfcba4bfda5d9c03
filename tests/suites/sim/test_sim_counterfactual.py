"""Counterfactual probes (``curator.counterfactual``) against the sim world's truth.

The world makes every skill helpful on its type (+0.2) and the Router engage only the harder half
of the tasks (``route_hard_bias = 1``): a helpful skill then passes about 0.37 of its routed tasks,
so c-hat = 2 * 0.37 - 1 ~ -0.26 <= -tau and the paper's Curator retires it, while the probes
measure c_cf = pass(skill) - pass(NONE) ~ +0.2 on the same tasks and keep it.
"""

from __future__ import annotations

import statistics

import pytest

from ratchet_ray.suites.sim.truth import analyze_run

from sim_helpers import rows, run_sim, legacy_config as sim_config  # legacy-world numbers

pytestmark = pytest.mark.slow
BIASED = ("sim.n_types=4", "sim.p_helpful=1", "sim.p_neutral=0", "sim.p_harmful=0",
          "sim.p_off_target=0", "sim.helpful_effect=0.2", "sim.route_hard_bias=1",
          "curator.min_trials=40", "curator.counterfactual.fraction=1.0", "rounds=12")


def test_probes_see_what_c_hat_misjudges(ray_local, tmp_path):
    by_c_hat = run_sim(sim_config(tmp_path / "hat", *BIASED))
    by_c_cf = run_sim(sim_config(tmp_path / "cf", *BIASED,
                                 "curator.counterfactual.retire_on=c_cf"))
    # probes are extra NONE attempts: booked as llm calls, never in pass@1 or the critic's input
    assert rows(by_c_hat, "SELECT count(*) FROM llm_call WHERE role = 'probe'")[0][0] > 0
    assert rows(by_c_hat, "SELECT DISTINCT skill_id FROM capsule WHERE attempt = 1") == [("NONE",)]
    assert rows(by_c_hat, "SELECT count(*) FROM verdict v JOIN capsule c USING (capsule_id) "
                          "WHERE c.attempt = 1") == [(0,)]
    hat, cf = analyze_run(by_c_hat), analyze_run(by_c_cf)
    judged = [s for s in hat.skills if s.trials >= 40]
    assert judged and all(s.helpful for s in hat.skills)
    wrongly_retired = [s for s in judged if s.retired_round is not None]
    assert wrongly_retired, [(s.skill_id, s.c_hat, s.c_cf) for s in judged]
    for skill in wrongly_retired:  # c-hat said harmful; the probes saw the skill help
        assert skill.c_hat <= -0.1 and skill.c_cf is not None and skill.c_cf > -0.1
    assert statistics.fmean(s.c_cf for s in judged) > 0.05
    assert (statistics.fmean(abs(s.c_cf - s.c_true) for s in judged)
            < statistics.fmean(abs(s.c_hat - s.c_true) for s in judged))
    assert cf.retirement()["retired"] == 0
    assert cf.retirement()["helpful_kept"] == 1.0
