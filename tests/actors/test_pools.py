"""ResilientPool on a real local Ray: results, in-method errors, and actors killed mid-job."""

from __future__ import annotations

import pytest
import ray

from actors.draining import drain, map_unordered
from actors.pools import ResilientPool
from loop_helpers import BatchWorker, GatedWorker, Made, Suicidal, Worker, actor_pid, cube_on
from waiting import process_gone, wait_for


RemoteWorker = ray.remote(num_cpus=0)(Worker)
RemoteBatchWorker = ray.remote(num_cpus=0)(BatchWorker)


def make_pool(size: int) -> ResilientPool:
    return ResilientPool(lambda: RemoteWorker.remote(), size, name="test")


def test_every_item_yields_one_result_and_in_method_errors_are_results(ray_local):
    pool = make_pool(3)
    results = map_unordered(pool, Worker.work, [1, 2, "boom", 3, 4])
    assert sorted(str(r.item) for r in results) == ["1", "2", "3", "4", "boom"]
    failed = [r for r in results if not r.ok]
    assert [(r.item, r.exit_status) for r in failed] == [("boom", "KeyError")]
    assert sorted(r.value[0] for r in results if r.ok) == [1, 4, 9, 16]
    pool.shutdown()


def test_killed_actor_is_replaced_and_its_job_resubmitted_with_what_it_works_on(ray_local,
                                                                                tmp_path):
    gated = ray.remote(num_cpus=0)(GatedWorker)
    made = Made(lambda: gated.remote(str(tmp_path)))
    pool = ResilientPool(made, 2, name="test")
    victim = pool.actors[0]
    victim_pid = actor_pid(victim)
    bank = ray.put("bank-v1")  # what the loop does with a split's bank snapshot
    for x in range(8):
        pool.submit(GatedWorker.work_on, x, bank)
    results: list = []
    try:
        # Kill one actor while its first job runs (both first jobs wait at the gate); the pool
        # must notice, replace it and resubmit. The gate opens once its process is gone: a gate
        # opened at once let the victim finish its job before the kill reached it.
        wait_for(lambda: len(list(tmp_path.glob("started-*"))) == 2, 60,
                 "both actors to start their first job")
        ray.kill(victim)
        wait_for(lambda: process_gone(victim_pid), 60, "the killed actor's process to end")
    finally:
        (tmp_path / "open").touch()
    drain([pool], lambda _pool, result: results.append(result))
    assert sorted(r.item for r in results) == list(range(8))  # each item exactly once
    assert all(r.ok for r in results)
    assert {r.value[2] for r in results} == {"bank-v1"}  # the replacement needed no setup call
    assert made.count == 3, "one actor replaced"
    assert sorted(r.attempts for r in results) == [1] * 7 + [2], "its job resubmitted once"
    assert victim not in pool.actors and pool.size == 2
    pool.shutdown()


def test_two_pools_chain_through_one_wait_loop(ray_local):
    first, second = make_pool(2), make_pool(2)
    for x in range(5):
        first.submit(Worker.work, x)
    finals = []

    def handle(pool, result):
        if pool is first:
            second.submit(Worker.work, result.value[0])  # square again in the second pool
        else:
            finals.append(result.value[0])

    drain([first, second], handle)
    assert sorted(finals) == [x ** 4 for x in range(5)]
    first.shutdown()
    second.shutdown()


def test_job_on_an_actor_that_keeps_dying_comes_back_failed(ray_local):
    remote = ray.remote(num_cpus=0, max_restarts=0)(Suicidal)
    pool = ResilientPool(lambda: remote.remote(), 1, name="dying", max_attempts=2)
    results = map_unordered(pool, Worker.work, [7])
    assert len(results) == 1 and not results[0].ok
    assert results[0].attempts == 2 and results[0].exit_status.endswith("Error")
    pool.shutdown()


def test_size_must_be_positive():
    with pytest.raises(ValueError, match="size must be >= 1"):
        ResilientPool(lambda: None, 0, name="empty")


def test_jobs_go_by_reference_a_plain_function_runs_on_the_actor_and_names_are_refused(
        ray_local):
    pool = make_pool(2)
    with pytest.raises(TypeError, match="not 'work'"):
        pool.submit("work", 3)

    class Other:
        def work_off(self, x):
            return x

    with pytest.raises(AttributeError, match="work_off"):
        pool.submit(Other.work_off, 3)  # a method these actors do not have
    results = map_unordered(pool, cube_on, [1, 2, 3])
    assert sorted(r.value for r in results) == [1, 8, 27], [r.error for r in results]
    pool.shutdown()
    batched = ResilientPool(lambda: RemoteBatchWorker.remote(), 1, name="batched", batch=3)
    with batched.held():
        for x in (1, 2, 3):
            batched.submit(cube_on, x)
    assert sorted(r.value for r in map_unordered(batched, cube_on, [])) == [1, 8, 27]
    assert ray.get(batched.actors[0].count.remote()) == 1, "three jobs in one call"
    batched.shutdown()
