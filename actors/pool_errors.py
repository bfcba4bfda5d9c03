"""What a ``ResilientPool`` raises when it cannot work at all, and how an actor's death is read.

- ``ActorStartError``: an actor's constructor raised; ``cause`` is that exception (or, when Ray
  did not keep the object, Ray's error whose message ends with the constructor's traceback).
- ``ActorStartTimeout``: actors not started within the bound (e.g. a resource no node has);
  ``who_offers(resources)`` names the cluster.yaml node type that offers each custom one.
- ``init_failure(err)``: the constructor's exception inside a ``RayActorError``, or None when
  the actor died for another reason (killed, crashed, out of memory).
- ``LostAttempt``: one job's run that died with its actor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ray.exceptions import RayActorError, RayTaskError


class PoolError(RuntimeError):
    """A pool cannot do its work at all (as opposed to one job failing)."""


class ActorStartError(PoolError):
    """An actor's constructor raised; ``cause`` is the constructor's own exception."""

    def __init__(self, pool: str, cause: BaseException, detail: str):
        super().__init__(f"pool {pool!r}: an actor cannot start: {detail}")
        self.pool, self.cause = pool, cause


class ActorStartTimeout(PoolError):
    """Actors were not started within the bound; the message names what they ask for."""


# Which cluster.yaml node type offers each custom resource an actor may ask for (tests/cluster
# checks this table against cluster.yaml), so a run stuck waiting names the node to add.
NODE_TYPE_OFFERING = {"docker": "docker_worker"}


def who_offers(resources: dict[str, Any]) -> str:
    """`` (resource 'docker' is offered by cluster.yaml node type 'docker_worker')`` for each
    custom resource in ``resources`` the table knows; "" when none."""
    named = [f"resource {name!r} is offered by cluster.yaml node type "
             f"{NODE_TYPE_OFFERING[name]!r} (give it min_workers >= 1, or let the autoscaler "
             f"add one)" for name in sorted(resources) if name in NODE_TYPE_OFFERING]
    return f" ({'; '.join(named)})" if named else ""


def init_failure(err: BaseException) -> BaseException | None:
    """The constructor's exception when ``err`` says the actor died in its creation task, else
    None. Ray reports it either as the creation task's own ``RayTaskError`` (what a call on such
    an actor raises) or as a ``RayActorError`` flagged ``actor_init_failed``."""
    if isinstance(err, RayTaskError):
        if not str(getattr(err, "function_name", "")).endswith("__init__"):
            return None  # an exception of a method: the job's outcome, not a start-up failure
        return err.cause if isinstance(err.cause, BaseException) else err
    if not isinstance(err, RayActorError) or not getattr(err, "actor_init_failed", False):
        return None
    # Ray keeps the creation task's error as the ActorDiedError's first argument.
    cause = next((a for a in getattr(err, "args", ()) if isinstance(a, RayTaskError)), None)
    if isinstance(cause, RayTaskError):
        cause = cause.cause if isinstance(cause.cause, BaseException) else cause
    return cause if isinstance(cause, BaseException) else err


def init_failure_text(err: BaseException, cause: BaseException) -> str:
    """``Type: message`` of the constructor's exception (the last line Ray's text ends with when
    the original exception object did not survive the trip)."""
    if cause is not err:
        return f"{type(cause).__name__}: {cause}"[:2000]
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return (lines[-1] if lines else type(err).__name__)[:2000]


@dataclass
class LostAttempt:
    """One job's run that died with its actor (its work, and any LLM spend, is lost)."""

    method: str
    item: Any
    key: Any
    attempt: int
    error: str
