"""The sessions of one grade in an order the code under test cannot predict, started together
(why: docs/grading.md, "No session is first"). The order is drawn per grade from the OS's
entropy (``secrets``, not the run's seed).

Contracts:
- ``Plan``: one session to run: its ``label``, the ``mutants`` planted in it, and ``primary``:
  the session whose verdict is the grade's (the real one, or the twin), which always runs.
- ``shuffled(plans, rng=None)``: the plans in a random order (default ``secrets.SystemRandom()``).
- ``run_in_order(plans, run, parallel, settled)``: ``run(plan)`` for each plan, started in the
  given order, ``parallel`` at once; once ``settled(plan, session)`` holds for a finished
  session, plans not yet started are skipped, but the primary. ``{label: Session}`` of those
  that ran (an error re-raises after every started session has ended).
- ``primary_blocked(primary, statuses)``: the ``settled`` that holds once a finished session
  shows the primary cannot resolve (the primary did not; or another session reported a graded
  test neither mutates otherwise than gold's ``statuses``).
"""

from __future__ import annotations

import random
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from ratchet_ray.suites.swebench.proof.differential import MISSING, Session
from ratchet_ray.suites.swebench.proof.mutants import Mutant


@dataclass(frozen=True)
class Plan:
    label: str
    mutants: tuple[Mutant, ...] = field(default_factory=tuple)
    primary: bool = False

    def mutated(self) -> set[str]:
        return {m.test for m in self.mutants}


def shuffled(plans: list[Plan], rng: random.Random | None = None) -> list[Plan]:
    order = list(plans)
    (rng or secrets.SystemRandom()).shuffle(order)
    return order


def run_in_order(plans: list[Plan], run: Callable[[Plan], Session], parallel: int,
                 settled: Callable[[Plan, Session], bool]) -> dict[str, Session]:
    stop = threading.Event()
    done: dict[str, Session] = {}
    lock = threading.Lock()

    def one(plan: Plan) -> None:
        if stop.is_set() and not plan.primary:
            return
        session = run(plan)
        with lock:
            done[plan.label] = session
        if settled(plan, session):
            stop.set()

    with ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="session") as pool:
        futures = [pool.submit(one, plan) for plan in plans]  # FIFO: started in this order
    for future in futures:
        future.result()  # re-raise the first error, after every session has ended
    return done


def primary_blocked(primary: Plan, statuses: dict[str, str]) -> Callable[[Plan, Session], bool]:
    def settled(plan: Plan, session: Session) -> bool:
        if plan.primary:
            return not session.result.passed
        if session.log is None:
            return False
        free = set(statuses) - plan.mutated() - primary.mutated()
        return any(session.log.get(t, MISSING) != statuses[t] for t in free)
    return settled
