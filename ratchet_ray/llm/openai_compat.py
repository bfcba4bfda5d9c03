"""Any OpenAI-compatible server (vLLM, Ray Serve LLM, llama.cpp's server, Ollama) by base URL.

Contracts:
- Configuration: ``OpenAIConfig.from_settings``; no model set: the server's first listed one.
- The key is a ``SecretStr`` registered with ``redact``: every message and the limiter's name use
  the URL without user info, and ``LLMError`` texts pass through ``redact`` (they end up in
  capsule traces and critic prompts). The key itself travels, pickled, to the calling actors.
- Retries: only the ``openai`` client's own (``max_retries``); ``Reply.retries`` is its
  ``retries_taken``.
- ``json_schema`` is sent as ``response_format={"type": "json_schema", ...}``; a server that
  rejects it (HTTP 400/422, or 500 from llama.cpp's server) is asked again with llama.cpp's
  ``{"type": "json_object", "schema": ...}``, then with only an instruction in the prompt; the
  first mode that worked is remembered (``llm.openai.schema_mode`` pins one).
- Embeddings: a server answering one vector per token gets last-token pooling (``_pooled``).
"""

from __future__ import annotations

import os
import time
from typing import Any, Mapping, Sequence

import numpy as np
from pydantic import SecretStr

from ratchet_ray.settings.backends import OpenAIBackendSettings
from ratchet_ray.settings.schema import LLMSettings
from ratchet_ray.llm.accounting import PriceTable
from ratchet_ray.llm.base import InputType, LLMError, Message, Reply, embed_in_batches
from ratchet_ray.llm.ratelimit import HostedClient, LimiterFactory, estimate_tokens, make_limiter
from ratchet_ray.llm.structured import schema_instruction
from ratchet_ray.redact import MASK, redact, redact_url, register_secret


class OpenAIConfig(OpenAIBackendSettings):
    """``llm.openai`` plus what only a client holds: URL, API key, timeout and the run's budgets."""

    base_url: str
    api_key: SecretStr = SecretStr("not-needed")
    """Never printed: ``repr``, ``model_dump`` and every message show ``**********``."""
    timeout_s: float = 300.0
    requests_per_minute: int = 0
    tokens_per_minute: int = 0

    @classmethod
    def from_settings(cls, settings: LLMSettings, env: Mapping[str, str] = os.environ) -> "OpenAIConfig":
        """From ``llm.base_url`` / ``llm.model`` and ``llm.openai``; only the secrets come from
        ``env``: ``OPENAI_API_KEY``, and ``OPENAI_BASE_URL`` when ``llm.base_url`` is unset or was
        saved without its user info (a resumed run's config.yaml)."""
        base_url = settings.base_url or env.get("OPENAI_BASE_URL")
        if not base_url:
            raise LLMError("the openai backend needs a server URL: set llm.base_url "
                           "(e.g. llm.base_url=http://127.0.0.1:8000/v1) or OPENAI_BASE_URL")
        if f"{MASK}@" in base_url:
            full = env.get("OPENAI_BASE_URL") or ""
            if redact_url(full) != base_url:
                raise LLMError(f"llm.base_url {base_url} was saved without its credentials; set "
                               "OPENAI_BASE_URL to the full URL (same scheme, host and path, "
                               "with user:password@) and run again")
            base_url = full
        return cls(**{**settings.openai.model_dump(), "base_url": base_url,
                      "model": settings.model or settings.openai.model,
                      "api_key": SecretStr(env.get("OPENAI_API_KEY") or "not-needed"),
                      "requests_per_minute": settings.requests_per_minute,
                      "tokens_per_minute": settings.tokens_per_minute})


class _OpenAIBase(HostedClient):
    def __init__(self, config: OpenAIConfig, limiters: LimiterFactory = make_limiter):
        super().__init__(config, f"openai-{redact_url(config.base_url)}", limiters)
        register_secret(config.api_key.get_secret_value())

    @property
    def where(self) -> str:
        """The server URL without user info, for messages and names."""
        return redact_url(self.config.base_url)

    def _error(self, text: str) -> LLMError:
        """An ``LLMError`` whose message holds no credential (it may reach a capsule trace)."""
        return LLMError(redact(text))

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        register_secret(self.config.api_key.get_secret_value())  # redact it in this process too

    def _make_client(self):
        from openai import OpenAI

        return OpenAI(base_url=self.config.base_url, api_key=self.config.api_key.get_secret_value(),
                      max_retries=self.config.max_retries, timeout=self.config.timeout_s)

    def _model_id(self) -> str:
        """``_model``, else the first model the server lists (then remembered)."""
        if self._model is None:
            import openai

            try:
                models = [m.id for m in self.client.models.list()]
            except openai.OpenAIError as exc:
                raise self._error(f"{self.where}: cannot list models ({exc}); is the server "
                                  "up?") from exc
            if not models:
                raise self._error(f"{self.where} serves no model; set llm.model")
            self._model = models[0]
        return self._model


