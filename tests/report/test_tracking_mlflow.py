"""MLflow tracking of real scripted runs: a local file store (the default when enabled), a local
``mlflow server`` on 127.0.0.1, and an unreachable server that must not change the run."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from loop_helpers import BAD_ID, GOOD_ID
from ratchet_ray.report.data import round_rows
from report_runs import run_scenario
from waiting import wait_for

pytestmark = pytest.mark.slow
mlflow = pytest.importorskip("mlflow", reason="pip install mlflow (dev extra)")
OUTCOME = ("eval_pass_at_1", "train_pass_at_1", "skills_created", "skills_retired",
           "skills_evicted", "active_skills", "deprecated_skills", "rollback_fired")


def _run(client, run_dir: Path):
    saved = json.loads((run_dir / "mlflow_run.json").read_text())
    return client.get_run(saved["run_id"])


def _finished(client, run_dir: Path):
    """The MLflow run once the tracker's thread has closed it (it is a daemon thread of the
    driver: the run may return while the last upload is finishing)."""
    wait_for(lambda: (run_dir / "mlflow_run.json").is_file()
             and _run(client, run_dir).info.status == "FINISHED", timeout=180,
             what="the MLflow run to be FINISHED", poll=1.0)
    return _run(client, run_dir)


def _history(client, run_id: str, key: str) -> dict[int, float]:
    return {m.step: m.value for m in client.get_metric_history(run_id, key)}


def _check_logged(client, run_dir: Path, rounds: int) -> None:
    run = _finished(client, run_dir)
    run_id = run.info.run_id
    assert run.info.run_name == run_dir.name
    assert run.data.params["curator.active_cap"] == "2"
    assert run.data.params["rollback.consecutive"] == "1"
    assert run.data.tags["ratchet.run_dir"] == str(run_dir.resolve())
    rows = round_rows(run_dir)
    assert len(rows) == rounds
    for key in ("eval_pass_at_1", "train_pass_at_1", "active_skills", "deprecated_skills",
                "input_tokens", "output_tokens", "cost_usd"):
        assert _history(client, run_id, key) == {r["round"]: pytest.approx(float(r[key]))
                                                 for r in rows}, key
    assert _history(client, run_id, "skills_retired") == {
        r["round"]: float(len(r["skills_retired"] or [])) for r in rows}
    assert _history(client, run_id, "rollback_fired") == {
        r["round"]: float(bool(r["rollback_fired"])) for r in rows}
    assert _history(client, run_id, "skills_retired")[2] == 1.0  # BAD, retired in round 2
    assert set(_history(client, run_id, "tokens_solver")) == set(range(rounds))
    artifacts = {a.path for a in client.list_artifacts(run_id)}
    assert {"report.html", "skills", "meta-skills"} <= artifacts
    skills = {a.path for a in client.list_artifacts(run_id, "skills")}
    assert {f"skills/{BAD_ID}.yaml", f"skills/{GOOD_ID}.yaml"} <= skills
    local = client.download_artifacts(run_id, "report.html", str(run_dir.parent))
    assert "Ratchet report" in Path(local).read_text()


def test_local_file_store_gets_params_metrics_and_artifacts(scenario_run):
    """Tracking on with no URI: the local store ``<results_dir>/mlflow.db`` (4 rounds)."""
    from mlflow import MlflowClient

    store = scenario_run.parents[1] / "mlflow.db"
    client = MlflowClient(f"sqlite:///{store}")
    _check_logged(client, scenario_run, 4)
    assert _history(client, _run(client, scenario_run).info.run_id, "rollback_fired")[3] == 1.0
    assert (scenario_run.parents[1] / "mlartifacts").is_dir()  # not the caller's ./mlruns


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path):
    """A real ``mlflow server`` on 127.0.0.1 (random free port), stopped after the test."""
    port = _free_port()
    log = (tmp_path / "mlflow_server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1", "--backend-store-uri", f"sqlite:///{tmp_path / 'server.db'}",
         "--artifacts-destination", str(tmp_path / "server_artifacts")],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert proc.poll() is None, (tmp_path / "mlflow_server.log").read_text()[-3000:]
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
                return reply.status == 200
        except OSError:
            return False

    try:
        wait_for(up, timeout=240, what="mlflow server /health", poll=0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server and its uvicorn worker
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def test_mlflow_server_gets_a_three_round_run(ray_local, mlflow_server, tmp_path):
    from mlflow import MlflowClient

    run_dir = run_scenario(tmp_path / "srv", 3, mlflow_uri=mlflow_server, timeout_s=90.0)
    _check_logged(MlflowClient(mlflow_server), run_dir, 3)


def test_unreachable_server_leaves_the_run_unchanged(ray_local, scenario_run, tmp_path):
    dead = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    run_dir = run_scenario(tmp_path / "dead", 3, mlflow_uri=dead, timeout_s=2.0)
    got = [{k: r[k] for k in OUTCOME} for r in round_rows(run_dir)]
    reference = [{k: r[k] for k in OUTCOME} for r in round_rows(scenario_run)[:3]]
    assert got == reference  # the same rounds as the tracked run of the same script
    assert not (run_dir / "mlflow_run.json").exists()
    log = (run_dir / "run.log").read_text()
    assert f"MLflow tracking to {dead} failed" in log and "finished 3 rounds" in log
    assert not (run_dir / "stopped.json").exists()
