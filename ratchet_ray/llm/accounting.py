"""Cost accounting: a price table and the ``llm_call`` evidence row built from a ``Reply``.

Contracts:
- ``PriceTable.cost``: USD from per-million-token prices of the entry whose pattern is the
  longest substring of the model id; an unknown model costs 0.0.
- ``PriceTable()`` is ``DEFAULT_PRICES``; ``price_table(llm)`` overlays the run's ``llm.prices``
  (default: the ``$RATCHET_PRICE_TABLE`` YAML/JSON file, read once when the config is built, so
  a resumed run keeps its prices).
- ``llm_call_row`` returns a dict with exactly ``LLM_CALL_COLUMNS``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

from ratchet_ray.llm.base import Reply

if TYPE_CHECKING:
    from ratchet_ray.settings.schema import LLMSettings

LLM_CALL_COLUMNS = (
    "run_id", "round", "role", "backend", "model", "input_tokens", "output_tokens",
    "latency_s", "retries", "cost_usd", "cached", "ok", "error", "created_at",
)

# USD per million tokens (input, output). Patterns match substrings of the provider's model id,
# so one entry covers "anthropic.claude-sonnet-4-6", "global.anthropic.claude-sonnet-4-6", ...
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "claude-opus-4-7": (5.0, 25.0),
    "claude-opus-4-6": (5.0, 25.0),
    "claude-opus-4-5": (5.0, 25.0),
    "claude-opus-4-1": (15.0, 75.0),
    "claude-opus-4": (15.0, 75.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-haiku-4": (1.0, 5.0),
    "cohere.embed-v4": (0.12, 0.0),
    "gemma": (0.0, 0.0),
    "minilm": (0.0, 0.0),
}


@dataclass(frozen=True)
class PriceTable:
    prices: Mapping[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_PRICES))

    def _match(self, model: str) -> tuple[float, float] | None:
        model_l = model.lower()
        hits = [p for p in self.prices if p.lower() in model_l]
        return self.prices[max(hits, key=len)] if hits else None

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        price = self._match(model)
        if price is None:
            return 0.0
        return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000


def price_table(settings: "LLMSettings") -> PriceTable:
    """``DEFAULT_PRICES`` overlaid with the run's ``llm.prices`` (module contracts)."""
    prices = dict(DEFAULT_PRICES)
    prices.update({pattern: (entry.input, entry.output)
                   for pattern, entry in settings.prices.items()})
    return PriceTable(prices)


def llm_call_row(
    reply: Reply | None,
    *,
    run_id: str,
    round_: int,
    role: str,
    ok: bool = True,
    error: str = "",
    backend: str = "",
    model: str = "",
) -> dict:
    """One ``llm_call`` evidence row. With ``reply=None`` (the call failed before any reply)
    tokens and cost are zero and ``backend``/``model`` name what was attempted."""
    return {
        "run_id": run_id,
        "round": int(round_),
        "role": role,
        "backend": reply.backend if reply else backend,
        "model": reply.model if reply else model,
        "input_tokens": int(reply.input_tokens) if reply else 0,
        "output_tokens": int(reply.output_tokens) if reply else 0,
        "latency_s": float(reply.latency_s) if reply else 0.0,
        "retries": int(reply.retries) if reply else 0,
        "cost_usd": float(reply.cost_usd) if reply else 0.0,
        "cached": bool(reply.cached) if reply else False,
        "ok": bool(ok),
        "error": error[:2000],
        "created_at": time.time(),  # epoch seconds, like every evidence column
    }
