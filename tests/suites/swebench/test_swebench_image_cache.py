"""The node's image cache on the real daemon: one build per image however many workers ask, LRU
eviction under ``swebench.image_cache_gb`` that never removes an image in use, the disk guard.

Every image here has a name of its own (a fresh instance id, and a LABEL so that its image id is
its own too) and a lock folder of its own: nothing another test or engineer uses is touched, and
the images are removed at the end.
"""

from __future__ import annotations

import threading
import uuid

import pytest

from ratchet_ray.suites.swebench.dataset import normalize_instance
from ratchet_ray.suites.swebench.cache_report import merge_readings, round_delta
from ratchet_ray.suites.swebench.docker.image_cache import node_report
from ratchet_ray.suites.swebench.docker.images import InstanceImages
from ratchet_ray.suites.swebench.docker.infra import InfraFailure
from ratchet_ray.suites.swebench.settings import SwebenchSettings

pytestmark = pytest.mark.docker


@pytest.fixture
def fresh(instances, docker_session):
    """``fresh()`` -> an instance (calc-1's repository) whose image no one has; removed after."""
    made: list[str] = []
    tag = uuid.uuid4().hex[:8]

    def make() -> dict:
        instance_id = f"ratchet__cache{tag}-{len(made)}"
        instance = normalize_instance({**instances[0], "instance_id": instance_id,
                                       "dockerfile": instances[0]["dockerfile"]
                                       + f"LABEL ratchet.test.instance={instance_id}\n"})
        made.append(instance_id)
        return instance

    yield make
    import docker.errors

    for instance_id in made:
        name = f"sweb.eval.x86_64.{instance_id.lower()}:latest"
        try:
            docker_session.images.remove(name, force=True)
        except docker.errors.ImageNotFound:
            continue


def _settings(tmp_path, **extra) -> SwebenchSettings:
    return SwebenchSettings(namespace=None, cache_level="instance",
                            lock_dir=str(tmp_path / "locks"), **extra)


def test_concurrent_workers_on_one_node_build_an_image_once(docker_session, fresh, tmp_path):
    settings = _settings(tmp_path)
    instance = fresh()
    workers = [InstanceImages(docker_session, settings) for _ in range(3)]
    names, errors = [], []
    start = threading.Barrier(len(workers))

    def ask(images: InstanceImages) -> None:
        start.wait()
        try:
            names.append(images.ensure(instance, lambda _line: None))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(w,)) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors
    assert len(set(names)) == 1 and workers[0].ready(names[0], instance)
    report = node_report(settings)
    assert (report["builds"], report["hits"], report["evictions"]) == (1, 2, 0), report


def test_lru_eviction_under_the_budget_never_removes_an_image_in_use(docker_session, fresh,
                                                                    tmp_path):
    settings = _settings(tmp_path)
    images = InstanceImages(docker_session, settings)
    log: list[str] = []
    a, b, c, d = (fresh() for _ in range(4))
    name = {i["instance_id"]: images.name(i) for i in (a, b, c, d)}
    images.ensure(a, log.append)
    size_gb = docker_session.images.get(name[a["instance_id"]]).attrs["Size"] / 1e9
    # Room for two images and a half: a third build must evict one.
    settings.image_cache_gb = 2.5 * size_gb
    images.ensure(b, log.append)
    with images.use(a, log.append):  # a is now the most recently used
        pass
    images.ensure(c, log.append)  # evicts b, the least recently used
    assert not images.exists(name[b["instance_id"]])
    assert images.exists(name[a["instance_id"]]) and images.exists(name[c["instance_id"]])
    with images.use(a, log.append):  # a is held (and least recently used now): c goes instead
        images.ensure(d, log.append)
        assert images.exists(name[a["instance_id"]]), "an image in use was evicted"
    assert not images.exists(name[c["instance_id"]])
    assert images.exists(name[d["instance_id"]])
    report = node_report(settings)
    assert (report["builds"], report["evictions"]) == (4, 2), report
    assert report["owned_images"] == 2 and report["owned_gb"] <= settings.image_cache_gb
    evicted = [line for line in log if line.startswith("evicted image")]
    assert [line.split()[2] for line in evicted] == [name[b["instance_id"]], name[c["instance_id"]]]


def test_disk_guard_refuses_a_build_with_the_numbers_and_the_setting(docker_session, fresh,
                                                                     tmp_path):
    settings = _settings(tmp_path, build_min_free_gb=10**6)
    images = InstanceImages(docker_session, settings)
    instance = fresh()
    with pytest.raises(InfraFailure) as caught:
        images.ensure(instance, lambda _line: None)
    assert caught.value.reason == "disk_guard"
    message = str(caught.value)
    assert "GB free under" in message and "swebench.build_min_free_gb=1e+06" in message
    assert not images.exists(images.name(instance)), "the refused build ran anyway"
    assert node_report(settings)["refusals"] == 1


