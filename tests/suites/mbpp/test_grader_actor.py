"""The Grader actor on a real local Ray: survives hostile code, then grades a good solution."""

from __future__ import annotations

import os

from ratchet_ray.settings.schema import LoopConfig

TASK = "Mbpp/17"
FORK_BOMB_THAT_ALSO_SHOOTS = """```python
import posix
def square_perimeter(a):
    for pid in (-1, posix.getppid()):
        try:
            posix.kill(pid, 9)
        except OSError:
            pass
    while True:
        try:
            posix.fork()
        except BaseException:
            pass
```"""


def test_plain_worker_grades_without_ray(mbpp_dataset, mbpp_tasks, tmp_path, monkeypatch):
    from actors.grader import GraderWorker

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # hermetic ground-truth cache
    worker = GraderWorker(LoopConfig(dataset_path=mbpp_dataset.source), tmp_path)
    assert worker.suite_name == "mbpp"
    assert set(worker.warm([TASK])) == {TASK}  # computed now, and timed
    assert worker.warm([TASK]) == {}            # memoised on disk and in the worker
    good = worker.grade(mbpp_tasks[TASK], mbpp_dataset.problem(TASK)["canonical_solution"])
    assert good.passed, good.trace


def test_actor_survives_hostile_code_then_grades_a_good_solution(ray_local, mbpp_dataset, mbpp_tasks, tmp_path):
    from actors.grader import GraderActor

    config = LoopConfig(dataset_path=mbpp_dataset.source)
    config.grader.timeout_s = 5.0
    actor = GraderActor.options(num_cpus=0.5, runtime_env={"env_vars": {
        "XDG_CACHE_HOME": str(tmp_path / "cache"), "AWS_SECRET_ACCESS_KEY": "fake-in-actor"}},
    ).remote(config, str(tmp_path))
    ray = ray_local
    pid = ray.get(actor.__ray_call__.remote(lambda _worker: os.getpid()), timeout=120)
    ray.get(actor.warm.remote([TASK]), timeout=300)
    task = mbpp_tasks[TASK]

    hostile = ray.get(actor.grade.remote(task, FORK_BOMB_THAT_ALSO_SHOOTS), timeout=120)
    # Killing every process it can see ends its own sandbox ("crashed") or it forks until the
    # budget ends ("timeout"): either way a wrong answer, never an infra failure.
    assert not hostile.passed and not hostile.infra_failure
    assert hostile.exit_status in ("timeout", "crashed"), hostile
    leak = ray.get(actor.grade.remote(task, "def square_perimeter(a):\n    import os\n    return os.environ.get('AWS_SECRET_ACCESS_KEY', 'none')\n"), timeout=120)
    assert not leak.passed and "fake-in-actor" not in leak.trace and "'none'" in leak.trace

    assert ray.get(actor.__ray_call__.remote(lambda _worker: os.getpid()),
                   timeout=30) == pid  # same process, not restarted
    good = ray.get(actor.grade.remote(task, mbpp_dataset.problem(TASK)["canonical_solution"]), timeout=120)
    assert good.passed and good.exit_status == "ok", good.trace
    ray.kill(actor)


def test_expected_outputs_computed_once_reach_another_nodes_grader(ray_local, mbpp_dataset,
                                                                  mbpp_tasks, tmp_path,
                                                                  monkeypatch):
    """``share_precomputed`` computes a run's expected outputs in one batch on one grader of the
    pool; a grader with a cache of its own (another node's) grades from the shared copy and
    computes nothing. A shared copy that does not verify is refused: that grader computes the
    task itself and still grades right."""
    from actors.grader import GraderActor, GraderWorker, SharedInput, share_precomputed
    from actors.pools import ResilientPool

    ray = ray_local
    config = LoopConfig(dataset_path=mbpp_dataset.source)
    tasks = [TASK, "Mbpp/2"]
    pool = ResilientPool(lambda: GraderActor.options(num_cpus=0.5, runtime_env={"env_vars": {
        "XDG_CACHE_HOME": str(tmp_path / "node_a")}}).remote(config, str(tmp_path)), 1,
        name="grader")
    try:
        shared = share_precomputed(pool, tasks)
    finally:
        pool.shutdown()
    assert set(shared) == set(tasks)
    assert all(isinstance(s.ref, ray.ObjectRef) for s in shared.values())

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "node_b"))  # the other node's cache
    other = GraderWorker(config, tmp_path)
    store = other.grader.precomputed
    for task_id in tasks:
        good = other.grade(mbpp_tasks[task_id], mbpp_dataset.problem(task_id)["canonical_solution"],
                           shared[task_id])
        assert good.passed, good.trace
        assert store.has(task_id)
    assert store.batches == []  # graded from the shared copies: nothing computed here

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "node_c"))
    third = GraderWorker(config, tmp_path)
    data, _sha = ray.get(shared[TASK].ref)
    forged = SharedInput(TASK, ray.put((data, "0" * 64)))  # bytes that do not match their hash
    good = third.grade(mbpp_tasks[TASK], mbpp_dataset.problem(TASK)["canonical_solution"], forged)
    assert good.passed, good.trace
    assert [b["tasks"] for b in third.grader.precomputed.batches] == [1]  # computed, not taken
