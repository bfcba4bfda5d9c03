"""Locality on a real multi-node cluster: a SWE-bench instance's agent and grader run on the
node that holds its image, and work whose image no node holds still runs.

Two Docker nodes (``dock_a``, ``dock_b``: one ``docker`` unit each, so a pool of two has one
actor on each) share this machine's one Docker daemon, so which node holds which image is
what each node's own records say: each node runs with a lock dir (image-cache index) of its
own (``RATCHET_SWEBENCH_LOCK_DIR``, ``swebench.settings.on_this_node``). ``dock_a``'s index
lists calc-1's image, ``dock_b``'s calc-2's, none calc-3's. The jobs are submitted as calc-3,
calc-2, calc-1: in queue order the first two would take both actors, so calc-2 or calc-1 would
run on the node without its image.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from local_cluster import LocalCluster, NodeSpec
from ratchet_ray.suites.swebench.docker.image_cache import held_images
from ratchet_ray.suites.swebench.docker.images import InstanceImages, image_name
from ratchet_ray.suites.swebench.settings import LOCK_DIR_ENV, SwebenchSettings

pytestmark = [pytest.mark.cluster, pytest.mark.docker]
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "suites" / "swebench"))
import swebench_instances  # noqa: E402

ORDER = ["ratchet__calc-3", "ratchet__calc-2", "ratchet__calc-1"]
HOLDS = {"dock_a": "ratchet__calc-1", "dock_b": "ratchet__calc-2"}


def _settings(lock_dir: Path) -> SwebenchSettings:
    return SwebenchSettings(namespace=None, cache_level="instance", memory_mb=512,
                            lock_dir=str(lock_dir))


@pytest.fixture(scope="module")
def docks(tmp_path_factory):
    """The cluster (head, dock_a, dock_b), each Docker node with its own lock dir."""
    locks = tmp_path_factory.mktemp("node_locks")
    nodes = [NodeSpec("head", 0)] + [
        NodeSpec(name, 2, {"docker": 1}, env={LOCK_DIR_ENV: str(locks / name)})
        for name in HOLDS]
    local = LocalCluster(nodes, tmp_path_factory.mktemp("locality_logs"))
    local.locks = locks
    local.start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture(scope="module")
def docker_client():
    """This machine's Docker daemon with the fixture's base image; the instance images this
    module built are removed at its end (those present before are left)."""
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=120)
        client.images.get(swebench_instances.BASE_IMAGE)
    except docker.errors.DockerException as exc:
        pytest.skip(f"needs Docker and {swebench_instances.BASE_IMAGE} "
                    f"(bash .ci/docker_setup.sh): {exc}")
    names = {image_name(i, _settings(Path("/nonexistent"))) for i in ORDER}
    before = {tag for image in client.images.list() for tag in image.tags}
    yield client
    for name in names - before:
        try:
            client.images.remove(name, force=True)
        except docker.errors.ImageNotFound:
            continue


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, docks, docker_client):
    """The fixture instances, their images built (shared daemon) and each node's index seeded
    as a worker of that node would (``ensure`` under the node's lock dir: a hit there)."""
    path = tmp_path_factory.mktemp("locality_inputs") / "instances.jsonl"
    instances = {i["instance_id"]: i for i in swebench_instances.write_dataset(path)}
    from ratchet_ray.suites.swebench.dataset import normalize_all

    ready = {i["instance_id"]: i for i in normalize_all(list(instances.values()), "local")}
    builder = InstanceImages(docker_client, _settings(tmp_path_factory.mktemp("builder")))
    for instance_id in ORDER:
        builder.ensure(ready[instance_id], lambda _m: None)
    for node, instance_id in HOLDS.items():
        InstanceImages(docker_client, _settings(docks.locks / node)).ensure(
            ready[instance_id], lambda _m: None)
    return path


def _drive(docks, dataset: Path, out: Path) -> dict:
    proc = subprocess.run([sys.executable, str(HERE / "locality_driver.py"), str(dataset),
                           str(out), "2", *ORDER], env=docks.driver_env(), cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-4000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_agent_and_grader_run_on_the_node_holding_the_image(docks, dataset, tmp_path):
    names = {node: held_images(_settings(docks.locks / node)) for node in HOLDS}
    assert all(len(held) == 1 for held in names.values()), names  # what each node holds
    result = _drive(docks, dataset, tmp_path / "run")
    runs = result["instances"]
    assert all(r["solve_ok"] and r["grade_ok"] and not r["infra_failure"]
               for r in runs.values()), runs
    for node, instance_id in HOLDS.items():  # held images: solve and grade on the holder
        assert runs[instance_id]["solve_node"] == docks.node_id(node), (instance_id, runs)
        assert runs[instance_id]["grade_node"] == docks.node_id(node), (instance_id, runs)
    # calc-3's image was held by no node: its solve ran wherever an actor was free, and that
    # node's index then listed it, so its grade followed it there.
    homeless = runs["ratchet__calc-3"]
    assert homeless["solve_node"] in {docks.node_id(n) for n in HOLDS}
    assert homeless["grade_node"] == homeless["solve_node"], runs
    assert result["surveys"]["solver"] >= 1 and result["surveys"]["grader"] >= 1
    # The nodes' own records agree with where the pools say the work ran: a node's index
    # lists the image of every instance whose agent or grader ran there, and no other.
    for node in HOLDS:
        ran = {image_name(i, _settings(docks.locks / node)) for i, r in runs.items()
               if docks.node_id(node) in (r["solve_node"], r["grade_node"])}
        assert set(held_images(_settings(docks.locks / node))) == ran, (node, runs)
