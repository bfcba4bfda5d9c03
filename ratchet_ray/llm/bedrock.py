"""Amazon Bedrock: Converse for generation (primary + fallback model), Cohere embed-v4 embeddings.

Contracts:
- Configuration: ``BedrockConfig.from_settings``; credentials: the boto3 chain, never the config.
- Retries: only botocore's ``standard`` mode; ``Reply.retries`` sums its ``RetryAttempts`` over
  the models tried.
- Fallback: a primary that is unavailable (not found, no access, not ready, overloaded after
  retries) hands the same request to the fallback model; a permanent refusal (not found, access
  denied, invalid model id) makes this client skip the primary from then on.
- Embeddings: at most 96 texts per ``invoke_model`` call, ``input_type`` passed through.
"""

from __future__ import annotations

import json
import time
from typing import Any, Sequence

import numpy as np
from pydantic import Field

from ratchet_ray.settings.schema import LLMSettings
from ratchet_ray.llm.accounting import PriceTable
from ratchet_ray.llm.base import InputType, LLMError, Message, Reply, embed_in_batches
from ratchet_ray.llm.ratelimit import HostedClient, LimiterFactory, estimate_tokens, make_limiter
from ratchet_ray.settings.backends import BedrockBackendSettings
from ratchet_ray.llm.structured import schema_instruction

MAX_EMBED_BATCH = 96

# Errors that mean "this model cannot serve now" -> try the fallback model.
_UNAVAILABLE = {"ResourceNotFoundException", "AccessDeniedException", "ModelNotReadyException",
                "ServiceUnavailableException", "ThrottlingException", "ModelTimeoutException",
                "InternalServerException", "ModelErrorException"}
# Of those, the ones that will not change during a run -> stop trying the primary.
_PERMANENT = {"ResourceNotFoundException", "AccessDeniedException"}


class BedrockConfig(BedrockBackendSettings):
    """``llm.bedrock`` plus what only a client sets: timeouts, budgets, embedding batch and size."""

    connect_timeout_s: float = 10.0
    read_timeout_s: float = 300.0
    requests_per_minute: int = 0
    tokens_per_minute: int = 0
    embed_batch: int = Field(default=MAX_EMBED_BATCH, ge=1, le=MAX_EMBED_BATCH)
    embed_dimension: int | None = None
    """Cohere v4 ``output_dimension`` (256, 512, 1024 or 1536); None = the model's default."""

    @classmethod
    def from_settings(cls, settings: LLMSettings) -> "BedrockConfig":
        """From ``llm.model`` and ``llm.bedrock`` (whose defaults came from ``$RATCHET_BEDROCK_*`` /
        ``$AWS_REGION`` when the config was built)."""
        return cls(**{**settings.bedrock.model_dump(),
                      "model_id": settings.model or settings.bedrock.model_id,
                      "fallback_model_id": settings.bedrock.fallback_model_id or None,
                      "requests_per_minute": settings.requests_per_minute,
                      "tokens_per_minute": settings.tokens_per_minute})


class _BedrockBase(HostedClient):
    def _make_client(self):
        import boto3
        from botocore.config import Config

        retry_config = Config(retries={"mode": "standard",
                                       "total_max_attempts": self.config.max_attempts},
                              connect_timeout=self.config.connect_timeout_s,
                              read_timeout=self.config.read_timeout_s)
        # A session of its own, not boto3's default one: that caches the credentials it first
        # found for the whole process, so a client made later would not see its environment.
        return boto3.session.Session().client("bedrock-runtime", region_name=self.config.region,
                                              endpoint_url=self.config.endpoint_url,
                                              config=retry_config)


def to_converse(messages: Sequence[Message], json_schema: dict[str, Any] | None):
    """(system blocks, alternating user/assistant messages) for the Converse API."""
    system = [{"text": m.content} for m in messages if m.role == "system"]
    if json_schema is not None:
        system.append({"text": schema_instruction(json_schema)})
    turns: list[dict] = []
    for m in messages:
        if m.role == "system":
            continue
        if turns and turns[-1]["role"] == m.role:  # Converse requires alternating roles
            turns[-1]["content"].append({"text": m.content})
        else:
            turns.append({"role": m.role, "content": [{"text": m.content}]})
    if not turns or turns[0]["role"] != "user":
        raise LLMError("Bedrock Converse needs the first non-system message to be from the user")
    return system, turns


def _error_code(exc: Exception) -> str:
    return getattr(exc, "response", {}).get("Error", {}).get("Code", type(exc).__name__)


def _retries(obj: Any) -> int:
    """botocore's retry count, from a response dict or a ``ClientError``."""
    response = obj if isinstance(obj, dict) else getattr(obj, "response", {})
    return int(response.get("ResponseMetadata", {}).get("RetryAttempts", 0))


