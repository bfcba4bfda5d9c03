"""Fixtures of the report tests: the governance scenario run once per session, MLflow on."""

from __future__ import annotations

from pathlib import Path

import pytest

from report_runs import SCENARIO_ROUNDS, run_scenario

_RUNS: dict[str, Path] = {}


@pytest.fixture
def scenario_run(ray_local, tmp_path_factory) -> Path:
    """The 4-round scenario (a helpful and a harmful skill, an eviction, a retirement in round 2,
    a rollback to round 0 in round 3), run once per session with MLflow tracking on its default
    local store (``<results_dir>/mlflow.db``)."""
    if "scenario" not in _RUNS:
        root = tmp_path_factory.mktemp("report_scenario")
        _RUNS["scenario"] = run_scenario(root, SCENARIO_ROUNDS, enabled=True, timeout_s=90.0)
    return _RUNS["scenario"]


MLFLOW_REQUEST_SETTINGS = ("MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
                           "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR")


@pytest.fixture(autouse=True)
def _no_inherited_mlflow_request_settings(monkeypatch):
    """A tracker bounds MLflow's HTTP requests through the process environment (MLflow reads them
    nowhere else) and keeps what it finds there, as a user's own settings win. Runs of these tests
    share a worker process, so each test starts without an earlier test's settings and leaves
    none behind: the unreachable-server test's 2 s timeout otherwise became every later request's
    (a live server's run then failed its reads under load)."""
    for name in MLFLOW_REQUEST_SETTINGS:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
