"""Bedrock backend: real boto3 against real HTTP servers on 127.0.0.1 (llm-katan + a wire proxy)."""

from __future__ import annotations

import numpy as np
import pytest
from fakes import HashEmbedder
from llm_servers import WireProxy

from ratchet_ray.settings.schema import LLMSettings
from ratchet_ray.llm.accounting import LLM_CALL_COLUMNS, llm_call_row
from ratchet_ray.llm.base import LLMError, Message
from ratchet_ray.llm.bedrock import (
    MAX_EMBED_BATCH, BedrockConfig, BedrockEmbedder, BedrockLLM, parse_embeddings,
)

PRIMARY = "global.anthropic.claude-opus-4-7"
FALLBACK = "global.anthropic.claude-sonnet-4-6"
EMBED = "global.cohere.embed-v4:0"


@pytest.fixture(autouse=True)
def _credentials(aws_env):
    return aws_env


@pytest.fixture
def proxy(katan):
    wire = WireProxy(katan, embedder=HashEmbedder(dim=64))
    yield wire
    wire.close()


def config_for(url: str, **overrides) -> BedrockConfig:
    fields = dict(model_id=PRIMARY, fallback_model_id=FALLBACK, embed_model_id=EMBED,
                  region="us-east-1", endpoint_url=url, max_attempts=3)
    return BedrockConfig(**{**fields, **overrides})


def test_converse_round_trip_with_usage_accounted(katan):
    llm = BedrockLLM(config_for(katan))
    reply = llm.complete([Message("system", "You are terse."), Message("user", "Hello Bedrock")],
                         max_tokens=32, temperature=0.0)
    assert "Hello Bedrock" in reply.text
    assert "messages=2" in reply.text  # the system prompt travelled as Converse `system`
    assert "max_tokens=32" in reply.text  # inferenceConfig reached the server
    assert reply.input_tokens > 0 and reply.output_tokens > 0
    assert reply.model == PRIMARY and reply.backend == "bedrock" and reply.retries == 0
    assert reply.cost_usd == pytest.approx((reply.input_tokens * 5 + reply.output_tokens * 25) / 1e6)
    row = llm_call_row(reply, run_id="r1", round_=3, role="solver")
    assert tuple(row) == LLM_CALL_COLUMNS
    assert row["input_tokens"] == reply.input_tokens and row["cost_usd"] == reply.cost_usd and row["ok"]


def test_consecutive_same_role_messages_are_merged(katan):
    llm = BedrockLLM(config_for(katan))
    reply = llm.complete([Message("user", "part one"), Message("user", "part two")], max_tokens=16)
    assert "messages=1" in reply.text and "part two" in reply.text


def test_throttling_reply_is_retried_then_succeeds(proxy):
    proxy.fail(f"/model/{PRIMARY}/converse", 429, "ThrottlingException", "Too many requests", times=1)
    reply = BedrockLLM(config_for(proxy.url)).complete([Message("user", "hi")], max_tokens=8)
    assert reply.model == PRIMARY  # retried on the primary, no fallback needed
    assert reply.retries == 1
    assert proxy.seen.count(f"/model/{PRIMARY}/converse") == 2


def test_fallback_model_takes_over_when_primary_unavailable(proxy):
    proxy.fail(f"/model/{PRIMARY}/converse", 404, "ResourceNotFoundException",
               "Model not found in this region", times=None)
    llm = BedrockLLM(config_for(proxy.url))
    first = llm.complete([Message("user", "hi")], max_tokens=8)
    assert first.model == FALLBACK and first.extra["fallback_from"] == PRIMARY
    assert first.cost_usd == pytest.approx((first.input_tokens * 3 + first.output_tokens * 15) / 1e6)
    assert llm.primary_disabled
    second = llm.complete([Message("user", "again")], max_tokens=8)
    assert second.model == FALLBACK
    assert proxy.seen.count(f"/model/{PRIMARY}/converse") == 1  # not asked again after a 404


def test_fallback_after_throttling_exhausts_retries(proxy):
    proxy.fail(f"/model/{PRIMARY}/converse", 429, "ThrottlingException", "slow down", times=None)
    reply = BedrockLLM(config_for(proxy.url, max_attempts=2)).complete([Message("user", "hi")], max_tokens=8)
    assert reply.model == FALLBACK
    assert reply.retries == 2  # one botocore retry on the primary + the failed primary call
    assert proxy.seen.count(f"/model/{PRIMARY}/converse") == 2


def test_without_fallback_a_missing_model_is_a_typed_error(proxy):
    proxy.fail(f"/model/{PRIMARY}/converse", 404, "ResourceNotFoundException", "no such model", times=None)
    llm = BedrockLLM(config_for(proxy.url, fallback_model_id=None))
    with pytest.raises(LLMError, match="ResourceNotFoundException"):
        llm.complete([Message("user", "hi")], max_tokens=8)
    row = llm_call_row(None, run_id="r1", round_=0, role="critic", ok=False, error="boom",
                       backend="bedrock", model=PRIMARY)
    assert row["ok"] is False and row["model"] == PRIMARY and row["cost_usd"] == 0.0


@pytest.mark.parametrize("shape", ["by_type", "plain"])
def test_embedding_round_trip_batches_of_96(katan, shape):
    wire = WireProxy(katan, embedder=HashEmbedder(dim=64), embed_shape=shape)
    try:
        embedder = BedrockEmbedder(config_for(wire.url))
        texts = [f"text number {i} about sorting lists" for i in range(200)]
        vectors = embedder.embed(texts, input_type="clustering")
    finally:
        wire.close()
    assert vectors.shape == (200, 64) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert wire.embed_batches == [MAX_EMBED_BATCH, MAX_EMBED_BATCH, 8]
    expected = HashEmbedder(dim=64).embed(texts[:3])
    assert np.allclose(vectors[:3], expected, atol=1e-5)


def test_parse_embeddings_rejects_unknown_shape():
    with pytest.raises(LLMError, match="unexpected Cohere embed response"):
        parse_embeddings({"vectors": []})


def test_config_reads_model_ids_and_region_from_env(monkeypatch):
    monkeypatch.setenv("RATCHET_BEDROCK_MODEL_ID", "a.model")
    monkeypatch.setenv("RATCHET_BEDROCK_FALLBACK_MODEL_ID", "")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    config = BedrockConfig.from_settings(LLMSettings(backend="bedrock", requests_per_minute=7))
    assert (config.model_id, config.fallback_model_id, config.region) == ("a.model", None, "eu-west-1")
    assert config.embed_model_id == EMBED and config.requests_per_minute == 7
    monkeypatch.delenv("RATCHET_BEDROCK_MODEL_ID")
    monkeypatch.delenv("RATCHET_BEDROCK_FALLBACK_MODEL_ID")
    defaults = BedrockConfig.from_settings(LLMSettings(backend="bedrock"))
    assert (defaults.model_id, defaults.fallback_model_id) == (PRIMARY, FALLBACK)
