"""Backend registry: ``make_llm`` / ``make_embedder`` from ``LLMSettings``, imports done lazily.

Contracts:
- ``BACKENDS`` names every backend; an unknown name raises ``LLMError`` listing the valid ones.
- A backend's module is imported only when that backend is built, so ``bedrock`` needs no
  llama.cpp and ``local`` needs no boto3.
- ``local`` inside a running Ray (driver or worker): the returned client talks to the one model
  server of the node it runs on (``actors/llm_server.py``), so N actors on a node share one model
  copy. Outside Ray it loads the model in this process.
"""

from __future__ import annotations

import sys
from typing import Callable

from ratchet_ray.config import LLMSettings
from ratchet_ray.llm.base import Embedder, LLMClient, LLMError

BACKENDS = ("local", "bedrock", "openai")


def inside_ray() -> bool:
    """True when Ray is initialised in this process (a driver after ``ray.init`` or a worker)."""
    ray = sys.modules.get("ray")
    return bool(ray is not None and ray.is_initialized())


def _check(name: str) -> str:
    if name not in BACKENDS:
        raise LLMError(f"unknown LLM backend {name!r}; valid backends: {', '.join(BACKENDS)}")
    return name


def _local_llm(settings: LLMSettings) -> LLMClient:
    from ratchet_ray.llm.local import LocalConfig, LocalLLM

    config = LocalConfig.from_settings(settings)
    if inside_ray():
        from actors.llm_server import NodeLLMClient

        return NodeLLMClient(config)
    return LocalLLM(config)


def _local_embedder(settings: LLMSettings) -> Embedder:
    from ratchet_ray.llm.local import LocalConfig, MiniLMEmbedder

    config = LocalConfig.from_settings(settings)
    if inside_ray():
        from actors.llm_server import NodeEmbedderClient

        return NodeEmbedderClient(config)
    return MiniLMEmbedder(config)


def _bedrock_llm(settings: LLMSettings) -> LLMClient:
    from ratchet_ray.llm.bedrock import BedrockConfig, BedrockLLM

    return BedrockLLM(BedrockConfig.from_settings(settings))


def _bedrock_embedder(settings: LLMSettings) -> Embedder:
    from ratchet_ray.llm.bedrock import BedrockConfig, BedrockEmbedder

    return BedrockEmbedder(BedrockConfig.from_settings(settings))


def _openai_llm(settings: LLMSettings) -> LLMClient:
    from ratchet_ray.llm.openai_compat import OpenAICompatLLM, OpenAIConfig

    return OpenAICompatLLM(OpenAIConfig.from_settings(settings))


def _openai_embedder(settings: LLMSettings) -> Embedder:
    from ratchet_ray.llm.openai_compat import OpenAICompatEmbedder, OpenAIConfig

    return OpenAICompatEmbedder(OpenAIConfig.from_settings(settings))


_LLM_FACTORIES: dict[str, Callable[[LLMSettings], LLMClient]] = {
    "local": _local_llm, "bedrock": _bedrock_llm, "openai": _openai_llm,
}
_EMBEDDER_FACTORIES: dict[str, Callable[[LLMSettings], Embedder]] = {
    "local": _local_embedder, "bedrock": _bedrock_embedder, "openai": _openai_embedder,
}


def make_llm(settings: LLMSettings, backend: str | None = None) -> LLMClient:
    """The generation client for ``backend`` (default ``settings.backend``)."""
    return _LLM_FACTORIES[_check(backend or settings.backend)](settings)


def make_embedder(settings: LLMSettings, backend: str | None = None) -> Embedder:
    """The embedder for ``backend`` (default ``settings.embedder``, else ``settings.backend``)."""
    return _EMBEDDER_FACTORIES[_check(backend or settings.embedder or settings.backend)](settings)
