"""A sim sweep (two arms, jobs.ablations' folder layout): the report's Sweeps section has the
A1–A8 table and the truth columns of ``ratchet sim-report``, and MLflow nests both runs under
one run of the sweep."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ratchet_ray.arm_summary import ARM_LABELS
from ratchet_ray.report.html import build_report
from report_parse import chart, page

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suites" / "sim"))
from sim_helpers import run_sim, sim_config  # noqa: E402

pytestmark = pytest.mark.slow


def test_sim_sweep_report_and_nested_mlflow_runs(ray_local, tmp_path):
    from mlflow import MlflowClient

    sweep = tmp_path / "sweep"
    (sweep).mkdir()
    (sweep / "sweep.json").write_text("{}")
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run_dirs = {}
    for arm in ("default", "A4"):
        config = sim_config(sweep / "runs" / f"{arm}_s42", "rounds=3", "n_train=12", "n_eval=8",
                            f"tracking.mlflow_uri={store}", "tracking.timeout_s=90",
                            f"tag={arm}_s42", arm=None if arm == "default" else arm)
        run_dirs[arm] = run_sim(config)
        assert run_dirs[arm].parents[2].name == "runs"  # the sweep's layout

    html = page(build_report([sweep], tmp_path / "sweep.html"))
    sweeps = html.split('id="sweeps"')[1]
    assert ARM_LABELS["default"] in sweeps and ARM_LABELS["A4"] in sweeps
    assert "Against the truth (sim-report)" in sweeps
    for column in ("true rolling", "precision", "recall", "rounds below floor true"):
        assert f"<th>{column}</th>" in sweeps
    arm_chart = chart(sweeps, "sweep-arm")
    assert 'data-series="default eval"' in arm_chart and 'data-series="A4 eval"' in arm_chart
    assert "2 runs" in html.split("</h1>")[0]

    client = MlflowClient(store)
    children = client.search_runs(
        [client.get_experiment_by_name("ratchet-sim").experiment_id],
        filter_string="tags.`ratchet.kind` = 'run'")
    assert {r.info.run_name for r in children} == {d.name for d in run_dirs.values()}
    parents = {r.data.tags["mlflow.parentRunId"] for r in children}
    assert len(parents) == 1
    parent = client.get_run(parents.pop())
    assert parent.data.tags["ratchet.kind"] == "sweep"
    assert parent.data.tags["ratchet.sweep"] == str(sweep.resolve())


def test_a_single_sim_run_report_shows_the_truth(ray_local, tmp_path):
    run_dir = run_sim(sim_config(tmp_path / "one", "rounds=2", "n_train=8", "n_eval=6"))
    html = page(build_report([run_dir], tmp_path / "one.html"))
    assert '<a href="#truth">Truth</a>' in html
    truth = html.split('<section id="truth">')[1].split("</section>")[0]
    assert "Against the truth (sim-report)" in truth
    for column in ("true rolling", "precision", "recall"):
        assert f"<th>{column}</th>" in truth
