"""Fixtures for the MBPP+ suite tests: the real dataset, real evalplus ground truth (in a
per-session cache dir, so tests never depend on or disturb ~/.cache/evalplus) and real graders."""

from __future__ import annotations

import os

import pytest

from mbpp_cases import GRADED_TASKS
from offline_data import mbpp_plus_path


@pytest.fixture(scope="session")
def mbpp_dataset():
    from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus

    return load_mbpp_plus(mbpp_plus_path())


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


@pytest.fixture
def own_sandbox_processes(monkeypatch):
    """A callable listing the live processes of the sandboxes this test's in-process graders
    started: each grade runs under a fresh uid (as root), recorded here as it is chosen, so the
    check ignores sandboxes of other tests running at the same time (``make test`` runs two
    workers). Without root, grades keep the caller's uid and the callable lists nothing."""
    from ratchet_ray.suites.mbpp import sandbox as sandbox_module

    uids: set[int] = set()
    real = sandbox_module._as_grade_user

    def recording(argv):
        wrapped = real(argv)
        if wrapped is not argv:  # [interpreter, -I, -S, -B, confine.py, uid, ...]
            uids.add(int(wrapped[5]))
        return wrapped

    monkeypatch.setattr(sandbox_module, "_as_grade_user", recording)

    def live() -> set[int]:
        pids = set()
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if os.stat(f"/proc/{entry}").st_uid in uids:
                        pids.add(int(entry))
                except OSError:
                    continue
        return pids

    return live
