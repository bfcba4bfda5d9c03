"""Skill-loop rounds on a real multi-node cluster (head + ``dock`` + ``cpu`` nodes, see conftest):
placement by resources, and a worker node killed mid-round. Every Ray client here is a driver
process of its own joined to the cluster, as under ``ray job submit``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import loop_helpers
from ratchet_ray.evidence.store import EvidenceStore

pytestmark = pytest.mark.cluster
HERE = Path(__file__).resolve().parent
TASKS = {"train": set(loop_helpers.GROUP1 + loop_helpers.GROUP2), "eval": set(loop_helpers.EVAL)}
ROLES = {"SolverWorker", "GraderWorker", "CriticWorker", "SynthesizerWorker"}
PLACED = """
import time
from ratchet_ray.loop.runtime import actor_options

@ray.remote
def where():
    time.sleep(0.5)  # held a while, so the calls spread over every node that may take them
    return ray.get_runtime_context().get_node_id()

result = {}
for role in ("grader", "solver"):
    options = {k: v for k, v in actor_options(role, "swebench").items()
               if k in ("num_cpus", "resources")}
    result[role] = sorted(set(ray.get([where.options(**options).remote() for _ in range(6)])))
result["cpu"] = sorted(set(ray.get([where.options(num_cpus=0.5).remote() for _ in range(12)])))
"""


def _start_round(cluster, out: Path, delay_s: float) -> tuple[subprocess.Popen, Path]:
    driver = subprocess.Popen([sys.executable, str(HERE / "round_driver.py"), str(out),
                               str(delay_s)], env=cluster.driver_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    first = driver.stdout.readline().strip()
    return driver, Path(first)


def _finish(driver: subprocess.Popen, timeout_s: float = 240) -> None:
    try:
        output, _ = driver.communicate(timeout=timeout_s)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(timeout=30)
    assert driver.returncode == 0, output[-4000:]


def _groundtruth_rows(cluster, node: str) -> dict[str, dict]:
    """The MBPP+ expected-output manifest rows in ``node``'s own cache, by task id."""
    rows: dict[str, dict] = {}
    for manifest in cluster.cache_dir(node).glob("ratchet-ray/mbpp-groundtruth/*/manifest.json"):
        rows.update(json.loads(manifest.read_text()))
    return rows


def _assert_every_task_once(run_dir: Path) -> None:
    con = EvidenceStore(run_dir).connect()
    rows = con.execute("SELECT round, split, task_id, attempt, count(*) FROM capsule "
                       "GROUP BY round, split, task_id, attempt").fetchall()
    con.close()
    assert rows and all(count == 1 for *_key, count in rows), rows
    for split, expected in TASKS.items():
        rounds = {r for r, s, *_ in rows if s == split}
        assert rounds, f"no {split} capsules"
        for round_ in rounds:
            done = {t for r, s, t, attempt, _ in rows if (r, s, attempt) == (round_, split, 0)}
            assert done == expected, (round_, split, done ^ expected)


def test_three_loopback_nodes_with_their_resources(cluster):
    nodes = cluster.query("result = [n for n in ray.nodes() if n['Alive']]")
    alive = {n["NodeID"]: n["Resources"] for n in nodes}
    assert set(alive) == {cluster.node_id(n) for n in ("head", "dock", "cpu")}
    assert {n["NodeManagerAddress"] for n in nodes} == {"127.0.0.1"}
    assert alive[cluster.node_id("dock")]["docker"] == 2
    assert "docker" not in alive[cluster.node_id("cpu")]
    assert alive[cluster.node_id("head")].get("CPU", 0) == 0


def test_swebench_actors_land_only_on_the_docker_node(cluster):
    placed = cluster.query(PLACED)
    assert placed["grader"] == placed["solver"] == [cluster.node_id("dock")]
    assert cluster.node_id("head") not in placed["cpu"]  # the head offers no CPU (cluster.yaml)


def test_mbpp_round_with_actors_on_the_nodes_their_resources_dictate(cluster, tmp_path):
    for node in ("dock", "cpu"):  # what an earlier round of the module cached is not this one's
        shutil.rmtree(cluster.cache_dir(node) / "ratchet-ray" / "mbpp-groundtruth",
                      ignore_errors=True)
    earlier = {a["id"] for a in cluster.actors()}  # the GCS keeps earlier tests' dead actors
    driver, run_dir = _start_round(cluster, tmp_path, 0.0)
    _finish(driver)
    _assert_every_task_once(run_dir)
    actors = [a for a in cluster.actors() if a["id"] not in earlier]
    head, workers = cluster.node_id("head"), {cluster.node_id("dock"), cluster.node_id("cpu")}
    banks = [a for a in actors if a["class"] == "SkillBankProcess"]
    assert banks and all(a["node"] == head for a in banks)  # pinned to the driver's node
    task_actors = [a for a in actors if a["class"] in ROLES]
    assert {a["class"] for a in task_actors} >= {"SolverWorker", "GraderWorker"}
    assert all(a["node"] in workers for a in task_actors), task_actors
    # Expected outputs: computed once in the cluster, in one batch on one node's grader, and
    # taken from the object store by graders elsewhere (each node has a cache of its own).
    rows = {node: _groundtruth_rows(cluster, node) for node in ("dock", "cpu")}
    computed = sorted(t for node_rows in rows.values() for t, row in node_rows.items()
                      if not row.get("imported"))
    assert computed == sorted(TASKS["train"] | TASKS["eval"]), rows
    grader_nodes = {a["node"] for a in task_actors if a["class"] == "GraderWorker"}
    if len(grader_nodes) == 2:  # Ray placed graders on both nodes: one of them imported
        assert any(row.get("imported") for node_rows in rows.values()
                   for row in node_rows.values()), rows


def test_a_worker_node_killed_mid_round_loses_nothing_and_doubles_nothing(cluster, tmp_path):
    driver, run_dir = _start_round(cluster, tmp_path, 0.6)
    victim, deadline = None, time.monotonic() + 180
    try:
        while victim is None and time.monotonic() < deadline and driver.poll() is None:
            alive = [a for a in cluster.actors() if a["state"] == "ALIVE"
                     and a["class"] in ("SolverWorker", "GraderWorker")]
            by_node = {n: sum(a["node"] == cluster.node_id(n) for a in alive)
                       for n in ("dock", "cpu")}
            # Once the pools are up and evidence is being written, kill the busier node.
            if sum(by_node.values()) >= 4 and any((run_dir / "evidence").rglob("*.parquet")):
                victim = max(by_node, key=by_node.get)
            time.sleep(0.5)
        assert victim is not None, "the round never had its pools up with evidence written"
        assert by_node[victim] >= 1 and cluster.processes(victim)
        cluster.kill(victim)
        assert cluster.processes(victim) == [], "a crash takes every process of its node"
    finally:
        _finish(driver)
        if victim is not None:  # the module's other tests expect all three nodes
            cluster.restart(victim)
    _assert_every_task_once(run_dir)
