"""A short real run of the calibrated sim world (Ray on 127.0.0.1, seed 42, 60 train / 40
eval tasks, 20 rounds), its claims kept apart by what they rest on
(``suites.sim.vs_paper.ARM_BASIS``):

- **Predictions** (no mechanism was added to the world for the arm): the Default, whose row the
  world was fitted on, learns; A1 (no injection) gains nothing.
- **Not modelled**: A7's knob (a cap of 100) reaches nothing in this world, so A7 is the
  Default run for run; the docs' tables say "not modelled", never a verdict.
- **Mechanisms added for an arm** (hypotheses, not predictions): the settings built into the
  world so that retrieval-only routing (A2: ``misapply_cost``, ``surface_share``,
  ``route_preference``) and harsh retirement (A4: ``train_lift``, ``route_easy_p0``) move
  their arm still act in a run. That they act is checked so that one silently switched off
  fails here; that the paper's arms move the same way is no evidence for the world.

Gains are the truth report's (expected pass@1 of the routing taken, last 5 rounds minus round
0), free of the noise of grading 40 tasks; the runs are deterministic per seed. About 3
minutes on two shared cores (five runs), so ``slow``.
"""

from __future__ import annotations

import statistics

import pytest

from ratchet_ray.suites.sim.truth import analyze_run

from local_ray import start_local_ray
from sim_helpers import run_sim, sim_config

pytestmark = pytest.mark.slow
ROUNDS = 20
A4_MARGIN = 0.05
"""How far below the Default's true gain A4 must end (the true gain has no grading noise;
the world before the train/eval asymmetry left A4 0.031 below)."""


@pytest.fixture(scope="module")
def arms(tmp_path_factory, _ray_session):
    start_local_ray()  # module fixtures share the session's Ray
    root = tmp_path_factory.mktemp("calibrated")
    out = {}
    for arm in ("default", "A1", "A2", "A4", "A7"):
        truth = analyze_run(run_sim(sim_config(root / arm, f"rounds={ROUNDS}",
                                               arm=None if arm == "default" else arm)))
        true = [r.true for r in truth.rounds]
        out[arm] = (statistics.fmean(true[-5:]) - true[0], truth.active_at_end())
    return out


def test_what_the_world_predicts_and_what_it_does_not_model(arms):
    gain, active = arms["default"]
    assert gain > 0.1, arms  # the Default, fitted on the paper's Default row, learns
    assert arms["A1"][0] == pytest.approx(0.0, abs=1e-9), arms  # no injection: no gain
    assert arms["A7"] == arms["default"], arms  # not modelled: the Default run for run


def test_the_mechanisms_added_for_a2_and_a4_act_in_a_run(arms):
    gain, active = arms["default"]
    assert arms["A2"][0] < gain, arms  # surface retrieval, misapplied guidance
    # A4: tau = 0 at N_min = 20 retires helpful skills whose train c-hat sits near 0 (the
    # train/eval asymmetry added for it) and their themes are hard to write again: the bank
    # thins and the gain drops by more than noise. Without the asymmetry (sim.train_lift=1)
    # A4 is level with the Default (docs/ablations.md).
    a4_gain, a4_active = arms["A4"]
    assert a4_active <= 0.75 * active, arms
    assert a4_gain < gain - A4_MARGIN, arms
