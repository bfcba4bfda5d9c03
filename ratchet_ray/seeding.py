"""What a run's seed decides: task order, verdict order and the sampling seed of every LLM call.

The paper's seeds (42, 7, 13) fix "task selection, splits and clustering order, not model
output"; on a backend that accepts a sampling seed they fix its draws as well. Every derived
number is a pure function of the run seed and the call's identity (round, split, task, role,
attempt), never of a counter or the clock, so a resumed run draws exactly what an uninterrupted
one would have. ``derive_seed`` is SHA-256 based: the same on every machine and Python version;
``seeded_order`` sorts first, so the storage order does not matter; ``sampling_kwargs`` is {}
for a client without ``supports_seed`` (Bedrock's Converse API has no seed), so callers never
pass a keyword a backend does not know.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, Callable, Iterable, TypeVar

T = TypeVar("T")


def derive_seed(*parts: object) -> int:
    """A stable 31-bit seed of ``parts`` (their ``str`` joined by ``|``)."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def seeded_order(items: Iterable[T], key: Callable[[T], Any], *parts: object) -> list[T]:
    """``items`` sorted by ``key``, then shuffled by ``derive_seed(*parts)``."""
    ordered = sorted(items, key=key)
    random.Random(derive_seed(*parts)).shuffle(ordered)
    return ordered


def sampling_kwargs(llm: Any, seed: int | None) -> dict[str, int]:
    """The ``seed=`` keyword for ``llm.complete`` when the backend accepts one."""
    accepts = getattr(llm, "supports_seed", False)
    return {"seed": int(seed)} if seed is not None and accepts else {}