def _model_unavailable(exc: Exception) -> bool:
    code = _error_code(exc)
    if code == "ValidationException":
        return "model" in str(exc).lower()
    return code in _UNAVAILABLE


class BedrockLLM(_BedrockBase):
    backend = "bedrock"

    def __init__(self, config: BedrockConfig, prices: PriceTable | None = None, *,
                 limiters: LimiterFactory = make_limiter):
        super().__init__(config, f"bedrock-{config.model_id}", limiters)
        self.model = config.model_id
        self.prices = prices or PriceTable()
        self.primary_disabled = False

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0,
                 stop: Sequence[str] | None = None, json_schema: dict[str, Any] | None = None) -> Reply:
        from botocore.exceptions import BotoCoreError, ClientError

        system, turns = to_converse(messages, json_schema)
        inference: dict[str, Any] = {"maxTokens": max_tokens, "temperature": temperature}
        if stop:
            inference["stopSequences"] = list(stop)
        request: dict[str, Any] = {"messages": turns, "inferenceConfig": inference}
        if system:
            request["system"] = system
        estimate = estimate_tokens(messages, max_tokens)
        self.limiter.acquire(estimate)
        models = [self.config.model_id] if not self.primary_disabled else []
        if self.config.fallback_model_id:
            models.append(self.config.fallback_model_id)
        started, retries, errors, last_error = time.perf_counter(), 0, [], None
        for model_id in models:
            try:
                response = self.client.converse(modelId=model_id, **request)
            except ClientError as exc:
                last_error = exc
                retries += _retries(exc) + 1
                errors.append(f"{model_id}: {_error_code(exc)}: {exc}")
                if model_id == self.config.model_id and _error_code(exc) in _PERMANENT:
                    self.primary_disabled = True
                if not _model_unavailable(exc):
                    break
                continue
            except BotoCoreError as exc:
                raise LLMError(f"Bedrock {model_id}: {exc}; check AWS_REGION, network and "
                               "RATCHET_BEDROCK_ENDPOINT_URL") from exc
            usage = response.get("usage", {})
            blocks = response.get("output", {}).get("message", {}).get("content", [])
            tokens_in, tokens_out = int(usage.get("inputTokens", 0)), int(usage.get("outputTokens", 0))
            self.limiter.settle(tokens_in + tokens_out - estimate)
            return Reply(
                text="".join(b.get("text", "") for b in blocks),
                input_tokens=tokens_in, output_tokens=tokens_out,
                latency_s=time.perf_counter() - started,
                cost_usd=self.prices.cost(model_id, tokens_in, tokens_out),
                model=model_id, backend=self.backend, retries=retries + _retries(response),
                extra={"stop_reason": response.get("stopReason", ""),
                       **({"fallback_from": self.config.model_id} if model_id != self.config.model_id else {})},
            )
        self.limiter.settle(-estimate)
        raise LLMError("Bedrock Converse failed: " + " | ".join(errors)) from last_error


def parse_embeddings(payload: dict) -> list[list[float]]:
    """Cohere on Bedrock answers ``{"embeddings": {"float": [...]}}`` when ``embedding_types`` is
    sent and ``{"embeddings": [[...]]}`` otherwise; accept both."""
    embeddings = payload.get("embeddings")
    if isinstance(embeddings, dict):
        embeddings = embeddings.get("float")
    if not isinstance(embeddings, list):
        raise LLMError(f"unexpected Cohere embed response keys: {sorted(payload)}")
    return embeddings


class BedrockEmbedder(_BedrockBase):
    def __init__(self, config: BedrockConfig, *, limiters: LimiterFactory = make_limiter):
        super().__init__(config, f"bedrock-{config.embed_model_id}", limiters)
        self.name = config.embed_model_id

    def _invoke(self, texts: list[str], input_type: str) -> list[list[float]]:
        from botocore.exceptions import BotoCoreError, ClientError

        body: dict[str, Any] = {"texts": texts, "input_type": input_type, "embedding_types": ["float"]}
        if self.config.embed_dimension:
            body["output_dimension"] = self.config.embed_dimension
        self.limiter.acquire(sum(len(t) for t in texts) // 4 + 1)
        try:
            response = self.client.invoke_model(modelId=self.config.embed_model_id, body=json.dumps(body),
                                                contentType="application/json", accept="application/json")
        except (ClientError, BotoCoreError) as exc:
            raise LLMError(f"Bedrock embed {self.config.embed_model_id}: {exc}") from exc
        vectors = parse_embeddings(json.loads(response["body"].read()))
        if len(vectors) != len(texts):
            raise LLMError(f"Bedrock embed returned {len(vectors)} vectors for {len(texts)} texts")
        return vectors

    def embed(self, texts: Sequence[str], input_type: InputType = "search_document") -> np.ndarray:
        return embed_in_batches(texts, self.config.embed_batch,
                                lambda part: self._invoke(part, input_type),
                                self.config.embed_dimension or 0)
