"""The sessions of one grade in an order the code under test cannot predict, started together.

Every session of a grade (the real one and its canary sessions; an impossible twin and its
decoys) runs the same patch in a fresh container, but all of them share the host: a session can
leave a mark there that a later one reads (the page cache over the image's layers, the load, a
timer). If the real session always came first, a patch could cheat only when it finds no mark
and behave when it finds one, and every grade would resolve. So the sessions' order is drawn
per grade from the operating system's entropy (``secrets``: nothing the patch can see or
predict, not the run's seed), and they start together, ``parallel`` at a time: the session that
finds no mark is any of the ``k + 1`` with equal probability, and a canary session that cheats
is caught (``differential.caught_beside``). A patch that cheats only where it finds no mark is
caught with probability at least ``k/(k+1)`` per grade (docs/grading.md).

Contracts:
- ``Plan``: one session to run: its ``label``, the ``mutants`` planted in it (none for the real
  session), and ``primary``: the session whose verdict is the grade's (the real session, or the
  impossible twin), which always runs.
- ``shuffled(plans, rng=None)`` -> the plans in a random order (``rng`` defaults to
  ``secrets.SystemRandom()``; a test passes its own to count outcomes).
- ``run_in_order(plans, run, parallel, settled)`` runs ``run(plan)`` -> ``Session`` for each
  plan in the given order, ``parallel`` at once, each started as a worker frees up (the order
  in which they start is the plans' order); once ``settled(plan, session)`` is true of a
  finished session, plans not yet started are skipped, except the primary, which always runs.
  Returns ``{label: Session}`` of the sessions that ran (an exception in one re-raises after
  every started session has ended).
- ``primary_blocked(primary, statuses)`` -> ``settled`` for a grade whose primary is
  ``primary``: true once a finished session shows the primary cannot resolve (the primary
  itself did not; or another session reported a graded test neither it nor the primary mutates
  other than ``statuses``, the gold patch's: deterministic code fails it in the primary too).
  What is skipped then could only catch a patch that cheats, and the session that found no mark
  had already started.
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
