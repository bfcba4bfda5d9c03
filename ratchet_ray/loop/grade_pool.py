"""What the driver asks of a whole Grader pool outside a split.

Contracts:
- ``grade_all(graders, items)`` submits every item in one burst (``held``: a placing pool places
  them knowing all of them), waits, and returns in the order of ``items`` each ``GradeResult``
  or, for a job that failed in the pool itself, a string naming why; ``nodes``, when given, gets
  the node that graded each item ("" where the pool does not say); ``tick``, when given, runs
  between waits (``drain``'s: ``swe validate`` raises a stop there). Suite hooks
  (``before_rounds``) and ``swe validate`` receive it, so the plain library never touches Ray.
- ``reap_after_round(graders, timeout_s)`` calls every grader's ``reap()`` between rounds (a
  suite's grader removes what killed actors left on its node, e.g. this run's containers) and
  returns the names removed; a dead or late actor is logged and skipped (its replacement reaps
  dead owners' containers when it connects), never raised.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

import ray
from ray.exceptions import RayError

from actors.draining import drain
from actors.grader import GraderWorker
from ratchet_ray.types import GradeResult, Task

log = logging.getLogger(__name__)


def grade_all(graders: Any, items: Sequence[tuple[Task, str]], nodes: list[str] | None = None,
              tick: Callable[[], None] | None = None) -> list[GradeResult | str]:
    results: list[GradeResult | str] = [""] * len(items)
    where = [""] * len(items)
    with graders.held():
        for index, (task, output) in enumerate(items):
            graders.submit(GraderWorker.grade, task, output, key=index)

    def handle(_pool: Any, result: Any) -> None:
        results[result.key] = (result.value if result.ok
                               else f"{result.exit_status}: {result.error}"[:500])
        where[result.key] = result.node or ""

    drain([graders], handle, tick=tick)
    if nodes is not None:
        nodes[:] = where
    return results


def reap_after_round(graders: Any, timeout_s: float = 120.0) -> list[str]:
    refs = [actor.reap.remote() for actor in graders.actors]
    if not refs:
        return []
    ready, late = ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
    removed: list[str] = []
    for ref in ready:
        try:
            removed.extend(ray.get(ref))
        except RayError as exc:
            log.warning("a grader could not reap leftover containers: %s", exc)
    if late:
        log.warning("%d grader(s) did not finish reaping within %.0fs", len(late), timeout_s)
    if removed:
        log.info("reaped %d leftover container(s): %s", len(removed), ", ".join(removed[:10]))
    return removed
