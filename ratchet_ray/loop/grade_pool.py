"""Grade many (task, output) pairs on a Grader pool and wait for all of them.

Contract: ``grade_all(graders, items)`` submits every item to the pool in one burst (``held``:
a placing pool places them knowing all of them), waits, and returns in the order of ``items``
each ``GradeResult`` or, for a job that failed in the pool itself, a string naming why;
``nodes``, when given, gets the node that graded each item ("" where the pool does not say).
It is the grading callable suite hooks (``before_rounds``) and ``swe validate`` receive, so the
plain library never touches Ray.
"""

from __future__ import annotations

from typing import Any, Sequence

from actors.draining import drain
from actors.grader import GraderWorker
from ratchet_ray.types import GradeResult, Task


def grade_all(graders: Any, items: Sequence[tuple[Task, str]],
              nodes: list[str] | None = None) -> list[GradeResult | str]:
    results: list[GradeResult | str] = [""] * len(items)
    where = [""] * len(items)
    with graders.held():
        for index, (task, output) in enumerate(items):
            graders.submit(GraderWorker.grade, task, output, key=index)

    def handle(_pool: Any, result: Any) -> None:
        results[result.key] = (result.value if result.ok
                               else f"{result.exit_status}: {result.error}"[:500])
        where[result.key] = result.node or ""

    drain([graders], handle)
    if nodes is not None:
        nodes[:] = where
    return results
