"""A short real run of the calibrated sim world (Ray on 127.0.0.1, seed 42, 60 train / 40
eval tasks, 20 rounds) in which each mechanism moves its arm the paper's way: retrieval-only
routing (A2) loses gain, harsh retirement (A4) ends with at most 3/4 of the Default's ACTIVE
skills and a true gain at least 0.05 lower, and dropping canonicalisation (A5) or the cover
guard (A6) stays within noise of the Default.

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
NOISE = 0.1
"""About two standard deviations of a rolling gain over three seeds in the full sweep."""
A4_MARGIN = 0.05
"""How far below the Default's true gain A4 must end (the true gain has no grading noise;
the world before the train/eval asymmetry left A4 0.031 below)."""


@pytest.fixture(scope="module")
def arms(tmp_path_factory, _ray_session):
    start_local_ray()  # module fixtures share the session's Ray
    root = tmp_path_factory.mktemp("calibrated")
    out = {}
    for arm in ("default", "A2", "A4", "A5", "A6"):
        truth = analyze_run(run_sim(sim_config(root / arm, f"rounds={ROUNDS}",
                                               arm=None if arm == "default" else arm)))
        true = [r.true for r in truth.rounds]
        out[arm] = (statistics.fmean(true[-5:]) - true[0], truth.active_at_end())
    return out


def test_each_mechanism_moves_its_arm_the_papers_way(arms):
    gain, active = arms["default"]
    assert gain > 0.1, arms  # the Default learns
    assert arms["A2"][0] < gain, arms  # surface retrieval, misapplied guidance
    # A4: tau = 0 at N_min = 20 retires helpful skills whose train c-hat sits near 0 (the
    # train/eval asymmetry) and their themes are hard to write again: the bank thins and the
    # gain drops by more than noise. The world before the asymmetry (issue 40's first pass)
    # failed both margins here: 15 ACTIVE against 16, gain 0.154 against 0.185.
    a4_gain, a4_active = arms["A4"]
    assert a4_active <= 0.75 * active, arms
    assert a4_gain < gain - A4_MARGIN, arms
    for arm in ("A5", "A6"):
        assert abs(arms[arm][0] - gain) < NOISE, (arm, arms)
