"""Requests-per-minute and tokens-per-minute limiter (two token buckets with reservations).

Contracts:
- ``RateLimiter.reserve(tokens)`` books one request and returns the seconds to wait before
  sending it (0.0 within budget): booking first and sleeping outside, a shared limiter (a Ray
  actor) never blocks while callers wait. ``settle(delta_tokens)`` corrects the booking once
  the real usage is known (negative refunds).
- A limit of 0 is unlimited. A request larger than the per-minute token budget books the whole
  budget, so it waits at most a minute instead of forever.
- ``estimate_tokens``: prompt characters / 4 plus ``max_tokens`` (as Bedrock reserves quota).
- A client is handed a ``LimiterFactory``; the loop passes the cluster-wide
  ``actors.rate_limiter.cluster_limiter`` (``llm.registry.LLMServices``).
- ``HostedClient`` (openai, bedrock; every call books its limiter first): the SDK client and
  limiter, made per process on first use and never pickled (the factory is, so a shared budget
  stays shared where the client lands).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Protocol, Sequence

from ratchet_ray.llm.base import Message


class Limiter(Protocol):
    """``acquire`` books a request and returns once it may be sent (the seconds it waited);
    ``settle`` corrects the booking with the real token count."""

    def acquire(self, tokens: int) -> float: ...

    def settle(self, delta_tokens: int) -> None: ...


LimiterFactory = Callable[[str, int, int], Limiter]
"""``(key, requests_per_minute, tokens_per_minute) -> Limiter``; ``key`` names the budget
(backend and model) so a shared implementation can give one limiter per budget."""


class RateLimiter:
    """Two buckets of one minute's budget each, refilled continuously; levels may go negative,
    and a negative level is the wait (deficit / refill rate) that the booking implies."""

    def __init__(self, requests_per_minute: int = 0, tokens_per_minute: int = 0,
                 clock: Callable[[], float] = time.monotonic):
        if requests_per_minute < 0 or tokens_per_minute < 0:
            raise ValueError("rate limits must be >= 0 (0 = unlimited)")
        self.rpm = requests_per_minute
        self.tpm = tokens_per_minute
        self._clock = clock
        self._requests = float(requests_per_minute)
        self._tokens = float(tokens_per_minute)
        self._last = clock()

    def limits(self) -> tuple[int, int]:
        return self.rpm, self.tpm

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._last)
        self._last = now
        if self.rpm:
            self._requests = min(float(self.rpm), self._requests + elapsed * self.rpm / 60.0)
        if self.tpm:
            self._tokens = min(float(self.tpm), self._tokens + elapsed * self.tpm / 60.0)

    def reserve(self, tokens: int) -> float:
        self._refill()
        wait = 0.0
        if self.rpm:
            self._requests -= 1.0
            wait = max(wait, -self._requests * 60.0 / self.rpm)
        if self.tpm:
            self._tokens -= float(min(max(tokens, 0), self.tpm))
            wait = max(wait, -self._tokens * 60.0 / self.tpm)
        return wait

    def settle(self, delta_tokens: int) -> None:
        if self.tpm:
            self._refill()
            self._tokens = min(float(self.tpm), self._tokens - float(delta_tokens))


class LocalLimiter:
    """In-process limiter for code running outside Ray: reserve, then sleep here."""

    def __init__(self, requests_per_minute: int = 0, tokens_per_minute: int = 0,
                 sleep: Callable[[float], None] = time.sleep):
        self._limiter = RateLimiter(requests_per_minute, tokens_per_minute)
        self._sleep = sleep

    def acquire(self, tokens: int) -> float:
        wait = self._limiter.reserve(tokens)
        if wait > 0:
            self._sleep(wait)
        return wait

    def settle(self, delta_tokens: int) -> None:
        self._limiter.settle(delta_tokens)


def estimate_tokens(messages: Sequence[Message], max_tokens: int) -> int:
    return sum(len(m.content) for m in messages) // 4 + max_tokens


def make_limiter(key: str, requests_per_minute: int, tokens_per_minute: int) -> Limiter:
    """The default ``LimiterFactory``: an in-process limiter of the client's own (``key`` unused)."""
    return LocalLimiter(requests_per_minute, tokens_per_minute)


class HostedClient:
    """Lazy ``client`` (``_make_client``) and ``limiter`` of budget ``limiter_key`` (module
    contracts); ``config`` holds ``requests_per_minute`` and ``tokens_per_minute``."""

    def __init__(self, config: Any, limiter_key: str, limiters: LimiterFactory = make_limiter):
        self.config = config
        self._limiter_key = limiter_key
        self._limiters = limiters
        self._client = None
        self._limiter: Limiter | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_client": None, "_limiter": None}

    def _make_client(self) -> Any:
        raise NotImplementedError

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self._make_client()
        return self._client

    @property
    def limiter(self) -> Limiter:
        if self._limiter is None:
            self._limiter = self._limiters(self._limiter_key, self.config.requests_per_minute,
                                           self.config.tokens_per_minute)
        return self._limiter
