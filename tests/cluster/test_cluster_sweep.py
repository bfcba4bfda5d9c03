"""An ablation sweep as Ray jobs on the module's multi-node cluster (head with its job server,
``dock`` and ``cpu`` nodes): ``python -m jobs.ablations sim ... --address`` submits every
arm-seed with ``JobSubmissionClient``, follows them to the end and leaves each run dir
complete; a sweep's budget (the sum over its arm-seeds) stops every arm cleanly and a rerun
with a higher budget resumes them. The ``sim`` suite (``configs/sim.yaml``): no model, real
governance, token accounting from the prompts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ratchet_ray.arm_summary import find_run_dirs, run_result
from ratchet_ray.evidence.store import EvidenceStore

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--rounds", "1", "--n-train", "4", "--n-eval", "4", "--set", "sim.n_tasks=8"]
BUDGET = 1000
"""Tokens: below what one arm-seed of ``SMALL`` spends (about 1300), so every arm runs out
whatever the order the jobs run in."""


def _sweep(cluster, out: Path, *args: str, timeout_s: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jobs.ablations", "sim", *args, "--out", str(out)],
                          cwd=ROOT, env={**cluster.driver_env(), "HF_HUB_OFFLINE": "1"},
                          capture_output=True, text=True, timeout=timeout_s)


def _status(out: Path) -> dict:
    return json.loads((out / "status.json").read_text())


def _spend(run: Path) -> int:
    with EvidenceStore(run).connect() as con:
        return con.execute("SELECT coalesce(sum(input_tokens + output_tokens), 0) "
                           "FROM llm_call").fetchone()[0]


def _capsules_once(run: Path) -> None:
    with EvidenceStore(run).connect() as con:
        rows = con.execute("SELECT round, split, task_id, attempt, count(*) FROM capsule "
                           "GROUP BY ALL").fetchall()
    assert rows and all(count == 1 for *_key, count in rows), rows


def test_a_sweep_runs_as_ray_jobs_its_budget_stops_every_arm_and_a_higher_one_resumes(
        cluster, tmp_path):
    """One sweep of two arms as Ray jobs, side by side on the nodes: stopped by its budget (a sum
    over its arm-seeds), then resumed with a higher one to the end. (One sweep, not a finished
    one and a stopped one: every arm-seed is a Ray job with a driver and a run's actors, the
    costliest thing in this folder.)"""
    out = tmp_path / "sweep"
    names = {"default_s1", "A2_s1"}
    args = ["--arms", "default,A2", "--seeds", "1", *SMALL, "--parallel", "2"]
    stopped = _sweep(cluster, out, *args, "--set", f"budget.max_tokens={BUDGET}")
    assert stopped.returncode == 1, stopped.stderr[-4000:]
    assert f"the sweep's budget (budget.max_tokens={BUDGET}, over all arm-seeds) is spent" in \
        stopped.stderr
    status = _status(out)
    assert {n: (s["ok"], s["budget"]) for n, s in status.items()} == {
        name: (False, True) for name in names}, status
    runs = {r.parents[1].name: r for r in find_run_dirs(out)}
    spent = {name: _spend(run) for name, run in runs.items()}
    # The limit is on the sum: per-arm limits would have let every arm reach BUDGET before it
    # stopped; here one arm was stopped by what the other spent. (How far the last phase of each
    # arm overshoots depends on the world's token profile, so the sum has no tighter bound.)
    assert sum(spent.values()) >= BUDGET and min(spent.values()) < BUDGET, spent
    for name, run in runs.items():
        record = json.loads((run / "stopped.json").read_text())
        assert record["kind"] == "BudgetExhausted" and record["budget"]["max_tokens"] == BUDGET
        assert record["budget"]["scope_tokens"] >= BUDGET
        assert "rerun the sweep's command with --set budget.max_tokens=" in record["cause"]
        assert not run_result(run).complete

    resumed = _sweep(cluster, out, *args, "--set", "budget.max_tokens=10000000")
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    status = _status(out)
    assert {n: (s["action"], s["ok"]) for n, s in status.items()} == {
        name: ("resume", True) for name in names}, status
    assert all(s["job_id"] for s in status.values()), status
    # Ray's own record of each arm-seed's latest job: the sweep's --status asks the job server.
    listed = _sweep(cluster, out, "--status", timeout_s=120)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert sorted(line.split()[:2] for line in listed.stdout.splitlines()) == sorted(
        ["SUCCEEDED", name] for name in names)
    assert {r.parents[1].name: r for r in find_run_dirs(out)} == runs  # the same run dirs
    for name, run in runs.items():
        assert run_result(run).complete and (run / "round_00" / "summary.json").is_file(), name
        assert not (run / "stopped.json").exists()
        config = (run / "config.yaml").read_text()
        assert f"tag: {name}" in config and "scope: sweep_" in config
        assert "max_tokens: 10000000" in config
        _capsules_once(run)
        log = (out / "logs" / f"{name}.log").read_text()
        assert f"(Ray job {status[name]['job_id']})" in log and "jobs.skill_loop" in log
        assert _spend(run) > BUDGET  # each arm alone overran the sweep's first budget
    assert (out / "ablations.md").is_file()
    # Nothing of the sweep's scope is left in the cluster (its shared rate limiter, the ledger).
    left = cluster.query("result = [a['name'] for a in ray.util.list_named_actors("
                         "all_namespaces=True) if 'sweep_' in a['name']]")
    assert left == []
