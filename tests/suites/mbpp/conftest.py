"""Fixtures for the MBPP+ suite tests: the real dataset, real evalplus ground truth (in a
per-session cache dir, so tests never depend on or disturb ~/.cache/evalplus) and real graders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mbpp_cases import GRADED_TASKS


@pytest.fixture(scope="session")
def mbpp_dataset():
    from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus

    path = os.environ.get("MBPP_OVERRIDE_PATH")
    if not path or not Path(path).is_file():
        pytest.skip("MBPP+ dataset not available offline (set MBPP_OVERRIDE_PATH)")
    return load_mbpp_plus(path)


@pytest.fixture(scope="session")
def groundtruth_store(mbpp_dataset, tmp_path_factory):
    from ratchet_ray.suites.mbpp.groundtruth import GroundTruthStore

    store = GroundTruthStore(mbpp_dataset, cache_dir=tmp_path_factory.mktemp("evalplus-cache"))
    store.ensure(GRADED_TASKS)
    return store


def _grader(dataset, store, **limits):
    from ratchet_ray.suites.mbpp.grader import MbppGrader
    from ratchet_ray.suites.mbpp.sandbox import SandboxLimits

    return MbppGrader(dataset, groundtruth=store, limits=SandboxLimits(**limits))


@pytest.fixture(scope="session")
def mbpp_grader(mbpp_dataset, groundtruth_store):
    """A grader with the production defaults (20 s budget, 1 GiB)."""
    return _grader(mbpp_dataset, groundtruth_store)


@pytest.fixture(scope="session")
def strict_grader(mbpp_dataset, groundtruth_store):
    """Short budget for hostile code: a failure must come back within seconds."""
    return _grader(mbpp_dataset, groundtruth_store, budget_s=5.0, memory_mb=256, grace_s=10.0, nproc=8)


@pytest.fixture(scope="session")
def mbpp_tasks(mbpp_dataset):
    from ratchet_ray.suites.mbpp.dataset import to_tasks

    return {task.task_id: task for task in to_tasks(mbpp_dataset)}
