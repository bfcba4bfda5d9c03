"""Fault-tolerant actor pools: fan work out over N stateless actors with ``ray.wait`` loops.

Contracts:
- ``ResilientPool(make_actor, size, name=...)`` owns ``size`` actor handles from ``make_actor()``.
  ``submit(method, item, *args)`` queues one call ``actor.<method>(item, *args)``; at most one call
  is in flight per actor, so work spreads evenly and a dead actor takes at most one job with it.
- ``complete(ref)`` turns a finished object ref into a ``PoolResult`` (value or error). When the
  actor died (``RayActorError``: killed, crashed, out of memory) the pool replaces the actor,
  replays the setup calls recorded by ``broadcast`` on the new one, resubmits the job and returns
  ``None``; after ``max_attempts`` deaths the job comes back as a failed result instead. An
  exception raised *inside* the method is a failed result at once (no retry): it is the job's
  outcome, not the actor's.
- ``drain(pools, handle)`` is the one ``ray.wait`` loop: it hands every finished result to
  ``handle(pool, result)``, which may submit more work (e.g. solver result -> grader job), until
  all pools are idle. Every submitted job yields exactly one result.

Example::

    pool = ResilientPool(lambda: Echo.remote(), size=4, name="echo")
    for x in range(10):
        pool.submit("echo", x)
    results = []
    drain([pool], lambda _pool, result: results.append(result))
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import ray
from ray.exceptions import RayActorError, RayTaskError

log = logging.getLogger(__name__)


@dataclass
class PoolResult:
    """What one job produced: ``value`` on success, ``error`` otherwise (never both)."""

    item: Any
    value: Any = None
    error: BaseException | None = None
    attempts: int = 1
    key: Any = None
    """What the caller passed as ``key`` to ``submit`` (defaults to ``item``)."""

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def exit_status(self) -> str:
        """``"ok"`` or the name of the exception that ended the job (its cause, not a wrapper)."""
        return "ok" if self.error is None else type(self.error).__name__


@dataclass
class _Job:
    method: str
    item: Any
    args: tuple
    kwargs: dict
    key: Any
    attempts: int = 0


@dataclass
class _Slot:
    actor: Any
    job: _Job | None = None


@dataclass
class PoolStats:
    submitted: int = 0
    completed: int = 0
    failed: int = 0
    actors_replaced: int = 0
    resubmitted: int = 0
    setup_calls: dict[str, tuple] = field(default_factory=dict)


class ResilientPool:
    """N interchangeable actors; dead ones are replaced and their job resubmitted."""

    def __init__(self, make_actor: Callable[[], Any], size: int, *, name: str,
                 max_attempts: int = 3):
        if size < 1:
            raise ValueError(f"pool {name!r}: size must be >= 1, got {size}")
        self.name = name
        self.max_attempts = max_attempts
        self._make_actor = make_actor
        self._slots = [_Slot(make_actor()) for _ in range(size)]
        self._queue: deque[_Job] = deque()
        self._inflight: dict[Any, _Slot] = {}
        self.stats = PoolStats()

    # ---- state -------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return len(self._slots)

    @property
    def busy(self) -> bool:
        return bool(self._queue or self._inflight)

    @property
    def actors(self) -> list[Any]:
        return [slot.actor for slot in self._slots]

    def running(self) -> list[Any]:
        """Actors with a job in flight right now."""
        return [slot.actor for slot in self._slots if slot.job is not None]

    def refs(self) -> list[Any]:
        return list(self._inflight)

    def owns(self, ref: Any) -> bool:
        return ref in self._inflight

    # ---- work ----------------------------------------------------------------------------------
    def submit(self, method: str, item: Any, *args: Any, key: Any = None, **kwargs: Any) -> None:
        """Queue ``actor.<method>(item, *args, **kwargs)``; it starts as soon as an actor is idle.

        The result carries ``item`` and ``key`` (default: ``item``) to tell jobs apart.
        """
        self._queue.append(_Job(method, item, args, kwargs, item if key is None else key))
        self.stats.submitted += 1
        self._dispatch()

    def broadcast(self, method: str, *args: Any) -> None:
        """Call ``method(*args)`` on every actor and wait; replacements replay the latest call.

        Used for per-round setup such as ``set_bank(skills)``: a Solver that replaces a dead one
        must see the same bank snapshot as its peers.
        """
        if self._inflight:
            raise RuntimeError(f"pool {self.name!r}: broadcast while jobs are in flight")
        self.stats.setup_calls[method] = args
        pending = {getattr(slot.actor, method).remote(*args): slot for slot in self._slots}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=len(pending))
            for ref in ready:
                slot = pending.pop(ref)
                try:
                    ray.get(ref)  # ready already: this only surfaces the outcome
                except RayActorError as err:
                    log.warning("pool %s: actor died during %s (%s); replacing",
                                self.name, method, err)
                    self._replace(slot)  # the replacement replays every setup call, this one too

    def heal(self) -> int:
        """Replace the actors that died while idle; returns how many were replaced.

        A dead actor is noticed when a job or setup call reaches it, so one that died between
        jobs could sit in the pool unused; call this between phases (no jobs in flight).
        """
        if self._inflight:
            raise RuntimeError(f"pool {self.name!r}: heal while jobs are in flight")
        replaced = 0
        pending = {slot.actor.__ray_ready__.remote(): slot for slot in self._slots}
        ready, _ = ray.wait(list(pending), num_returns=len(pending))
        for ref in ready:
            try:
                ray.get(ref)
            except RayActorError as err:
                log.warning("pool %s: idle actor found dead (%s); replacing", self.name, err)
                self._replace(pending[ref])
                replaced += 1
        return replaced

    def complete(self, ref: Any) -> PoolResult | None:
        """Resolve a finished ref. ``None`` means its actor died and the job was resubmitted."""
        slot = self._inflight.pop(ref)
        job = slot.job
        slot.job = None
        job.attempts += 1
        try:
            value = ray.get(ref)  # ``ref`` came out of ray.wait: already finished, no blocking
        except RayActorError as err:
            log.warning("pool %s: actor died running %s (attempt %d): %s",
                        self.name, job.method, job.attempts, err)
            self._replace(slot)
            if job.attempts < self.max_attempts:
                self.stats.resubmitted += 1
                self._queue.appendleft(job)
                self._dispatch()
                return None
            return self._finish(PoolResult(job.item, error=err, attempts=job.attempts, key=job.key))
        except RayTaskError as err:
            cause = err.cause if isinstance(err.cause, BaseException) else err
            self._dispatch()
            return self._finish(PoolResult(job.item, error=cause, attempts=job.attempts,
                                           key=job.key))
        self._dispatch()
        return self._finish(PoolResult(job.item, value=value, attempts=job.attempts, key=job.key))

    def shutdown(self) -> None:
        """Kill every actor (running jobs are abandoned)."""
        for slot in self._slots:
            ray.kill(slot.actor)
        self._inflight.clear()
        self._queue.clear()

    # ---- internals -----------------------------------------------------------------------------
    def _finish(self, result: PoolResult) -> PoolResult:
        self.stats.completed += 1
        self.stats.failed += 0 if result.ok else 1
        return result

    def _replace(self, slot: _Slot) -> None:
        ray.kill(slot.actor)  # a no-op for a dead actor; stops a half-alive one from lingering
        slot.actor = self._make_actor()
        self.stats.actors_replaced += 1
        # Actor calls from one caller run in submission order, so setup precedes the next job.
        for method, args in self.stats.setup_calls.items():
            getattr(slot.actor, method).remote(*args)

    def _dispatch(self) -> None:
        for slot in self._slots:
            if not self._queue:
                return
            if slot.job is None:
                job = self._queue.popleft()
                slot.job = job
                ref = getattr(slot.actor, job.method).remote(job.item, *job.args, **job.kwargs)
                self._inflight[ref] = slot


def drain(pools: Sequence[ResilientPool], handle: Callable[[ResilientPool, PoolResult], None],
          *, tick: Callable[[], None] | None = None, tick_s: float = 5.0) -> None:
    """Wait on every pool's in-flight refs until all are idle, passing each result to ``handle``.

    ``tick`` (if given) runs at least every ``tick_s`` seconds while waiting, e.g. to flush buffers.
    """
    while any(pool.busy for pool in pools):
        refs = [ref for pool in pools for ref in pool.refs()]
        if not refs:
            raise RuntimeError("drain: pools report queued work but nothing in flight")
        ready, _ = ray.wait(refs, num_returns=1, timeout=tick_s)
        if ready:
            # Take every other ref that is also done, so a burst is handled in one pass.
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        for ref in ready:
            pool = next(p for p in pools if p.owns(ref))
            result = pool.complete(ref)
            if result is not None:
                handle(pool, result)
        if tick is not None:
            tick()


def map_unordered(pool: ResilientPool, method: str, items: Iterable[Any],
                  *args: Any) -> list[PoolResult]:
    """Run ``method(item, *args)`` for every item; one result per item, in completion order."""
    results: list[PoolResult] = []
    for item in items:
        pool.submit(method, item, *args)
    drain([pool], lambda _pool, result: results.append(result))
    return results
