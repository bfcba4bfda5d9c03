"""Locality of a pool's dispatch (``actors.placement``): the choice rule on its own, and a pool
with a placement on the real local Ray (one node: nothing to choose, queue order, no survey).
The multi-node case, with SWE-bench images, is ``tests/cluster/test_cluster_locality.py``."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace

import ray

from actors.placement import Locality
from actors.draining import drain
from actors.pools import ResilientPool, _Job
from loop_helpers import ByParity, Worker


def _locality(holdings: dict[str, set]) -> Locality:
    locality = Locality(ByParity(), "test")
    locality.holdings, locality.stale = holdings, False
    return locality


def _queue(*items) -> deque:
    return deque(_Job(Worker.work, x, (), {}, x, place=ByParity().key("work", x)) for x in items)


def _slots(*nodes) -> list:
    return [SimpleNamespace(node=node) for node in nodes]


def _pass(locality, queue, slots, idle) -> list:
    """What the pool's dispatch does: holders first, then the rest; (node, item) taken."""
    taken = []
    for local_only in (True, False):
        for slot in idle:
            if getattr(slot, "busy", False) or not queue:
                continue
            index = locality.pick(queue, slot, slots, local_only)
            if index is not None:
                taken.append((slot.node, queue[index].item))
                del queue[index]
                slot.busy = True
    return taken


def test_each_idle_actor_takes_the_earliest_job_its_node_holds():
    slots = _slots("a", "b")
    queue = _queue(None, 2, 1)  # nothing needed, even (held by a), odd (held by b)
    taken = _pass(_locality({"a": {0}, "b": {1}}), queue, slots, slots)
    assert taken == [("a", 2), ("b", 1)]
    assert [(j.item, j.overtaken) for j in queue] == [(None, 2)]  # overtaken by both


def test_a_job_held_nowhere_goes_to_any_free_actor():
    slots = _slots("a", "b")
    queue = _queue(3, 5)
    assert _pass(_locality({"a": {0}, "b": set()}), queue, slots, slots) == [("a", 3), ("b", 5)]


def test_a_job_waits_for_its_busy_holder_unless_the_holder_is_overloaded():
    slots = _slots("a", "b")
    locality = _locality({"a": {0}, "b": set()})
    one = _queue(2)
    assert _pass(locality, one, slots, [slots[1]]) == []  # a is busy and will come back to it
    two = _queue(2, 4)  # two queued for a's one actor: b steals the first
    assert _pass(locality, two, slots, [slots[1]]) == [("b", 2)]


def test_a_job_overtaken_pool_size_times_goes_next_whatever_it_holds():
    slots = _slots("a", "b")
    queue = _queue(3, 2)
    queue[0].overtaken = 2
    assert _pass(_locality({"a": {0}, "b": {1}}), queue, slots, [slots[0]]) == [("a", 3)]


def test_holders_are_only_nodes_of_the_pools_current_actors():
    slots = _slots("b", "b")  # node a's actor was replaced by one on b
    queue = _queue(2)
    assert _pass(_locality({"a": {0}, "b": set()}), queue, slots, slots[:1]) == [("b", 2)]


def test_a_pool_with_a_placement_on_one_node_runs_in_order_and_knows_the_node(ray_local):
    remote = ray.remote(num_cpus=0)(Worker)
    pool = ResilientPool(lambda: remote.remote(), 2, name="placed", placement=ByParity())
    results = []
    with pool.held():
        for x in range(6):
            pool.submit(Worker.work, x)
        assert not pool.refs()  # held: placed once the burst is known
    drain([pool], lambda _pool, result: results.append(result))
    assert sorted(r.value[0] for r in results) == [x * x for x in range(6)]
    assert {r.node for r in results} == {ray.get_runtime_context().get_node_id()}
    assert pool.locality.surveys == 0  # one node: nothing to choose between
    pool.shutdown()
