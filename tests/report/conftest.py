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