def test_an_image_a_running_container_uses_is_never_evicted(docker_session, fresh, tmp_path):
    # No lock is held here: only the daemon knows the container uses the image (a container
    # someone started by hand, or one of a worker on another lock folder).
    settings = _settings(tmp_path)
    images = InstanceImages(docker_session, settings)
    log: list[str] = []
    a, b, c = (fresh() for _ in range(3))
    images.ensure(a, log.append)
    images.ensure(b, log.append)
    settings.image_cache_gb = 2.5 * docker_session.images.get(images.name(a)).attrs["Size"] / 1e9
    container = docker_session.containers.run(
        images.name(a), "sleep 120", detach=True, network_mode="none",
        labels={"ratchet-ray.test": f"image-cache-{tmp_path.name}"})
    try:
        images.ensure(c, log.append)  # a is the least recently used, but a container runs it
        assert images.exists(images.name(a)), "an image a running container uses was evicted"
        assert not images.exists(images.name(b))
        assert any(line.startswith(f"kept image {images.name(a)}") for line in log), log
    finally:
        container.remove(force=True)
    assert node_report(settings)["evictions"] == 1


def test_a_rounds_report_is_each_nodes_change_over_the_round():
    """``round_delta``: per node, what each counter did between the round's two readings, the
    cache use at the end; a node first seen at the end counts from its index's totals; a
    failed reading is passed on, not hidden."""
    use = {"owned_images": 2, "owned_gb": 0.5, "budget_gb": 1.0, "ray_nodes": 2}
    start = [{"node": "a", "hits": 3, "builds": 1, "evictions": 0, **use},
             {"node": "gone", "hits": 9, **use}]
    end = [{"node": "a", "hits": 7, "builds": 2, "evictions": 1, "refusals": 0, **use},
           {"node": "b", "hits": 1, "builds": 1, **use}, {"node": "?", "error": "timeout"}]
    rows = round_delta(start, end)
    assert rows[0] == {"node": "a", "ray_nodes": 2, "hits": 4, "builds": 1, "pulls": 0,
                       "strips": 0, "evictions": 1, "refusals": 0, "owned_images": 2,
                       "owned_gb": 0.5, "budget_gb": 1.0}
    assert (rows[1]["hits"], rows[1]["since"]) == (1, "index start")
    assert rows[2] == {"node": "?", "error": "timeout"} and len(rows) == 3


def test_nodes_sharing_one_index_are_reported_once():
    """Ray nodes of one host share lock_dir, so one index: one entry, ``ray_nodes`` counting."""
    reading = {"node": "h", "hits": 2, "lock_dir": "/tmp/l"}
    merged = merge_readings([reading, dict(reading), {"node": "h", "hits": 5, "lock_dir": "/x"},
                             {"node": "g", "hits": 1, "lock_dir": "/tmp/l"}])
    # Host h has two indexes (a node with $RATCHET_SWEBENCH_LOCK_DIR): each named by its own.
    assert merged == [{"node": "g", "hits": 1, "ray_nodes": 1},
                      {"node": "h:/tmp/l", "hits": 2, "ray_nodes": 2},
                      {"node": "h:/x", "hits": 5, "ray_nodes": 1}]
    assert reading["lock_dir"] == "/tmp/l", "the readings are not changed"
    later = merge_readings([{**reading, "hits": 3}, {"node": "h", "hits": 9, "lock_dir": "/x"}])
    assert [(r["node"], r["hits"]) for r in round_delta(merged, later)] == [
        ("h:/tmp/l", 1), ("h:/x", 4)]


def test_an_instance_the_registry_does_not_have_is_built_from_its_own_dockerfile(
        docker_client, instances, tmp_path):
    """A make-instances set's images exist nowhere else: with the suite's default namespace (a
    registry here at a closed loopback port, so nothing leaves this host) the pull fails and the
    instance's dockerfile builds the image under the registry's name; an instance without a
    dockerfile still fails as image_missing / docker_error."""
    settings = SwebenchSettings(namespace="127.0.0.1:9/ratchet-none", cache_level="none",
                                lock_dir=str(tmp_path / "locks"))
    images = InstanceImages(docker_client, settings)
    instance = next(i for i in instances if i["instance_id"] == "ratchet__calc-1")
    name = images.name(instance)
    assert name.startswith("127.0.0.1:9/ratchet-none/") and not images.exists(name)
    said: list[str] = []
    try:
        assert images.ensure(instance, said.append) == name and images.ready(name, instance)
        assert any("not pulled from namespace '127.0.0.1:9/ratchet-none'" in line and
                   "building it from the instance's dockerfile" in line for line in said), said
    finally:
        if images.exists(name):
            docker_client.images.remove(name, force=True)
    with pytest.raises(InfraFailure):
        images.ensure({**instance, "dockerfile": None}, said.append)
