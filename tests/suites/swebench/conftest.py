"""Fixtures of the SWE-bench tests: a real Docker daemon, the local base image, local instances.

Docker tests need ``bash .ci/docker_setup.sh`` (daemon + ``ratchet-swe-base``); without them they
skip with that instruction. Instance images are built once per session (namespace None) and
removed at the end; every test checks that no suite container is left behind.
"""

from __future__ import annotations

import pytest

import swebench_instances
from ratchet_ray.suites.swebench.settings import GradingLimits
from suite_containers import leftover_containers
from ratchet_ray.suites.swebench.dataset import normalize_all, to_task
from ratchet_ray.suites.swebench.docker.images import image_name
from ratchet_ray.suites.swebench.settings import SwebenchSettings

SETUP_HINT = "run `bash .ci/docker_setup.sh` (starts dockerd and builds ratchet-swe-base)"


@pytest.fixture(scope="session")
def instances() -> list[dict]:
    """The raw local instances (gold ``patch`` included)."""
    return swebench_instances.make_instances()


@pytest.fixture(scope="session")
def tasks(instances) -> dict:
    return {i["instance_id"]: to_task(i) for i in normalize_all(instances, "local")}


@pytest.fixture(scope="session")
def gold(instances) -> dict:
    return {i["instance_id"]: i["patch"] for i in instances}


@pytest.fixture(scope="session")
def local_dataset(tmp_path_factory, instances) -> str:
    """Every local instance (calc, and the django/sympy stand-ins) with its gold patch, in one
    file: where a grader finds the gold patch it makes a gold record from."""
    import json

    import unittest_instances

    path = tmp_path_factory.mktemp("swebench-dataset") / "local.jsonl"
    rows = [*instances, *unittest_instances.make_instances()]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


@pytest.fixture(scope="session")
def gold_records(tmp_path_factory) -> str:
    """One gold-record folder for the session: each instance's record is made once."""
    return str(tmp_path_factory.mktemp("swebench-gold"))


@pytest.fixture
def local_settings(local_dataset, gold_records) -> SwebenchSettings:
    """Local builds, images kept for the session, small limits; gold patches from the local
    dataset, gold records kept for the session, canary sessions two at a time."""
    return SwebenchSettings(namespace=None, cache_level="instance", memory_mb=512, pids_limit=256,
                            dataset_name=local_dataset, gold_records=gold_records,
                            canary_parallel=2)


@pytest.fixture
def limits() -> GradingLimits:
    return GradingLimits(timeout_s=60, instance_deadline_s=300)


@pytest.fixture(scope="session")
def docker_session(instances):
    """A Docker client with the base image present; test instance images removed at the end."""
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except docker.errors.DockerException as exc:
        pytest.skip(f"no Docker daemon ({exc}); {SETUP_HINT}")
    try:
        client.images.get(swebench_instances.BASE_IMAGE)
    except docker.errors.ImageNotFound:
        pytest.skip(f"base image {swebench_instances.BASE_IMAGE} missing; {SETUP_HINT}")
    yield client
    names = {image_name(i["instance_id"], SwebenchSettings(namespace=None)) for i in instances}
    for name in names:
        try:
            client.images.remove(name, force=True)
        except docker.errors.ImageNotFound:
            continue


@pytest.fixture
def docker_client(docker_session):
    """The session client; fails the test if it leaves a suite container behind."""
    yield docker_session
    left = leftover_containers(docker_session)
    assert not left, f"containers left behind: {left}"
