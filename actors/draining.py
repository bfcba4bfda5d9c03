"""Waiting on ``actors.pools.ResilientPool`` results, through the pool's public API only.

Contracts:
- ``drain(pools, handle)`` is the one ``ray.wait`` loop: every finished result goes to
  ``handle(pool, result)``, which may submit more work, until all pools are idle. Each pass
  checks the pools' start-up, so an actor that cannot start stops the loop with
  ``ActorStartError`` / ``ActorStartTimeout``; one wait's results are handled inside every
  pool's ``held()``, so the work they submit leaves in full calls, placed as a whole.
- ``map_unordered`` and ``call_one`` (a healed pool of one: how the loop drives the stateful
  Synthesizer, so a dead one is replaced, not fatal) rest on it.

Example::

    pool = ResilientPool(lambda: Echo.remote(), size=4, name="echo")
    assert sorted(r.value for r in map_unordered(pool, Echo.echo, range(10))) == list(range(10))
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any, Callable, Iterable, Sequence

import ray

from actors.pool_errors import PoolError
from actors.pools import PoolResult, ResilientPool

__all__ = ["call_one", "drain", "map_unordered"]


def drain(pools: Sequence[ResilientPool], handle: Callable[[ResilientPool, PoolResult], None],
          *, tick: Callable[[], None] | None = None, tick_s: float = 5.0) -> None:
    """Wait on every pool's in-flight refs until all are idle, passing each result to ``handle``.

    ``tick`` (if given) runs at least every ``tick_s`` seconds while waiting, e.g. to flush buffers.
    """
    while any(pool.busy for pool in pools):
        refs = [ref for pool in pools for ref in pool.refs()]
        if not refs:
            raise PoolError("drain: pools report queued work but nothing in flight: "
                            + "; ".join(f"{p.name}: {p.queued} queued, {p.size} actors"
                                        for p in pools))
        for pool in pools:
            pool.check_started()
        ready, _ = ray.wait(refs, num_returns=1, timeout=tick_s)
        if ready:
            # Take every other ref that is also done, so a burst is handled in one pass.
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        with ExitStack() as hold:  # the work these results submit leaves in full calls
            for pool in pools:
                hold.enter_context(pool.held())
            for ref in ready:
                pool = next(p for p in pools if p.owns(ref))
                for result in pool.complete(ref):
                    handle(pool, result)
        if tick is not None:
            tick()


def map_unordered(pool: ResilientPool, method: Callable[..., Any], items: Iterable[Any],
                  *args: Any) -> list[PoolResult]:
    """Run ``method(item, *args)`` for every item; one result per item, in completion order."""
    results: list[PoolResult] = []
    for item in items:
        pool.submit(method, item, *args)
    drain([pool], lambda _pool, result: results.append(result))
    return results


def call_one(pool: ResilientPool, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run one call ``method(*args, **kwargs)`` on ``pool`` and return its value, or raise the
    error that ended it. Actors that died idle are replaced first (``heal``), so a stateful
    helper held as a pool of one (the Synthesizer) survives a crash between calls."""
    if not args:
        raise ValueError(f"call_one({pool.name!r}, {method.__name__}): give the call's "
                         "arguments")
    pool.heal()
    pool.submit(method, *args, **kwargs)
    results: list[PoolResult] = []
    drain([pool], lambda _pool, result: results.append(result))
    if not results[0].ok:
        raise results[0].error
    return results[0].value
