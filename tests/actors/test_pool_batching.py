"""Several jobs per actor call (``actors.batching``): the sizing rule, per-job results, and an
actor killed mid-call on a real local Ray."""

from __future__ import annotations

import pytest
import ray

from actors.batching import CALL_TARGET_S, BatchSizer
from actors.draining import drain, map_unordered
from actors.pools import ResilientPool
from loop_helpers import BatchWorker, GatedBatchWorker, Made, actor_pid, running_actors
from waiting import process_gone, wait_for

RemoteBatchWorker = ray.remote(num_cpus=0)(BatchWorker)


def test_the_sizer_sends_one_job_until_it_knows_then_fills_the_target_within_a_fair_share():
    sizer = BatchSizer()
    assert sizer.size("run", queued=60, actors=2) == 1, "nothing timed yet: one job per call"
    sizer.observe("run", jobs=1, seconds=0.002)
    assert sizer.size("run", queued=60, actors=2) == 30, "fast jobs: capped by the fair share"
    assert sizer.size("run", queued=1000, actors=2) == int(CALL_TARGET_S / 0.002)
    sizer.observe("grade", jobs=1, seconds=3.0)
    assert sizer.size("grade", queued=60, actors=2) == 1, "a job of seconds travels alone"
    fixed = BatchSizer(4)
    assert fixed.size("run", queued=60, actors=2) == 4 and fixed.size("run", 3, 2) == 2
    with pytest.raises(ValueError, match="tasks per call must be >= 1"):
        BatchSizer(0)


def test_batch_calls_keep_each_items_outcome_and_share_keyword_arguments():
    results, seconds = BatchWorker().call_batch(BatchWorker.work, [(2, (0.0,)), ("boom", ()), (3, (0.0,))])
    assert [ok for ok, _ in results] == [True, False, True] and seconds >= 0
    assert results[0][1][0] == 4 and isinstance(results[1][1], KeyError)
    with pytest.raises(TypeError, match=r"the method itself \(e\.g\. SolverWorker\.run\)"):
        BatchWorker().call_batch("work", [(2, (0.0,))])  # by reference, never by name


def test_batched_pool_gives_one_result_per_job_in_fewer_calls(ray_local):
    pool = ResilientPool(lambda: RemoteBatchWorker.remote(), 2, name="batched", batch=5)
    with pool.held():
        for x in [1, 2, "boom", 3, 4, 5, 6, 7, 8, 9]:
            pool.submit(BatchWorker.work, x, 0.0)
    results = map_unordered(pool, BatchWorker.work, [])
    assert sorted(str(r.item) for r in results) == sorted(
        str(x) for x in [1, 2, "boom", 3, 4, 5, 6, 7, 8, 9])
    assert [(r.item, r.exit_status) for r in results if not r.ok] == [("boom", "KeyError")]
    assert sorted(r.value[0] for r in results if r.ok) == sorted(
        x * x for x in [1, 2, 3, 4, 5, 6, 7, 8, 9])
    calls = sum(ray.get([actor.count.remote() for actor in pool.actors]))
    assert calls == 2, "ten jobs held, then two calls of five (a fair share each)"
    pool.shutdown()


def test_an_actor_killed_mid_call_loses_its_call_and_every_job_still_yields_once(ray_local,
                                                                                tmp_path):
    gated = ray.remote(num_cpus=0)(GatedBatchWorker)
    made = Made(lambda: gated.remote(str(tmp_path)))
    pool = ResilientPool(made, 2, name="batched", batch=4)
    pids = {actor: actor_pid(actor) for actor in pool.actors}
    with pool.held():
        for x in range(8):
            pool.submit(BatchWorker.work, x, 0.0)  # two calls of four, each stopped at its first job
    victim = running_actors(pool)[0]
    try:
        wait_for(lambda: len(list(tmp_path.glob("started-*"))) == 2, 60,
                 "both calls to start their first job")
        ray.kill(victim)  # mid-call: its four jobs are lost with it
        # The gate opens once its process is gone: a gate opened at once let the victim finish
        # its call before the kill reached it.
        wait_for(lambda: process_gone(pids[victim]), 60, "the killed actor's process to end")
    finally:
        (tmp_path / "open").touch()
    results: list = []
    drain([pool], lambda _pool, result: results.append(result))
    assert sorted(r.item for r in results) == list(range(8)), "each job exactly once"
    assert all(r.ok for r in results)
    lost = pool.take_lost()
    assert len(lost) == 4 and all(a.attempt == 1 for a in lost)
    assert made.count == 3, "one actor replaced"
    assert sorted(r.attempts for r in results) == [1] * 4 + [2] * 4, "four jobs resubmitted"
    assert victim not in pool.actors
    pool.shutdown()
