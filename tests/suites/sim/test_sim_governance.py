"""The governance against the sim world's truth: the ablation knobs move outcomes the way the paper
reports, the Default retires clearly harmful skills, and Proposition 1's floor holds over seeds.

Sizes: 60 train / 40 eval tasks; rounds as few as the property needs (each run is seconds to a
minute on two cores), so these are ``slow``.
"""

from __future__ import annotations

import statistics

import pytest

from ratchet_ray.run_config.files import load_config
from ratchet_ray.evidence.queries import recent_verdicts
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.suites.sim.embedder import SimEmbedder
from ratchet_ray.suites.sim.truth import analyze_run
from ratchet_ray.synthesis.preprocess import cluster_verdicts

from local_ray import start_local_ray
from sim_helpers import rows, run_sim, legacy_config as sim_config  # legacy-world numbers

pytestmark = pytest.mark.slow
ARMS_ROUNDS = 10


@pytest.fixture(scope="module")
def arm_runs(tmp_path_factory, _ray_session):
    start_local_ray()  # module fixtures share the session's Ray
    root = tmp_path_factory.mktemp("arms")
    return {arm: run_sim(sim_config(root / arm, f"rounds={ARMS_ROUNDS}",
                                    arm=None if arm == "default" else arm))
            for arm in ("default", "A1", "A4", "A5")}


def _clusters(run_dir) -> tuple[float, float]:
    """Mean number and mean size of the synthesis clusters the run formed per round."""
    config = load_config([run_dir / "config.yaml"])
    con = EvidenceStore(run_dir).connect()
    counts, sizes = [], []
    try:
        for round_ in range(config.rounds):
            clusters = cluster_verdicts(recent_verdicts(con, round_, config.synth.window_rounds),
                                        SimEmbedder(), config.synth)
            counts.append(len(clusters))
            sizes += [c.size for c in clusters]
    finally:
        con.close()
    return statistics.fmean(counts), statistics.fmean(sizes)


def test_a1_never_routes(arm_runs):
    assert rows(arm_runs["A1"], "SELECT count(*) FROM capsule WHERE skill_id <> 'NONE'") == [(0,)]
    assert rows(arm_runs["default"],
                "SELECT count(*) FROM capsule WHERE skill_id <> 'NONE'")[0][0] > 100


def test_a4_retires_more_and_its_noise_kills_helpful_skills(arm_runs):
    # The paper's reading of A4 (N_min 20, tau 0): without the evidence floor, retirement acts
    # on noise and kills useful skills. (Its hollowed-out library takes ~100 rounds; in 10 the
    # freed slots are still being refilled, so the count of active skills is no test.)
    default, harsh = analyze_run(arm_runs["default"]), analyze_run(arm_runs["A4"])
    assert harsh.retirement()["retired"] > default.retirement()["retired"]
    killed = [s for s in harsh.skills if s.retired_round is not None and s.helpful]
    assert killed, "A4 retired no truly helpful skill"
    assert harsh.retirement()["helpful_kept"] < default.retirement()["helpful_kept"]


def test_a5_forms_more_smaller_clusters(arm_runs):
    default_n, default_size = _clusters(arm_runs["default"])
    a5_n, a5_size = _clusters(arm_runs["A5"])
    assert a5_n > default_n and a5_size < default_size


# A world where c-hat's bar mostly separates the classes: E[p0] ~ 0.73, so a neutral skill scores
# c-hat ~ 2 * 0.73 - 1 = +0.45 and a harmful one (-0.5) ~ -0.55 on typical tasks. With N_min = 40
# and delta = 1e-3, eps = sqrt(ln(2000) / 80) = 0.31. c-hat is 2 * pass - 1 over the tasks the
# skill was routed to, not the skill's causal effect: a harmful skill the router keeps sending to
# easy tasks can stay above -tau (seed 13 draws one: true routed effect -0.29, c-hat +0.04). That
# confound is what the counterfactual probes address (test_sim_counterfactual.py). So the claims
# are: every retirement is right and helpful skills are kept, per seed; and over the three seeds
# at least 80% of the harmful skills that reached N_min trials are retired.
CLEAR_WORLD = ("sim.n_types=4", "sim.base_alpha=8", "sim.base_beta=3", "sim.harmful_effect=0.5",
               "sim.helpful_effect=0.2", "sim.p_harmful=0.35", "sim.p_helpful=0.35",
               "curator.min_trials=40", "rounds=14")


@pytest.fixture(scope="module")
def clear_runs(tmp_path_factory, _ray_session):
    start_local_ray()  # module fixtures share the session's Ray
    root = tmp_path_factory.mktemp("clear")
    return [analyze_run(run_sim(sim_config(root / str(seed), *CLEAR_WORLD, f"seed={seed}")))
            for seed in (42, 7, 13)]


def test_default_retires_clearly_harmful_skills(clear_runs):
    eligible = retired = 0
    for truth in clear_runs:
        stats = truth.retirement()
        assert stats["precision"] is None or stats["precision"] >= 0.9, stats
        assert stats["helpful_kept"] is None or stats["helpful_kept"] >= 0.9, stats
        harmful = [s for s in truth.skills if s.harmful and s.trials >= truth.n_min]
        eligible += len(harmful)
        retired += len([s for s in harmful if s.retired_round is not None])
    assert eligible >= 4  # the prior made enough harmful skills to say something
    assert retired / eligible >= 0.8, (retired, eligible)


def test_proposition_1_floor_holds_over_seeds(clear_runs):
    for truth in clear_runs:
        assert truth.floor > 0.2  # informative: E[p0] ~ 0.73, margin 0.1 + 0.31 + 50 * 0.001
        assert truth.below_floor("true") == [], (truth.seed, truth.floor)
