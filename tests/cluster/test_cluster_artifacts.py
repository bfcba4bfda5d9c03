"""Artifacts reach the head: rounds on the multi-node cluster whose run dir is in
``cluster.head_only``, a folder the worker nodes see as an empty read-only tmpfs (see conftest),
so an actor that wrote under the run dir on its own node would fail there, and whatever it
produced is in the head's run dir only if the run's artifact service put it there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import loop_helpers
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.llm.cache import SolverCache

pytestmark = pytest.mark.cluster
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
HIDDEN_PROBE = """
import os
@ray.remote(num_cpus=0.5)
def sees(path):
    return os.path.isdir(path) and bool(os.listdir(path))
result = ray.get([sees.options(resources={'node_' + n: 1}).remote(%r) for n in ('dock', 'cpu')])
"""


def _drive(cluster, argv: list[str], timeout_s: float) -> Path:
    """Run a driver script on the cluster; its run dir (the last stdout line)."""
    proc = subprocess.run([sys.executable, *argv], env=cluster.driver_env(), cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout_s)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-4000:])
    return Path(proc.stdout.strip().splitlines()[-1])


def _actor_nodes(cluster, classes: set[str], earlier: set[str]) -> set[str]:
    """The nodes of the actors of ``classes`` not in ``earlier`` (the ids listed before the run:
    the module's cluster keeps every earlier test's actors, dead ones too)."""
    return {a["node"] for a in cluster.actors()
            if a["class"] in classes and a["id"] not in earlier}


def _capsules(run_dir: Path) -> list[dict]:
    with EvidenceStore(run_dir).connect() as con:
        cursor = con.execute("SELECT * FROM capsule")
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]


def test_worker_nodes_cannot_see_the_head_only_folder(cluster):
    (cluster.head_only / "marker").write_text("head")
    assert cluster.query(HIDDEN_PROBE % str(cluster.head_only)) == [False, False]


def test_mbpp_round_keeps_the_solver_cache_in_the_head_run_dir(cluster):
    out = cluster.head_only / "mbpp"
    earlier = {a["id"] for a in cluster.actors()}
    proc = subprocess.run([sys.executable, str(HERE / "round_driver.py"), str(out), "0"],
                          env=cluster.driver_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:]
    run_dir = Path(proc.stdout.splitlines()[0].strip())
    assert run_dir.is_relative_to(cluster.head_only)
    workers = {cluster.node_id("dock"), cluster.node_id("cpu")}
    assert _actor_nodes(cluster, {"SolverWorker"}, earlier) <= workers
    assert _actor_nodes(cluster, {"ArtifactService"}, earlier) == {cluster.node_id("head")}
    capsules = [c for c in _capsules(run_dir) if c["split"] == "eval"]
    assert {c["task_id"] for c in capsules} == set(loop_helpers.EVAL)
    assert not any(c["infra_failure"] for c in capsules), [c["grader_trace"] for c in capsules]
    # Every eval generation went through the cache, whose entries are in the head's run dir.
    entries = list(SolverCache(run_dir / "solver_cache").entries())
    assert len(entries) >= len(loop_helpers.EVAL), entries
    assert all(e.location.startswith(str(run_dir)) and e.output_chars for e in entries), entries
    listed = subprocess.run([sys.executable, "-m", "ratchet_ray.cli", "--db", str(run_dir),
                             "solver-cache", "list"], cwd=ROOT, capture_output=True, text=True)
    assert f"{len(entries)} entries in {run_dir / 'solver_cache'}" in listed.stdout, listed


@pytest.mark.docker
def test_swebench_round_puts_trajectories_and_grader_logs_in_the_head_run_dir(cluster, tmp_path):
    docker = pytest.importorskip("docker")
    client = docker.from_env(timeout=120)
    client.ping()  # the Docker daemon is part of this test's setup (.ci/docker_setup.sh)
    run_dir = _drive(cluster, [str(HERE / "swebench_driver.py"), str(tmp_path),
                               str(cluster.head_only / "swebench")], timeout_s=900)
    assert run_dir.is_relative_to(cluster.head_only)
    # The round's image-cache report, read on the one node offering docker from the driver.
    summary = json.loads((run_dir / "round_00" / "summary.json").read_text())
    [node] = summary["suite_report"]["image_cache"]
    assert node["ray_nodes"] == 1 and "error" not in node, node
    assert node["hits"] + node["builds"] + node["strips"] >= 3, node
    capsules = {c["task_id"]: c for c in _capsules(run_dir)}
    assert {t: (c["passed"], c["exit_status"]) for t, c in capsules.items()} == {
        "ratchet__calc-1": (True, "ok"), "ratchet__calc-2": (False, "unresolved"),
        "ratchet__calc-3": (True, "ok")}
    logs = run_dir / "logs" / "swebench"
    for task_id, capsule in capsules.items():
        trajectory = logs / task_id / f"{capsule['split']}_00" / "trajectory.json"
        assert json.loads(trajectory.read_text())["exit_status"] == "submitted"
        graded = [p for p in (logs / task_id).iterdir() if (p / "report.json").is_file()]
        assert len(graded) == 1, list((logs / task_id).iterdir())
        files = {p.name for p in graded[0].iterdir()}
        assert {"run_instance.log", "patch.diff", "eval.sh", "eval_output.txt",
                "test_output.txt", "report.json"} <= files, files
        report = json.loads((graded[0] / "report.json").read_text())
        assert report["grade"]["passed"] is capsule["passed"]
        assert f"log: {graded[0]}" in capsule["grader_trace"]
