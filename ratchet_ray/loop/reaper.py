"""End-of-round cleanup on every grader's node: what killed actors left behind (a suite's
grader ``reap``: e.g. the containers of this run that a killed grader or agent left) is removed
while no job is in flight.

Contract: ``reap_after_round(graders, timeout_s)`` calls ``reap()`` on every actor of the grader
pool and returns the names removed; an actor that is dead or does not answer in time is logged
and skipped (its replacement reaps dead owners' containers when it connects), never raised.
"""

from __future__ import annotations

import logging
from typing import Any

import ray
from ray.exceptions import RayError

log = logging.getLogger(__name__)


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
