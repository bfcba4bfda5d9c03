"""Several pool jobs in one actor call: the worker side and the driver's sizing rule.

Contracts:
- ``BatchCalls`` is a mixin for worker classes: ``call_batch(method, calls, **kwargs)`` runs
  the instance's own ``method``, given by reference (``SolverWorker.run``: ``self.run(item,
  *args, **kwargs)``; a plain function as ``method(self, item, ...)``) for each ``(item, args)``
  of ``calls`` in order and returns ``([(ok, value_or_exception), ...], seconds)``; one item's exception is that item's result only. Keyword arguments are
  shared by the call's jobs; object refs among them are resolved by Ray (how the round's bank
  snapshot reaches a Solver: ``ray.put`` once, then a ref per call).
- ``BatchSizer(fixed)``: how many queued jobs one call carries. ``fixed`` N: at most N; None
  (adaptive): one per call until the method's per-job time is known (the workers' own timing),
  then enough to fill about ``CALL_TARGET_S`` seconds. No call takes more than a fair share of
  the queue (``ceil(queued / actors)``). So a real LLM task travels alone (full parallelism, a
  death loses one task) and millisecond ``sim`` tasks travel in dozens (Ray's ~1 ms per-call
  overhead paid once per call).
"""

from __future__ import annotations

import math
import time
from functools import partial
from typing import Any, Callable, Sequence

CALL_TARGET_S = 0.1
"""Work one adaptive call carries: small enough that a death mid-call costs little to redo."""
MAX_BATCH = 256
EWMA_WEIGHT = 0.5
"""Weight of the latest call in the per-job estimate (the first calls include warm-up)."""


def method_name(method: Callable[..., Any]) -> str | None:
    """The actor method ``method`` is (a function defined in a class: ``SolverWorker.run`` ->
    ``"run"``), or None for a plain function (module-level or local), which runs through Ray's
    ``__ray_call__``. A string raises ``TypeError``: calls go by reference."""
    if isinstance(method, str) or not callable(method):
        raise TypeError(f"pool jobs take the method itself (e.g. SolverWorker.run), not "
                        f"{method!r}")
    parts = getattr(method, "__qualname__", getattr(method, "__name__", "")).split(".")
    return parts[-1] if len(parts) > 1 and parts[-2] != "<locals>" else None


class BatchCalls:
    """Mixin: ``call_batch`` (module contracts)."""

    def call_batch(self, method: Callable[..., Any], calls: Sequence[tuple[Any, tuple]],
                   **kwargs: Any) -> tuple[list[tuple[bool, Any]], float]:
        name = method_name(method)  # the instance's own: a subclass's override runs
        run = getattr(self, name) if name is not None else partial(method, self)
        started = time.perf_counter()
        results: list[tuple[bool, Any]] = []
        for item, args in calls:
            try:
                results.append((True, run(item, *args, **kwargs)))
            except Exception as exc:  # this item's outcome (a single call would raise it)
                results.append((False, exc))
        return results, time.perf_counter() - started


class BatchSizer:
    """How many jobs the next call of a method carries (module contracts)."""

    def __init__(self, fixed: int | None = None):
        if fixed is not None and fixed < 1:
            raise ValueError(f"tasks per call must be >= 1 or None (adaptive), got {fixed}")
        self.fixed = fixed
        self.per_job_s: dict[str, float] = {}

    def size(self, method: str, queued: int, actors: int) -> int:
        share = max(1, math.ceil(queued / max(1, actors)))
        if self.fixed is not None:
            return min(self.fixed, share)
        estimate = self.per_job_s.get(method)
        if estimate is None:
            return 1
        return max(1, min(share, MAX_BATCH, int(CALL_TARGET_S / max(estimate, 1e-6))))

    def observe(self, method: str, jobs: int, seconds: float) -> None:
        """Record that a call of ``jobs`` (>= 1) jobs ran ``seconds`` on its worker."""
        latest = seconds / jobs
        known = self.per_job_s.get(method)
        self.per_job_s[method] = (latest if known is None
                                  else EWMA_WEIGHT * latest + (1 - EWMA_WEIGHT) * known)
