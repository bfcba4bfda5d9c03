"""Fault-tolerant actor pools: fan work out over N stateless actors with ``ray.wait`` loops.

Contracts:
- ``ResilientPool(make_actor, size, name=...)`` owns ``size`` actors from ``make_actor()``; at
  most one call is in flight per actor, so work spreads evenly and a dead actor takes at most one
  call with it. Jobs name their method by reference (``submit``), never by string.
- A death (``RayActorError``) replaces the actor (what it works on travels with each call) and
  resubmits the job, kept in ``pool.lost`` as a ``LostAttempt``; after ``max_attempts`` deaths
  the job comes back failed. An exception raised inside the method is the job's failed result at
  once. An actor that died before it started ran nothing: its job goes back without spending an
  attempt, at most ``NEVER_STARTED_RETRIES`` times.
- A constructor that raised stops the caller with ``ActorStartError`` (never retried); actors not
  started within ``start_timeout_s`` raise ``ActorStartTimeout`` naming the resources asked for
  and the cluster's. ``heal`` waits at most that plus ``setup_timeout_s``; a running job takes
  as long as it takes (its deadline is the suite's).
- ``actors.draining`` waits on results through the public API (``refs``/``owns``/``complete``,
  ``held``, ``check_started``): every submitted job yields exactly one result, unless
  ``cancel_queued`` dropped it before it started.
- Batching (``batch`` other than 1, ``actors.batching``): queued jobs of one method with equal
  keyword arguments travel in queue order as one ``call_batch`` (``batch`` N: at most N; None:
  adaptive). Each job yields its own result; a death mid-call costs each of them an attempt and
  sends them back to the front of the queue.
- Locality (``placement``): each job's key is taken at ``submit`` and dispatch follows
  ``actors.placement``; ``held()`` holds dispatch so a burst is placed (and batched) as a whole.
  ``PoolResult.node`` is the node that ran a job.

Why not Ray's ``max_task_retries`` or ``ray.util.ActorPool``: a retry here must be seen and
bounded per job (``LostAttempt``, the never-started rule, ``max_attempts=1`` for the
non-idempotent Synthesizer), and ``ActorPool`` has no batching, placement, start-up bound or
cancelling. An example of use: ``actors.draining``.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from actors.batching import BatchSizer, method_name
from actors.placement import Locality, Placement
from actors.pool_errors import (ActorStartError, ActorStartTimeout, LostAttempt, PoolError,
                                failure_text, not_started_text, raise_if_init_failed)

log = logging.getLogger(__name__)
__all__ = ["ActorStartError", "ActorStartTimeout", "LostAttempt", "PoolError", "PoolResult",
           "ResilientPool"]
START_TIMEOUT_S = 300.0
SETUP_TIMEOUT_S = 600.0
NEVER_STARTED_RETRIES = 5
READY_VERDICT_S = 5.0
"""How long a dead actor's ``__ray_ready__`` may take to say whether it had started; past it
the death counts as an attempt (the safe side: a job that may have run is never run unbounded)."""


@dataclass
class PoolResult:
    """What one job produced: ``value`` on success, ``error`` otherwise (never both)."""

    item: Any
    value: Any = None
    error: BaseException | None = None
    attempts: int = 1
    key: Any = None
    """What the caller passed as ``key`` to ``submit`` (defaults to ``item``)."""
    node: str | None = None
    """The Ray node of the actor that ran the job, where the pool knows it (a pool with a
    ``placement``)."""

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def exit_status(self) -> str:
        """``"ok"`` or the name of the exception that ended the job (its cause, not a wrapper)."""
        return "ok" if self.error is None else type(self.error).__name__


@dataclass
class _Job:
    method: Callable[..., Any]
    item: Any
    args: tuple
    kwargs: dict
    key: Any
    attempts: int = 0
    never_started: int = 0
    """Deaths of actors that never started under this job (not attempts; module contracts)."""
    place: Any = None
    """What the job needs on its node (``Placement.key``); None: nothing."""
    overtaken: int = 0
    """How many later jobs started before this one (bounded by the pool's size)."""

    @property
    def name(self) -> str:
        """The method's name (what batching, placement and lost attempts are keyed by)."""
        return method_name(self.method) or getattr(self.method, "__name__", repr(self.method))


@dataclass
class _Slot:
    actor: Any
    jobs: list[_Job] = field(default_factory=list)
    """The jobs of the call in flight on this actor (empty when idle)."""
    batched: bool = False
    """Whether that call is a ``call_batch`` (else one plain method call)."""
    ready: Any = None
    """``actor.__ray_ready__`` ref until its outcome is known (then None)."""
    started: bool = False
    """Whether that ref came back: the actor was constructed and could run a job."""
    made_at: float = 0.0
    node: str | None = None
    """The actor's Ray node once known (pools with a placement only)."""
    where: Any = None
    """The ref that will tell ``node`` (pools with a placement only)."""
    told: Any = None
    """The ref that will tell what that node held as the actor started (``Locality``)."""


class ResilientPool:
    """N interchangeable actors; dead ones are replaced and their job resubmitted."""

    def __init__(self, make_actor: Callable[[], Any], size: int, *, name: str,
                 max_attempts: int = 3, resources: dict[str, Any] | None = None,
                 start_timeout_s: float = START_TIMEOUT_S,
                 setup_timeout_s: float = SETUP_TIMEOUT_S, batch: int | None = 1,
                 placement: Placement | None = None):
        if size < 1:
            raise ValueError(f"pool {name!r}: size must be >= 1, got {size}")
        self.name = name
        self.max_attempts = max_attempts
        self.resources = dict(resources or {})
        """What each actor asks Ray for (named in start-up errors)."""
        self.start_timeout_s, self.setup_timeout_s = start_timeout_s, setup_timeout_s
        self._make_actor = make_actor
        self._sizer = None if batch == 1 else BatchSizer(batch)
        """How many jobs a call carries; None: one plain method call per job."""
        self._held = 0
        self.locality = None if placement is None else Locality(placement, name)
        self._slots = [self._start(_Slot(None)) for _ in range(size)]
        self._queue: deque[_Job] = deque()
        self._inflight: dict[Any, _Slot] = {}
        self.lost: list[LostAttempt] = []

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

    @property
    def queued(self) -> int:
        """Jobs waiting for an actor (not started yet)."""
        return len(self._queue)

    def refs(self) -> list[Any]:
        """The refs of the calls in flight (what a wait loop waits on)."""
        return list(self._inflight)

    def owns(self, ref: Any) -> bool:
        return ref in self._inflight

    # ---- work ----------------------------------------------------------------------------------
    def submit(self, method: Callable[..., Any], item: Any, *args: Any, key: Any = None,
               **kwargs: Any) -> None:
        """Queue ``actor.<method>(item, *args, **kwargs)``, started once an actor is idle.
        ``method``: a method of the actors' class (a rename breaks at import, not mid-run) or a
        plain function, run as ``fn(instance, item, ...)``; one the actors lack raises
        ``AttributeError`` here. The result carries ``item`` and ``key`` (default ``item``)."""
        name = method_name(method)
        if name is not None:
            getattr(self._slots[0].actor, name)  # Ray's handle names the missing method
        job = _Job(method, item, args, kwargs, item if key is None else key)
        if self.locality is not None:
            job.place = self.locality.key(job.name, item)
        self._queue.append(job)
        self._dispatch()

    @contextmanager
    def held(self):
        """On a batching or placing pool, start no queued job until the block ends, so they
        leave in full calls, each placed knowing the whole burst; nests. A pool of plain calls
        starts each job at once, as outside the block."""
        self._held += 1
        try:
            yield self
        finally:
            self._held -= 1
            self._dispatch()

    def heal(self) -> int:
        """Replace the actors that died while idle (unnoticed until a call reached them);
        returns how many. Call it between phases (no jobs in flight). Bounded: start-up
        problems raise through ``check_started``; once every actor is up, ``setup_timeout_s``
        bounds the wait."""
        if self._inflight:
            raise RuntimeError(f"pool {self.name!r}: heal while jobs are in flight")
        replaced = 0
        pending = {slot.actor.__ray_ready__.remote(): slot for slot in self._slots}
        up_since: float | None = None
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=1.0)
            for ref in ready:
                slot = pending.pop(ref)
                try:
                    ray.get(ref)  # ready already: this only surfaces the outcome
                except RayActorError as err:
                    raise_if_init_failed(self.name, err)
                    log.warning("pool %s: idle actor found dead (%s); replacing", self.name,
                                failure_text(err))
                    self._replace(slot)
                    replaced += 1
                except RayTaskError as err:
                    raise_if_init_failed(self.name, err)
                    raise  # the ready call itself failed: a bug to see, not to heal
            if not pending:
                break
            self.check_started()
            if all(slot.ready is None for slot in pending.values()):
                up_since = up_since if up_since is not None else time.monotonic()
                if time.monotonic() - up_since > self.setup_timeout_s:
                    raise PoolError(f"pool {self.name!r}: __ray_ready__ did not return within "
                                    f"{self.setup_timeout_s:.0f}s on {len(pending)} started "
                                    "actor(s); see run.log and the Ray worker logs")
        return replaced

    def check_started(self) -> None:
        """Raise ``ActorStartError`` / ``ActorStartTimeout`` for actors that cannot start;
        cheap (no blocking), called by every wait loop."""
        waiting = [slot for slot in self._slots if slot.ready is not None]
        if not waiting:
            return
        ready, _ = ray.wait([slot.ready for slot in waiting], num_returns=len(waiting),
                            timeout=0)
        done = set(ready)
        for slot in waiting:
            if slot.ready in done:
                ref, slot.ready = slot.ready, None
                try:
                    ray.get(ref)
                except (RayActorError, RayTaskError) as err:
                    raise_if_init_failed(self.name, err)  # else killed unstarted: a job sees it
                else:
                    slot.started = True
        late = [slot for slot in self._slots if slot.ready is not None
                and time.monotonic() - slot.made_at > self.start_timeout_s]
        if late:
            raise ActorStartTimeout(not_started_text(self.name, len(late), self.start_timeout_s,
                                                        self.resources))

    def complete(self, ref: Any) -> list[PoolResult]:
        """Resolve a finished ref: one result per job of its call, in the call's order. An
        empty list means its actor died and the jobs were resubmitted."""
        slot = self._inflight.pop(ref)
        jobs, batched = slot.jobs, slot.batched
        slot.jobs, slot.batched = [], False
        if self.locality is not None:
            for job in jobs:
                self.locality.ended(job.place)
        failure: BaseException | None = None
        try:
            value = ray.get(ref)  # ``ref`` came out of ray.wait: already finished, no blocking
        except RayActorError as err:
            raise_if_init_failed(self.name, err)
            return self._died_under(slot, jobs, err)
        except RayTaskError as err:
            raise_if_init_failed(self.name, err)  # the actor never started: every job would fail
            failure = err.cause if isinstance(err.cause, BaseException) else err
        for job in jobs:
            job.attempts += 1
        self._dispatch()
        if failure is not None:
            outcomes = [(False, failure)] * len(jobs)
        elif not batched:
            outcomes = [(True, value)]
        else:
            outcomes, seconds = value
            self._sizer.observe(jobs[0].name, len(jobs), seconds)
        return [self._finish(job, slot.node, None if ok else out, out if ok else None)
                for job, (ok, out) in zip(jobs, outcomes)]

    def _died_under(self, slot: _Slot, jobs: list[_Job], err: RayActorError) -> list[PoolResult]:
        """The call's actor died: replace it and send its jobs back to the front of the queue
        (module contracts); the jobs out of attempts come back as failed results."""
        never_started = not self._had_started(slot)
        death = failure_text(err)  # class, pid, signal, worker log: not Ray's boilerplate
        self._replace(slot)
        failed: list[PoolResult] = []
        retry: list[_Job] = []
        for job in jobs:
            if never_started and job.never_started < NEVER_STARTED_RETRIES:
                job.never_started += 1
                retry.append(job)
                continue
            job.attempts += 1
            self.lost.append(LostAttempt(job.name, job.item, job.key, job.attempts,
                                         death[:2000]))
            if job.attempts < self.max_attempts:
                retry.append(job)
            else:
                failed.append(self._finish(job, None, err))
        if never_started:
            log.warning("pool %s: an actor died before it started, under %s on %d job(s); sent "
                        "back without spending an attempt: %s", self.name, jobs[0].name,
                        len(jobs), death)
        else:
            log.warning("pool %s: actor died running %s on %d job(s) (attempt %d): %s",
                        self.name, jobs[0].name, len(jobs), jobs[0].attempts, death)
        self._queue.extendleft(reversed(retry))  # first again, in their order
        self._dispatch()
        return failed

    def _had_started(self, slot: _Slot) -> bool:
        """Whether ``slot``'s (now dead) actor had started, from its ``__ray_ready__``: failed
        means it never ran a job; unknown within ``READY_VERDICT_S`` counts as started."""
        if slot.started:
            return True
        if slot.ready is None:
            return False  # check_started already saw its ready call fail
        try:
            ray.get(slot.ready, timeout=READY_VERDICT_S)
        except (RayActorError, RayTaskError):
            return False
        except GetTimeoutError:
            return True
        return True

    def cancel_queued(self, keep: Callable[[Any], bool] = lambda key: False) -> list[Any]:
        """Drop the jobs no actor has started yet, except those whose key ``keep(key)`` holds,
        and return their items; jobs in flight run on and yield their results as usual. How a
        run that must stop (its budget spent) finishes only the work in flight."""
        dropped = [job.item for job in self._queue if not keep(job.key)]
        self._queue = deque(job for job in self._queue if keep(job.key))
        return dropped

    def shutdown(self) -> None:
        """Kill every actor (running jobs are abandoned)."""
        for slot in self._slots:
            ray.kill(slot.actor)
        self._inflight.clear()
        self._queue.clear()

    # ---- internals -----------------------------------------------------------------------------
    def _finish(self, job: _Job, node: str | None, error: BaseException | None,
                value: Any = None) -> PoolResult:
        """The job's one result."""
        return PoolResult(job.item, value=value, error=error, attempts=job.attempts,
                          key=job.key, node=node)

    def take_lost(self) -> list[LostAttempt]:
        """The attempts lost to dead actors since the last call (and forget them)."""
        lost, self.lost = self.lost, []
        return lost

    def _start(self, slot: _Slot) -> _Slot:
        slot.actor = self._make_actor()
        slot.ready = slot.actor.__ray_ready__.remote()  # runs before any job: tells "started"
        slot.started = False
        slot.made_at = time.monotonic()
        if self.locality is not None:
            self.locality.started(slot)
        return slot

    def _replace(self, slot: _Slot) -> None:
        ray.kill(slot.actor)  # a no-op for a dead actor; stops a half-alive one from lingering
        self._start(slot)

    def _dispatch(self) -> None:
        if self._held and (self._sizer is not None or self.locality is not None):
            return  # plain calls gain nothing from waiting; placed ones do (the whole burst)
        queued = len(self._queue)  # the fair share is of the queue as this pass found it
        idle = [slot for slot in self._slots if not slot.jobs]
        if not idle or not self._queue:
            return
        if self.locality is not None:
            self.locality.prepare(self._slots, self._queue, self.check_started,
                                  self.start_timeout_s)
        for local_only in (True, False):  # with locality: every holder first, then the rest
            for slot in idle:
                if slot.jobs or not self._queue:
                    continue
                index = (0 if self.locality is None
                         else self.locality.pick(self._queue, slot, self._slots, local_only))
                if index is not None:
                    job = self._queue[index]
                    del self._queue[index]
                    self._start_call(slot, job, queued)

    def _start_call(self, slot: _Slot, head: _Job, queued: int) -> None:
        """Start ``head`` on ``slot``'s idle actor: a plain call, or a batch with companions."""
        slot.jobs = [head]
        if self._sizer is None:
            name = method_name(head.method)
            args = (head.item, *head.args)
            ref = (getattr(slot.actor, name).remote(*args, **head.kwargs) if name is not None
                   else slot.actor.__ray_call__.remote(head.method, *args, **head.kwargs))
        else:
            size = self._sizer.size(head.name, queued, len(self._slots))
            slot.jobs += self._companions(slot, head, size - 1)
            slot.batched = True
            ref = slot.actor.call_batch.remote(
                head.method, [(job.item, job.args) for job in slot.jobs], **head.kwargs)
        self._inflight[ref] = slot

    def _companions(self, slot: _Slot, head: _Job, room: int) -> list[_Job]:
        """Up to ``room`` queued jobs that join ``head`` in one call: the same method and
        keyword arguments, in queue order (consecutive ones; with locality, those this node
        holds or no node holds)."""
        taken: list[_Job] = []
        if self.locality is None:
            while (len(taken) < room and self._queue and self._queue[0].method == head.method
                   and self._queue[0].kwargs == head.kwargs):
                taken.append(self._queue.popleft())
            return taken
        kept: deque[_Job] = deque()
        for job in self._queue:
            if (len(taken) < room and job.method == head.method and job.kwargs == head.kwargs
                    and self.locality.fits(job, slot, self._slots)):
                taken.append(job)
            else:
                kept.append(job)
        self._queue = kept
        return taken

