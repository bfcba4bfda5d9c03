"""Locality for a pool's dispatch: a job goes to an idle actor whose node already holds what the
job needs (an instance's container image), when one does.

Contracts:
- A suite hands its pools a ``Placement`` (``suites.hooks.placement``; None: queue order).
  ``key(method, item)`` names what one job needs on its node (hashable; None: any actor), computed
  once per job on the driver. ``held_here()`` runs on a node, in a zero-CPU task pinned there, and
  returns the keys that node holds now from its own records (not a daemon several Ray nodes of
  one host share); if it raises or does not answer within ``SURVEY_TIMEOUT_S``, that node holds
  nothing. A placement must pickle.
- ``Locality`` is the pool's part. It learns each actor's node (a call queued on the actor before
  any job) and surveys the nodes of the pool's actors when a dispatch has a choice and its
  knowledge may be stale: at first, after a job with a key ended, after an actor was replaced.
  One unwaited survey task starts on each newly learned node, so later surveys find a warm
  worker. A pool whose actors are all on one node never surveys.
- The first dispatch waits (bounded by the pool's start timeout, raising as ``drain`` would)
  until the pool's actors have started; later, an actor whose node is unknown (a replacement
  still starting) holds nothing.
- Choice (``pick``): an idle actor takes the earliest queued job its node holds; else the
  earliest job no node of the pool holds; else the earliest job each of whose holder nodes has
  more queued jobs than actors (work stealing); else nothing (the job waits for its busy holder).
  A queued job overtaken ``pool size`` times goes to the next idle actor whatever it holds. A
  batching pool's call carries, after its first job, only jobs of the same method and keyword
  arguments that this node holds or no node holds. Without a survey, jobs go in queue order.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import Counter, deque
from typing import Any, Callable, Hashable, Iterable, Protocol

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

log = logging.getLogger(__name__)
SURVEY_TIMEOUT_S = 30.0


class Placement(Protocol):
    """What a suite tells a pool about where its jobs run best (module contract)."""

    def key(self, method: str, item: Any) -> Hashable | None: ...

    def held_here(self) -> Iterable[Hashable]: ...


def pinned(node: str | None = None) -> NodeAffinitySchedulingStrategy:
    """Hard affinity to ``node`` (None: this process's node)."""
    return NodeAffinitySchedulingStrategy(node or ray.get_runtime_context().get_node_id(),
                                          soft=False)


def on_node(task: Any, node: str) -> Any:
    """``task`` (a remote function) as a zero-CPU, never-retried run pinned to ``node``: how a
    node is asked about itself."""
    return task.options(num_cpus=0, max_retries=0, scheduling_strategy=pinned(node))


def node_of_actor(_instance: Any) -> str:
    """Run through ``actor.__ray_call__``: the Ray node id of the actor's process."""
    return ray.get_runtime_context().get_node_id()


def held_by_actor(_instance: Any, placement: Placement) -> list:
    """Run through ``actor.__ray_call__`` as the actor starts: what its node holds, read in the
    actor's own process, which has imported what the placement needs, where a first survey
    task would start a worker and import it all on every node."""
    return list(placement.held_here())


def held_on_node(placement: Placement) -> list:
    """Run in a task pinned to a node: what that node holds."""
    return list(placement.held_here())


@functools.lru_cache(maxsize=None)
def _survey_task() -> Any:
    return ray.remote(held_on_node)


class Locality:
    """A pool's view of which node each actor is on and what each node holds."""

    def __init__(self, placement: Placement, pool: str):
        self.placement = placement
        self.pool = pool
        self.holdings: dict[str, set] = {}
        """Node id -> the keys it held at the last survey (nodes of the pool's actors)."""
        self.stale = True
        self.surveys = 0
        self._warmed: dict[str, Any] = {}
        """Node id -> a survey task started as the node was learned (see ``_warm_survey``)."""

    # ---- what the pool tells it ---------------------------------------------------------------
    def key(self, method: str, item: Any) -> Hashable | None:
        try:
            return self.placement.key(method, item)
        except Exception as exc:  # noqa: BLE001 - a placement hint must never fail a job
            log.warning("pool %s: placement key of %r failed (%s); placed anywhere", self.pool,
                        item, exc)
            return None

    def started(self, slot: Any) -> None:
        """A new actor in ``slot``: learn its node (an actor call queued before any job)."""
        slot.node = None
        slot.where = slot.actor.__ray_call__.remote(node_of_actor)
        slot.told = slot.actor.__ray_call__.remote(held_by_actor, self.placement)
        self.stale = True

    def ended(self, key: Hashable | None) -> None:
        if key is not None:
            self.stale = True

    # ---- before a dispatch --------------------------------------------------------------------
    def prepare(self, slots: list, queue: deque, check_started: Callable[[], None],
                wait_s: float) -> None:
        """Learn the actors' nodes (waiting on a pool's first dispatch) and survey the nodes
        when stale and a queued job has a key."""
        first = all(slot.node is None for slot in slots)
        self._learn_nodes(slots, check_started, wait_s if first else 0.0)
        nodes = {slot.node for slot in slots if slot.node is not None}
        if len(nodes) < 2:
            self.holdings = {}
            return
        if self.stale and any(job.place is not None for job in queue):
            told = self._told_holdings(slots) if self.surveys == 0 else {}
            if set(told) == nodes:
                # The actors said what their nodes held as they started: that is the first
                # survey, without a task per node (a cold worker and its imports).
                self.holdings, self.stale = told, False
                self.surveys += 1
            else:
                self._survey(sorted(nodes))
        for slot in slots:
            slot.told = None

    @staticmethod
    def _told_holdings(slots: list) -> dict[str, set]:
        """Node id -> what an actor of that node said it held as it started (``held_by_actor``);
        a node whose actors did not answer is missing."""
        refs = {slot.told: slot for slot in slots
                if getattr(slot, "told", None) is not None and slot.node is not None}
        if not refs:
            return {}
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=SURVEY_TIMEOUT_S)
        told: dict[str, set] = {}
        for ref in ready:
            try:
                told.setdefault(refs[ref].node, set()).update(ray.get(ref))
            except Exception as exc:  # noqa: BLE001 - a hint: the tasks' survey asks again
                log.info("an actor could not say what its node holds (%s)", exc)
        return told

    def _learn_nodes(self, slots: list, check_started: Callable[[], None], wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        while True:
            pending = {slot.where: slot for slot in slots if slot.where is not None}
            if not pending:
                return
            left = deadline - time.monotonic()
            ready, _ = ray.wait(list(pending), num_returns=len(pending),
                                timeout=max(0.0, min(1.0, left)))
            for ref in ready:
                slot = pending[ref]
                slot.where = None
                try:
                    slot.node = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - died before answering: a job sees it
                    log.info("pool %s: an actor's node is unknown (%s)", self.pool, exc)
                    continue
                self._warm_survey(slot.node)
            if len(ready) == len(pending) or left <= 0:
                return
            check_started()  # an actor that cannot start raises here, as drain would

    def _warm_survey(self, node: str) -> None:
        """Start one survey task on ``node`` (once per node; its result is not waited for):
        the worker it starts there imports what the placement needs while the pool's actors
        warm up, so the surveys after jobs end find a warm worker instead of paying that start
        (seconds per node on a loaded host) while every dispatch waits."""
        if node not in self._warmed:
            self._warmed[node] = on_node(_survey_task(), node).remote(self.placement)

    def _survey(self, nodes: list[str]) -> None:
        task = _survey_task()
        refs = {node: on_node(task, node).remote(self.placement) for node in nodes}
        ready, late = ray.wait(list(refs.values()), num_returns=len(refs),
                               timeout=SURVEY_TIMEOUT_S)
        done = set(ready)
        holdings: dict[str, set] = {}
        for node, ref in refs.items():
            holdings[node] = set()
            if ref not in done:
                log.warning("pool %s: node %s did not say what it holds within %.0fs; "
                            "placing as if it held nothing", self.pool, node, SURVEY_TIMEOUT_S)
                continue
            try:
                holdings[node] = set(ray.get(ref))
            except Exception as exc:  # noqa: BLE001 - only a hint: the node holds nothing
                log.warning("pool %s: node %s could not say what it holds (%s)", self.pool,
                            node, exc)
        for ref in late:
            ray.cancel(ref)
        self.holdings, self.stale = holdings, False
        self.surveys += 1

    # ---- the choice ---------------------------------------------------------------------------
    def holders(self, key: Hashable | None, slots: list) -> set[str]:
        """The nodes of the pool's current actors whose last survey listed ``key``."""
        if key is None or not self.holdings:
            return set()
        nodes = {slot.node for slot in slots}
        return {node for node, keys in self.holdings.items() if key in keys and node in nodes}

    def pick(self, queue: deque, slot: Any, slots: list, local_only: bool) -> int | None:
        """Index of the queued job ``slot``'s idle actor takes, or None: none for it now
        (module contract; ``local_only``: only a job its node holds, or a job due). The jobs
        it overtakes count it."""
        if not self.holdings or queue[0].overtaken >= len(slots):
            return 0
        held = [self.holders(job.place, slots) for job in queue]
        index = next((i for i, nodes in enumerate(held) if slot.node in nodes), None)
        if index is None and not local_only:
            index = next((i for i, nodes in enumerate(held) if not nodes), None)
            if index is None:
                index = self._steal(held, slots)
        for i in range(index or 0):
            queue[i].overtaken += 1
        return index

    @staticmethod
    def _steal(held: list[set[str]], slots: list) -> int | None:
        """The earliest queued job every holder of which has more queued jobs than actors."""
        actors = Counter(slot.node for slot in slots)
        backlog = Counter(node for nodes in held for node in nodes)
        return next((i for i, nodes in enumerate(held)
                     if all(backlog[node] > actors[node] for node in nodes)), None)

    def fits(self, job: Any, slot: Any, slots: list) -> bool:
        """Whether ``job`` may join a call on ``slot``'s actor: its node holds the job's key, or
        no node of the pool does."""
        holders = self.holders(job.place, slots)
        return not holders or slot.node in holders
