"""Clients of detached named actors that any process may create: the first caller creates the
actor, every later one (any node, any run sharing the name) reuses it.

Contracts:
- Subclasses of ``NamedActorClient`` implement ``_create()`` (``ActorClass.options(name=...,
  namespace=..., get_if_exists=True, lifetime="detached").remote(...)``); ``_actor()`` resolves
  the handle once per process, and the client pickles without it.
- ``_call(method, ...)`` calls the actor's ``method``, named by reference (e.g.
  ``RateLimiterProcess.reserve``: a rename fails at import), and blocks; when the actor is gone
  (released while this client lived on), the call is made once more on a new actor of the same
  name; a second failure raises.
- ``NAMESPACE`` is every such actor's namespace; ``kill_named(name)`` kills one (False: none).
"""

from __future__ import annotations

from typing import Any, Callable

import ray
from ray.exceptions import RayActorError

NAMESPACE = "ratchet"


def kill_named(name: str, namespace: str | None = NAMESPACE) -> bool:
    """Kill the actor named ``name`` (``namespace`` None: the job's own); False when none is."""
    try:
        ray.kill(ray.get_actor(name, namespace=namespace))
    except ValueError:
        return False
    return True


class NamedActorClient:
    """Base of ``SharedLimiter``, ``SharedBudget`` and the node model-server clients (module
    contracts)."""

    _handle: Any = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_handle": None}

    def _create(self) -> Any:
        """A handle of the named actor, created when no actor has the name yet."""
        raise NotImplementedError

    def _actor(self, fresh: bool = False) -> Any:
        if self._handle is None or fresh:
            self._handle = self._create()
        return self._handle

    def _call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        name = method.__name__
        try:
            return ray.get(getattr(self._actor(), name).remote(*args, **kwargs))
        except RayActorError:  # released while this client lived on: a new one takes the name
            return ray.get(getattr(self._actor(fresh=True), name).remote(*args, **kwargs))
