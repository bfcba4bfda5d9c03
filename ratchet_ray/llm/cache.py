"""Eval solver cache (``solver_cache/`` of the run's artifacts): an unchanged (model, prompt,
params) is paid once, whichever node's Solver asks.

Contracts:
- ``cache_key`` is a sha256 over a canonical JSON of backend, model, messages and params: any
  change of prompt, skill, temperature, max_tokens, stop, schema or seed changes it.
- ``SolverCache`` stores one JSON object per key in an ``Artifacts`` store (or a folder), each
  put atomic; a corrupt entry reads as a miss.
- ``CachedLLM`` is an ``LLMClient``: a hit returns the stored text with ``cached=True``, zero
  tokens and cost (the original accounting in ``extra["original"]``); a miss calls the client
  and stores the reply.
- ``CachedLLM`` declares ``supports_seed`` whatever its client, so a caller always hands it the
  call's seed (derived from run seed, round, split, task and role) and the seed is in the key:
  a sampled eval call is a new draw each round, and only the same call is replayed (a resumed
  round). The seed reaches the client only when it takes one. A sampled call (temperature > 0)
  without a seed has no identity to replay: it goes to the client and is not stored.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from ratchet_ray.storage.artifacts import Artifacts, as_artifacts
from ratchet_ray.llm.base import LLMClient, Message, Reply

CACHE_DIRNAME = "solver_cache"


def cache_key(backend: str, model: str, messages: Sequence[Message], params: dict[str, Any]) -> str:
    payload = {
        "backend": backend,
        "model": model,
        "messages": [[m.role, m.content] for m in messages],
        "params": params,
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True)
class CacheEntry:
    key: str
    model: str
    created_at: float
    output_chars: int
    location: str
    """Where the entry is stored (a path or URI, ``Artifacts.locate``)."""


class SolverCache:
    """``<key[:2]>/<key>.json`` in ``store`` (e.g. the run's, seen from ``solver_cache/``)."""

    def __init__(self, store: Artifacts | str | Path):
        self.store = as_artifacts(store)

    @staticmethod
    def _key(key: str) -> str:
        return f"{key[:2]}/{key}.json"

    def get(self, key: str) -> dict | None:
        record = self.store.get_json(self._key(key))
        return record if isinstance(record, dict) else None

    def put(self, key: str, record: dict) -> None:
        self.store.put_text(self._key(key), json.dumps(record))

    def entries(self) -> Iterator[CacheEntry]:
        for name in self.store.keys():
            parts = name.split("/")
            if len(parts) != 2 or not parts[1].endswith(".json"):
                continue
            key = parts[1][:-len(".json")]
            record = self.get(key) or {}
            reply = record.get("reply", {})
            yield CacheEntry(key, reply.get("model", "?"), float(record.get("created_at", 0)),
                             len(reply.get("text", "")), self.store.locate(name))

    def clear(self) -> int:
        """Delete every entry; returns how many were removed."""
        return sum(self.store.delete(self._key(entry.key)) for entry in list(self.entries()))


class CachedLLM:
    """Wraps any ``LLMClient``; use it for eval-pass Solver generations."""

    def __init__(self, client: LLMClient, cache: SolverCache | Artifacts | str | Path):
        self.client = client
        self.cache = cache if isinstance(cache, SolverCache) else SolverCache(cache)
        self.backend = client.backend
        self.model = client.model
        self.supports_prefill = bool(getattr(client, "supports_prefill", False))
        self.supports_seed = True  # the call's identity in the key (module contracts)
        self.client_takes_seed = bool(getattr(client, "supports_seed", False))

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        json_schema: dict[str, Any] | None = None,
        seed: int | None = None,
    ) -> Reply:
        params = {"max_tokens": max_tokens, "temperature": temperature,
                  "stop": list(stop) if stop else None, "json_schema": json_schema}
        forwarded = {"seed": seed} if seed is not None and self.client_takes_seed else {}
        if seed is None and temperature > 0:  # no identity to replay (module contracts)
            return self.client.complete(messages, max_tokens=max_tokens, temperature=temperature,
                                        stop=stop, json_schema=json_schema, **forwarded)
        if seed is not None:  # absent when unseeded (greedy), so earlier cache keys stay valid
            params["seed"] = seed
        key = cache_key(self.backend, self.model, messages, params)
        started = time.perf_counter()
        record = self.cache.get(key)
        if record is not None:
            original = record["reply"]
            return Reply(text=original["text"], latency_s=time.perf_counter() - started,
                         model=original.get("model", self.model), backend=self.backend,
                         cached=True, extra={"original": original, "cache_key": key})
        reply = self.client.complete(messages, max_tokens=max_tokens, temperature=temperature,
                                     stop=stop, json_schema=json_schema, **forwarded)
        stored = {k: v for k, v in asdict(reply).items() if k != "extra"}
        self.cache.put(key, {"created_at": time.time(), "params": params, "reply": stored})
        return reply
