"""The real loop (Ray actors, SkillBank, Curator, synthesis, Parquet evidence) on the sim world:
determinism and the truth-aware report."""

from __future__ import annotations

import csv

from ratchet_ray.suites.sim.report import write_sim_report
from ratchet_ray.metrics import hoeffding_eps, prop1_floor
from ratchet_ray.suites.sim.truth import analyze_run

from sim_helpers import rows, run_sim, sim_config

SMALL = ("rounds=4", "n_train=30", "n_eval=20")
CAPSULES = ("SELECT round, split, task_id, skill_id, passed, attempt FROM capsule "
            "ORDER BY round, split, task_id, attempt")
VERDICTS = "SELECT round, task_id, skill_id, pattern, attribution FROM verdict ORDER BY 1, 2"
EVENTS = "SELECT round, skill_id, event FROM skill_event ORDER BY 1, 2, 3"


def test_same_seed_same_evidence_and_the_report(ray_local, tmp_path):
    first = run_sim(sim_config(tmp_path / "a", *SMALL))
    # One task per call on two Solvers and two Graders against the adaptive batches of one
    # each: how tasks travel to the workers changes nothing in the evidence.
    second = run_sim(sim_config(tmp_path / "b", *SMALL, "infra.tasks_per_call=1",
                                "workers.solvers=2", "workers.graders=2"))
    for sql in (CAPSULES, VERDICTS, EVENTS):
        assert rows(first, sql) == rows(second, sql)
    assert rows(first, "SELECT count(*) FROM skill_event WHERE event = 'added'")[0][0] > 0
    assert rows(first, "SELECT count(*) FROM capsule WHERE skill_id <> 'NONE'")[0][0] > 0

    truth = analyze_run(first)
    assert [r.round for r in truth.rounds] == [0, 1, 2, 3]
    measured = [s for s in rows(first, "SELECT round, count_if(passed) / count(*) FROM capsule "
                                       "WHERE split = 'eval' GROUP BY round ORDER BY round")]
    assert [round(r.measured, 9) for r in truth.rounds] == [round(m, 9) for _, m in measured]
    assert truth.rounds[0].true == truth.e_p0  # round 0 routes nothing: the true mean is E[p0]
    assert all(r.oracle >= r.true - 1e-9 for r in truth.rounds)
    assert truth.floor == prop1_floor(truth.e_p0, 0.1, 100, 50, 1e-3)
    assert abs(hoeffding_eps(100, 1e-3) - 0.195) < 0.001  # the paper's eps ~ 0.20

    written = write_sim_report(first)
    names = {p.name for p in written}
    assert {"sim_report.md", "rounds.csv", "skills.csv", "arms.csv", "default_s42.png"} <= names
    with (first / "sim_report" / "rounds.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == 4
    assert "| default | 1 |" in (first / "sim_report" / "sim_report.md").read_text()


def test_another_seed_is_another_world(ray_local, tmp_path):
    a = run_sim(sim_config(tmp_path / "a", "rounds=1", "n_train=20", "n_eval=10"))
    b = run_sim(sim_config(tmp_path / "b", "rounds=1", "n_train=20", "n_eval=10", "seed=7"))
    assert rows(a, CAPSULES) != rows(b, CAPSULES)
