"""Eval solver cache (``<run_dir>/solver_cache``): an unchanged (model, prompt, params) is paid once.

Contracts:
- ``cache_key(backend, model, messages, params)`` is a sha256 over a canonical JSON of all four;
  any change of prompt text, skill text, temperature, max_tokens, stop, schema or sampling seed
  changes the key.
- ``SolverCache(dir)`` stores one JSON file per key (written to a temp file, then renamed), so
  concurrent Ray actors on one filesystem never see half-written entries; a corrupt entry reads
  as a miss.
- ``CachedLLM(client, cache_dir)`` is an ``LLMClient``: a hit returns the stored text with
  ``cached=True``, zero tokens and zero cost (nothing was paid; the original accounting is in
  ``extra["original"]``); a miss calls ``client`` and stores the reply.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from ratchet_ray.fsutil import atomic_write_text
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
    path: Path


class SolverCache:
    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        try:
            return json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None

    def put(self, key: str, record: dict) -> None:
        atomic_write_text(self._path(key), json.dumps(record))

    def entries(self) -> Iterator[CacheEntry]:
        if not self.directory.is_dir():
            return
        for path in sorted(self.directory.glob("*/*.json")):
            record = self.get(path.stem) or {}
            reply = record.get("reply", {})
            yield CacheEntry(path.stem, reply.get("model", "?"), float(record.get("created_at", 0)),
                             len(reply.get("text", "")), path)

    def clear(self) -> int:
        """Delete every entry; returns how many were removed."""
        removed = 0
        for entry in list(self.entries()):
            entry.path.unlink(missing_ok=True)
            removed += 1
        return removed


class CachedLLM:
    """Wraps any ``LLMClient``; use it for eval-pass Solver generations."""

    def __init__(self, client: LLMClient, cache_dir: str | Path):
        self.client = client
        self.cache = SolverCache(cache_dir)
        self.backend = client.backend
        self.model = client.model
        self.supports_prefill = bool(getattr(client, "supports_prefill", False))
        self.supports_seed = bool(getattr(client, "supports_seed", False))

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
        seeded = {"seed": seed} if seed is not None else {}
        params.update(seeded)  # absent when unseeded, so earlier cache keys stay valid
        key = cache_key(self.backend, self.model, messages, params)
        started = time.perf_counter()
        record = self.cache.get(key)
        if record is not None:
            original = record["reply"]
            return Reply(text=original["text"], latency_s=time.perf_counter() - started,
                         model=original.get("model", self.model), backend=self.backend,
                         cached=True, extra={"original": original, "cache_key": key})
        reply = self.client.complete(messages, max_tokens=max_tokens, temperature=temperature,
                                     stop=stop, json_schema=json_schema, **seeded)
        stored = {k: v for k, v in asdict(reply).items() if k != "extra"}
        self.cache.put(key, {"created_at": time.time(), "params": params, "reply": stored})
        return reply