def _with_instruction(chat: list[dict], instruction: str) -> list[dict]:
    """Append ``instruction`` to the last user turn (strict chat templates reject two user turns
    in a row or a system turn after the first)."""
    if chat and chat[-1]["role"] == "user":
        return [*chat[:-1], {"role": "user", "content": f"{chat[-1]['content']}\n\n{instruction}"}]
    return [*chat, {"role": "user", "content": instruction}]


SCHEMA_MODES = ("json_schema", "json_object", "none")


def _with_format(request: dict[str, Any], chat: list[dict], json_schema: dict[str, Any] | None,
                 mode: str) -> dict[str, Any]:
    """``request`` with the structured-output ask of ``mode``: OpenAI/vLLM ``json_schema``,
    llama.cpp-style ``json_object`` + ``schema``, or only an instruction in the prompt."""
    if json_schema is None:
        return request
    if mode == "json_schema":
        return {**request, "response_format": {"type": "json_schema", "json_schema": {
            "name": str(json_schema.get("title", "reply")), "schema": json_schema}}}
    shaped = {**request, "messages": _with_instruction(chat, schema_instruction(json_schema))}
    if mode == "json_object":
        shaped["response_format"] = {"type": "json_object", "schema": json_schema}
    return shaped


class OpenAICompatLLM(_OpenAIBase):
    backend = "openai"
    supports_seed = True  # the chat API's `seed` (vLLM and llama.cpp servers honour it)

    def __init__(self, config: OpenAIConfig, prices: PriceTable | None = None, *,
                 limiters: LimiterFactory = make_limiter):
        super().__init__(config, limiters)
        self._model = config.model
        self.prices = prices or PriceTable()
        self.schema_modes = list(SCHEMA_MODES[SCHEMA_MODES.index(config.schema_mode):]
                                 if config.schema_mode != "auto" else SCHEMA_MODES)
        """Structured-output modes still believed to work on this server, best first."""

    model = property(_OpenAIBase._model_id)

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0,
                 stop: Sequence[str] | None = None, json_schema: dict[str, Any] | None = None,
                 seed: int | None = None) -> Reply:
        import openai

        chat = [{"role": m.role, "content": m.content} for m in messages]
        request: dict[str, Any] = {"model": self.model, "messages": chat, "max_tokens": max_tokens,
                                   "temperature": temperature}
        if seed is not None:
            request["seed"] = seed
        if stop:
            request["stop"] = list(stop)
        estimate = estimate_tokens(messages, max_tokens)
        self.limiter.acquire(estimate)
        started = time.perf_counter()
        try:
            while True:
                mode = self.schema_modes[0] if json_schema is not None else "none"
                try:
                    raw = self.client.chat.completions.with_raw_response.create(
                        **_with_format(request, chat, json_schema, mode))
                    response = raw.parse()
                    break
                except openai.APIStatusError as exc:
                    # 400/422, or 500 from llama.cpp's server, naming the response_format.
                    if mode == "none" or exc.status_code not in (400, 422, 500) or "response_format" not in str(exc):
                        raise
                    # This server rejects that response_format: step down for good.
                    self.schema_modes.pop(0)
        except openai.OpenAIError as exc:
            self.limiter.settle(-estimate)
            raise self._error(f"{self.where} model {self.model}: {exc}") from exc
        usage = response.usage
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        self.limiter.settle(tokens_in + tokens_out - estimate)
        choice = response.choices[0] if response.choices else None
        return Reply(
            text=(choice.message.content or "") if choice else "",
            input_tokens=tokens_in, output_tokens=tokens_out,
            latency_s=time.perf_counter() - started,
            cost_usd=self.prices.cost(response.model or self.model, tokens_in, tokens_out),
            model=response.model or self.model, backend=self.backend, retries=raw.retries_taken,
            extra={"finish_reason": choice.finish_reason if choice else ""},
        )


def _pooled(embedding: Any) -> np.ndarray:
    """One vector per text. llama.cpp's server answers one vector per *token* for models without
    a pooling layer (e.g. Gemma); a causal model's last token has seen the whole text, so it is
    the one kept (llama.cpp's own ``--pooling last``)."""
    vector = np.asarray(embedding, dtype=np.float32)
    return vector[-1] if vector.ndim == 2 else vector


class OpenAICompatEmbedder(_OpenAIBase):
    def __init__(self, config: OpenAIConfig, *, limiters: LimiterFactory = make_limiter):
        super().__init__(config, limiters)
        self._model = config.embed_model or config.model

    name = property(_OpenAIBase._model_id)

    def _embed_batch(self, texts: list[str]) -> list[np.ndarray]:
        import openai

        self.limiter.acquire(sum(len(t) for t in texts) // 4 + 1)
        try:
            response = self.client.embeddings.create(model=self.name, input=texts)
        except openai.OpenAIError as exc:
            raise self._error(f"{self.where} embeddings with {self.name}: {exc}") from exc
        if len(response.data) != len(texts):
            raise self._error(f"{self.where} returned {len(response.data)} embeddings for "
                              f"{len(texts)} texts")
        return [_pooled(row.embedding) for row in sorted(response.data, key=lambda item: item.index)]

    def embed(self, texts: Sequence[str], input_type: InputType = "search_document") -> np.ndarray:
        return embed_in_batches(texts, self.config.embed_batch, self._embed_batch)
