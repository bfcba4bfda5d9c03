"""Waiting on a condition, the one way tests wait (never a fixed sleep that hopes it is enough)."""

from __future__ import annotations

import time
from typing import Callable


def wait_for(predicate: Callable[[], object], timeout: float, what: str,
             poll: float = 0.05) -> None:
    """Return as soon as ``predicate()`` is true; ``TimeoutError`` naming ``what`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what} after {timeout:.0f}s")
        time.sleep(poll)


def actor_gone(actor, timeout: float = 10.0) -> bool:
    """Whether the Ray ``actor`` has died: a call to it fails as a dead actor's (a predicate for
    ``wait_for``; a call still pending after ``timeout`` seconds raises ``GetTimeoutError``)."""
    import ray
    from ray.exceptions import RayActorError

    try:
        ray.get(actor.__ray_ready__.remote(), timeout=timeout)
    except RayActorError:
        return True
    return False


def process_gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (gone, or a zombie: it runs nothing any more); a
    predicate for ``wait_for``. ``ray.kill`` returns before the actor's process is told: on a
    loaded 2-core machine it went on running for up to 1.4 s (measured), so a test that lets a
    killed actor's job go on (a gate opened) waits for this first."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True
