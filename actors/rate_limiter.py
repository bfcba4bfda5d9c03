"""One cluster-wide rate limiter per (backend, model): a named Ray actor every caller shares.

Contracts:
- ``cluster_limiter`` is the ``LimiterFactory`` (``llm.ratelimit``) of clients inside a Ray
  cluster: a ``SharedLimiter`` per budget, a no-op in-process limiter when both limits are 0.
  The loop hands it to ``make_llm`` through ``actors.llm_server.cluster_services()``.
- The actor ``ratchet-ratelimit-<scope>-<key>-<rpm>-<tpm>`` (namespace ``ratchet``) is created by
  the first caller and reused by the rest, so a run's actors (``scope``: its run id, or a shared
  ``llm.limiter_scope``) draw on one budget; callers sleep in their own process, the actor only
  books. It is detached, released with its run (``release_llm_actors``) and leaves by itself when
  its run's driver dies (``actors.run_lease``).
- ``SharedLimiter`` pickles without its handle and re-resolves it where it lands.
"""

from __future__ import annotations

import time

import ray

from actors.named_client import NAMESPACE, NamedActorClient
from actors.run_lease import scope_token, watch_run_lease
from ratchet_ray.llm.ratelimit import Limiter, LocalLimiter, RateLimiter

DEFAULT_SCOPE = "shared"
"""The scope of clients built outside a run (tools, tests); a run uses its run id."""


class RateLimiterProcess(RateLimiter):
    """The limiter as a run's actor: it leaves when its run's driver is gone (``run_lease``)."""

    def __init__(self, requests_per_minute: int, tokens_per_minute: int,
                 scope: str = DEFAULT_SCOPE):
        super().__init__(requests_per_minute, tokens_per_minute)
        watch_run_lease(scope)


RateLimiterActor = ray.remote(num_cpus=0)(RateLimiterProcess)


def limiter_name(key: str, requests_per_minute: int, tokens_per_minute: int,
                 scope: str = DEFAULT_SCOPE) -> str:
    return (f"ratchet-ratelimit-{scope_token(scope)}-{key}-{requests_per_minute}-"
            f"{tokens_per_minute}").replace("/", "_")


class SharedLimiter(NamedActorClient):
    """The client of one limiter actor (module contracts)."""

    def __init__(self, key: str, requests_per_minute: int, tokens_per_minute: int,
                 scope: str = DEFAULT_SCOPE):
        self.key = key
        self.scope = scope
        self.rpm = requests_per_minute
        self.tpm = tokens_per_minute

    def _create(self):
        return RateLimiterActor.options(
            name=limiter_name(self.key, self.rpm, self.tpm, self.scope), namespace=NAMESPACE,
            get_if_exists=True, lifetime="detached",
        ).remote(self.rpm, self.tpm, self.scope)

    def acquire(self, tokens: int) -> float:
        wait = self._call(RateLimiterProcess.reserve, tokens)
        if wait > 0:
            time.sleep(wait)
        return wait

    def settle(self, delta_tokens: int) -> None:
        if delta_tokens:
            self._actor().settle.remote(delta_tokens)

    def limits(self) -> tuple[int, int]:
        return tuple(self._call(RateLimiterProcess.limits))


def cluster_limiter(key: str, requests_per_minute: int, tokens_per_minute: int,
                    scope: str = DEFAULT_SCOPE) -> Limiter:
    """The limiter of budget ``key`` shared within ``scope`` (see module contracts)."""
    if not requests_per_minute and not tokens_per_minute:
        return LocalLimiter(0, 0)
    return SharedLimiter(key, requests_per_minute, tokens_per_minute, scope)
