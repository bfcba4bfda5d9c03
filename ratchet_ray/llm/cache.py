"""Eval solver cache (``solver_cache/`` of the run's artifacts): an unchanged (model, prompt,
params) is paid once, whichever node's Solver asks.

Contracts:
- ``cache_key`` is a sha256 over a canonical JSON of backend, model, messages and params: any
  change of prompt, skill, temperature, max_tokens, stop, schema or seed changes it.
- ``SolverCache`` stores one JSON object per key in an ``Artifacts`` store (or a folder), each
  put atomic; a corrupt entry (not JSON, or no reply text) reads as a miss, and ``entries``
  lists it as ``DAMAGED`` beside the others. A folder or entry this user may not read, and a
  file where the cache folder should be, are ``SolverCacheError``: one line naming the path and
  the fix.
- ``CachedLLM`` is an ``LLMClient``: a hit returns the stored text with ``cached=True``, zero
  tokens and cost (the original accounting in ``extra["original"]``); a miss calls the client
  and stores the reply. A reply the store refuses (a full disk, a read-only place) is still
  returned, with a warning naming the folder and the fix: an unstored reply costs only a replay.
- ``CachedLLM`` declares ``supports_seed`` whatever its client, so a caller always hands it the
  call's seed (derived from run seed, round, split, task and role) and the seed is in the key:
  a sampled eval call is a new draw each round, and only the same call is replayed (a resumed
  round). The seed reaches the client only when it takes one. A sampled call (temperature > 0)
  without a seed has no identity to replay: it goes to the client and is not stored.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from ratchet_ray.storage.artifacts import Artifacts, as_artifacts
from ratchet_ray.storage.fsutil import cannot_write, disk_full_error, no_room, read_access
from ratchet_ray.llm.base import LLMClient, Message, Reply

CACHE_DIRNAME = "solver_cache"
DAMAGED = "DAMAGED (a run asks the model again)"
"""The model ``entries`` lists for an entry that is not one (torn, garbage bytes, no reply)."""

log = logging.getLogger(__name__)


class SolverCacheError(ValueError):
    """The cache cannot be read or listed; the message names the path and the fix."""


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
        try:
            record = self.store.get_json(self._key(key))
        except OSError as exc:
            raise self._unreadable(self._key(key), exc) from exc
        reply = record.get("reply") if isinstance(record, dict) else None
        return record if isinstance(reply, dict) and isinstance(reply.get("text"), str) else None

    def _unreadable(self, name: str, exc: OSError) -> SolverCacheError:
        """The one line of a read of ``name`` (an entry, or "" for the folder) ``exc`` refused.
        pyarrow's errors name no file and bury the reason in their text: both are said here."""
        where, root = self.store.locate(name), self.store.locate()
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        if exc.errno in (errno.EACCES, errno.EPERM):
            return SolverCacheError(f"{where} may not be read by this user ({reason}), so the "
                                    f"solver cache cannot be read; fix: {read_access(root)}")
        return SolverCacheError(f"solver cache {where}: cannot read it ({reason}); fix: move it "
                                f"aside (`mv {where} {where}.bad`): a run asks the model again")

    def put(self, key: str, record: dict) -> None:
        self.store.put_text(self._key(key), json.dumps(record))

    def entries(self) -> Iterator[CacheEntry]:
        """Every entry, a damaged one too (``DAMAGED``); ``SolverCacheError`` for a cache this
        user may not read, or a file where its folder should be (listed, it would seem empty)."""
        root = self.store.locate()
        if "://" not in root and os.path.lexists(root) and not os.path.isdir(root):
            raise SolverCacheError(f"{root} is a file, not the solver cache folder; fix: move it "
                                   f"aside (`mv {root} {root}.bak`): a run makes the folder anew")
        try:
            names = self.store.keys()
        except OSError as exc:
            raise self._unreadable("", exc) from exc
        for name in names:
            parts = name.split("/")
            if len(parts) != 2 or not parts[1].endswith(".json"):
                continue
            key = parts[1][:-len(".json")]
            record = self.get(key)
            if record is None:
                yield CacheEntry(key, DAMAGED, 0.0, 0, self.store.locate(name))
                continue
            reply, created = record["reply"], record.get("created_at")
            yield CacheEntry(key, str(reply.get("model", "?")),
                             float(created) if isinstance(created, (int, float)) else 0.0,
                             len(reply["text"]), self.store.locate(name))

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
        try:
            self.cache.put(key, {"created_at": time.time(), "params": params, "reply": stored})
        except OSError as exc:  # the reply is paid for: used and booked, only not replayable
            log.warning("solver cache: %s", _refused_put(self.cache.store.locate(), exc))
        return reply


def _refused_put(folder: str, exc: OSError) -> str:
    """What a put ``exc`` refused is told: a full disk as every stop on one starts
    (``fsutil.no_room``), any other refusal as ``fsutil.cannot_write``; each with the fix."""
    full = disk_full_error(exc)
    if full is not None:
        return (f"{no_room(full, Path(folder))[1]}; the reply is used but not cached: free "
                "space on that disk")
    return cannot_write("a solver cache entry", exc, f"the reply is used but not cached; make "
                        f"{folder} a writable folder", folder)
