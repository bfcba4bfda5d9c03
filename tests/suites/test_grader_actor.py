"""The Grader actor on a real local Ray: survives hostile code, then grades a good solution."""

from __future__ import annotations

from ratchet_ray.config import LoopConfig

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
    assert worker.describe()["suite"] == "mbpp"
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
    info = ray.get(actor.describe.remote(), timeout=120)
    ray.get(actor.warm.remote([TASK]), timeout=300)
    task = mbpp_tasks[TASK]

    hostile = ray.get(actor.grade.remote(task, FORK_BOMB_THAT_ALSO_SHOOTS), timeout=120)
    # Killing every process it can see ends its own sandbox ("crashed") or it forks until the
    # budget ends ("timeout"): either way a wrong answer, never an infra failure.
    assert not hostile.passed and not hostile.infra_failure
    assert hostile.exit_status in ("timeout", "crashed"), hostile
    leak = ray.get(actor.grade.remote(task, "def square_perimeter(a):\n    import os\n    return os.environ.get('AWS_SECRET_ACCESS_KEY', 'none')\n"), timeout=120)
    assert not leak.passed and "fake-in-actor" not in leak.trace and "'none'" in leak.trace

    assert ray.get(actor.ping.remote(), timeout=30) == "ok"
    assert ray.get(actor.describe.remote(), timeout=30)["pid"] == info["pid"]  # same process, not restarted
    good = ray.get(actor.grade.remote(task, mbpp_dataset.problem(TASK)["canonical_solution"]), timeout=120)
    assert good.passed and good.exit_status == "ok", good.trace
    ray.kill(actor)
