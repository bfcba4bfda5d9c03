"""Backend registry: ``make_llm`` / ``make_embedder`` from ``LLMSettings``, imports done lazily.

Contracts:
- ``BACKENDS`` names every backend (an unknown one raises ``LLMError`` listing them);
  ``WORLD_BACKENDS`` answer from a simulated world (``llm.world``).
- A backend's module is imported only when it is built (``bedrock`` needs no llama.cpp).
- ``services`` (``LLMServices``, default ``IN_PROCESS``) is the only source of shared state, so
  the same arguments always give the same kind of client, whatever runs in the process.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ratchet_ray.settings.schema import LLMSettings
from ratchet_ray.llm.accounting import price_table
from ratchet_ray.llm.base import Embedder, LLMClient, LLMError
from ratchet_ray.llm.ratelimit import LimiterFactory, make_limiter

if TYPE_CHECKING:
    from ratchet_ray.llm.local import LocalConfig

BACKENDS = ("local", "bedrock", "openai", "sim")
WORLD_BACKENDS = ("sim",)
"""Backends whose clients answer from ``llm.world``, which only a suite's ``configure`` derives
(``ratchet_ray.suites.resolve_config`` refuses them without one)."""


@dataclass(frozen=True)
class LLMServices:
    """Where a client gets what is shared beyond its process: its budget's rate limiter
    (``limiters``) and, for ``local``, the model (``local_llm`` / ``local_embedder``:
    ``LocalConfig -> client``; None loads it in this process). ``IN_PROCESS`` shares nothing;
    the cluster's: ``actors.llm_server.cluster_services()``. Every field must pickle."""

    limiters: LimiterFactory = make_limiter
    local_llm: Callable[["LocalConfig"], LLMClient] | None = None
    local_embedder: Callable[["LocalConfig"], Embedder] | None = None


IN_PROCESS = LLMServices()


def _check(name: str) -> str:
    if name not in BACKENDS:
        raise LLMError(f"unknown LLM backend {name!r}; valid backends: {', '.join(BACKENDS)}")
    return name


def _world_backend(settings: LLMSettings) -> Any:
    """The module that builds the ``sim`` backend's clients, named by the world they answer from
    (``llm.world.backend_module``), so this layer names nothing of the sim suite."""
    if settings.world is None:
        raise LLMError("the sim backend needs llm.world, which resolving a config of suite sim "
                       "derives; build the settings through load_config (or "
                       "ratchet_ray.suites.resolve_config) with suite sim")
    return importlib.import_module(settings.world.backend_module)


def make_llm(settings: LLMSettings, backend: str | None = None, *,
             services: LLMServices = IN_PROCESS) -> LLMClient:
    """The generation client for ``backend`` (default ``settings.backend``) over ``services``."""
    backend = _check(backend or settings.backend)
    if backend == "local":
        from ratchet_ray.llm.local import LocalConfig, LocalLLM

        return (services.local_llm or LocalLLM)(LocalConfig.from_settings(settings))
    if backend == "bedrock":
        from ratchet_ray.llm.bedrock import BedrockConfig, BedrockLLM

        return BedrockLLM(BedrockConfig.from_settings(settings), price_table(settings),
                          limiters=services.limiters)
    if backend == "openai":
        from ratchet_ray.llm.openai_compat import OpenAICompatLLM, OpenAIConfig

        return OpenAICompatLLM(OpenAIConfig.from_settings(settings), price_table(settings),
                               limiters=services.limiters)
    return _world_backend(settings).make_llm(settings.world)  # sim


def make_embedder(settings: LLMSettings, backend: str | None = None, *,
                  services: LLMServices = IN_PROCESS) -> Embedder:
    """The embedder for ``backend`` (default ``settings.embedder``, else ``settings.backend``)."""
    backend = _check(backend or settings.embedder or settings.backend)
    if backend == "local":
        from ratchet_ray.llm.local import LocalConfig, MiniLMEmbedder

        return (services.local_embedder or MiniLMEmbedder)(LocalConfig.from_settings(settings))
    if backend == "bedrock":
        from ratchet_ray.llm.bedrock import BedrockConfig, BedrockEmbedder

        return BedrockEmbedder(BedrockConfig.from_settings(settings), limiters=services.limiters)
    if backend == "openai":
        from ratchet_ray.llm.openai_compat import OpenAICompatEmbedder, OpenAIConfig

        return OpenAICompatEmbedder(OpenAIConfig.from_settings(settings),
                                    limiters=services.limiters)
    return _world_backend(settings).make_embedder(settings.world)  # sim


class LazyEmbedder:
    """Builds the configured embedder on first use (loading MiniLM costs seconds and memory)."""

    def __init__(self, settings: LLMSettings, embedder: Embedder | None = None):
        self._settings = settings
        self._embedder = embedder

    @property
    def name(self) -> str:
        return self.get().name

    def get(self) -> Embedder:
        if self._embedder is None:
            self._embedder = make_embedder(self._settings)
        return self._embedder

    def embed(self, texts: Sequence[str], input_type: str = "search_document") -> Any:
        return self.get().embed(texts, input_type)
