"""A grade's containers are removed in the background (``docker.container.Removals``): handing
one over does not wait for the daemon, ``wait()`` returns only when all are gone and raises what
a removal raised, so the grade that waits leaves nothing behind (no Docker needed: the
containers are fakes that record their removal)."""

from __future__ import annotations

import threading
import time

import docker.errors
import pytest

from ratchet_ray.suites.swebench.docker.container import Removals


class FakeContainer:
    def __init__(self, gate: threading.Event | None = None, error: Exception | None = None):
        self.gate, self.error = gate, error
        self.removed = threading.Event()

    def remove(self, force: bool = False) -> None:
        assert force, "a grade's container is force-removed (its processes killed first)"
        if self.gate is not None:
            self.gate.wait(10)
        if self.error is not None:
            raise self.error
        self.removed.set()


def test_handing_over_does_not_wait_and_wait_waits_for_every_removal():
    gate = threading.Event()
    removals = Removals()
    boxes = [FakeContainer(gate) for _ in range(3)]
    started = time.monotonic()
    for box in boxes:
        removals.add(box)
    assert time.monotonic() - started < 1 and not any(b.removed.is_set() for b in boxes)
    waiter = threading.Thread(target=removals.wait)
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive(), "wait() returned while removals were still running"
    gate.set()
    waiter.join(10)
    assert not waiter.is_alive() and all(b.removed.is_set() for b in boxes)
    removals.wait()  # nothing pending: returns at once


def test_a_failed_removal_is_raised_after_the_others_end():
    removals = Removals()
    slow = FakeContainer(threading.Event())
    slow.gate.set()
    failing = FakeContainer(error=docker.errors.APIError("daemon refused"))
    gone = FakeContainer(error=docker.errors.NotFound("already gone"))  # fine: nothing to remove
    for box in (failing, gone, slow):
        removals.add(box)
    with pytest.raises(docker.errors.APIError, match="daemon refused"):
        removals.wait()
    assert slow.removed.is_set()
