"""Backend settings of the LLM clients: config fields whose defaults come from the environment.

Contracts:
- A field's default is read from its environment variable (named in the field's doc) once, when
  the run's ``LoopConfig`` is loaded on the driver; from then on it is config: written to
  ``config.yaml``, pickled to every actor, read back as is by ``--resume``. Config files and
  ``--set llm.<backend>.<key>=...`` override the variables.
- Secrets are never fields: ``OPENAI_API_KEY`` and AWS credentials (the boto3 chain) are read
  each time a client is built; a ``base_url`` with user info is written without it
  (``run_config.files.dump_config``), its credentials coming back from ``OPENAI_BASE_URL``.
- Each backend has this one settings model; its client's config (``LocalConfig``,
  ``BedrockConfig``, ``OpenAIConfig``) extends it with what only a client holds (timeouts,
  seeds, secrets, rate budgets), never a copy of its fields.

A leaf module: it imports nothing of ``ratchet_ray`` (config and llm both import it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

_STRICT = ConfigDict(extra="forbid", validate_assignment=True)

DEFAULT_BEDROCK_MODEL_ID = "global.anthropic.claude-opus-4-7"
DEFAULT_BEDROCK_FALLBACK_MODEL_ID = "global.anthropic.claude-sonnet-4-6"
DEFAULT_BEDROCK_EMBED_MODEL_ID = "global.cohere.embed-v4:0"
SchemaMode = Literal["auto", "json_schema", "json_object", "none"]


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name) or default


def _env_int(name: str, default: int | None) -> int | None:
    value = _env(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise ValueError(f"${name}={value!r} is not an integer; fix or unset it") from exc


def _env_bool(name: str, default: bool) -> bool:
    value = _env(name)
    if value is None:
        return default
    if value.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if value.strip().lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"${name}={value!r} is not a boolean (1/0, true/false, yes/no, on/off); "
                     "fix or unset it")


class LocalBackendSettings(BaseModel):
    """The ``local`` backend (llama.cpp Gemma + MiniLM)."""

    model_config = _STRICT
    model_path: str | None = Field(default_factory=lambda: _env("RATCHET_LOCAL_MODEL_PATH"))
    """A .gguf file (default ``$RATCHET_LOCAL_MODEL_PATH``; None = the packaged Gemma 3 270M;
    a ``llm.model`` ending in .gguf wins)."""
    embed_model_path: str | None = Field(
        default_factory=lambda: _env("RATCHET_LOCAL_EMBED_PATH"))
    """A sentence-transformers BERT folder, run on NumPy (default ``$RATCHET_LOCAL_EMBED_PATH``;
    None = MiniLM)."""
    n_ctx: int = Field(default_factory=lambda: _env_int("RATCHET_LOCAL_N_CTX", 8192), gt=0)
    """Context length (default ``$RATCHET_LOCAL_N_CTX`` or 8192)."""
    n_threads: int | None = Field(default_factory=lambda: _env_int("RATCHET_LOCAL_N_THREADS", None),
                                  gt=0)
    """llama.cpp threads and the embedder's BLAS threads (default ``$RATCHET_LOCAL_N_THREADS``;
    None = half the CPUs, 1..4)."""
    extra_buffer_types: bool = Field(
        default_factory=lambda: _env_bool("RATCHET_LOCAL_EXTRA_BUFFER_TYPES", False))
    """llama.cpp's extra weight buffer types (model parameter ``use_extra_bufts``: weights
    repacked for the CPU's AMX or AVX kernels) (default ``$RATCHET_LOCAL_EXTRA_BUFFER_TYPES`` or
    false). Off because llama-cpp-python built on a CPU with AMX crashes (SIGSEGV in
    ``ggml_backend_amx_mul_mat``) on the packaged Gemma; off costs no speed measurable on an
    AVX-512 CPU without AMX (``bench/llm_local.py --extra-bufts``)."""


class OpenAIBackendSettings(BaseModel):
    """The ``openai`` backend (any OpenAI-compatible server; its URL is ``llm.base_url``)."""

    model_config = _STRICT
    model: str | None = Field(default_factory=lambda: _env("RATCHET_OPENAI_MODEL"))
    """Generation model (default ``$RATCHET_OPENAI_MODEL``; None = the server's first listed
    model; ``llm.model`` wins)."""
    embed_model: str | None = Field(default_factory=lambda: _env("RATCHET_OPENAI_EMBED_MODEL"))
    """Embedding model (default ``$RATCHET_OPENAI_EMBED_MODEL``; None = the generation model)."""
    max_retries: int = Field(default_factory=lambda: _env_int("RATCHET_OPENAI_MAX_RETRIES", 4),
                             ge=0)
    """The openai client's retries (default ``$RATCHET_OPENAI_MAX_RETRIES`` or 4)."""
    schema_mode: SchemaMode = Field(
        default_factory=lambda: _env("RATCHET_OPENAI_SCHEMA_MODE", "auto"))
    """How JSON output is asked for (default ``$RATCHET_OPENAI_SCHEMA_MODE`` or auto)."""
    embed_batch: int = Field(default_factory=lambda: _env_int("RATCHET_OPENAI_EMBED_BATCH", 64),
                             ge=1)
    """Texts per embeddings request (default ``$RATCHET_OPENAI_EMBED_BATCH`` or 64)."""


class BedrockBackendSettings(BaseModel):
    """The ``bedrock`` backend (credentials: the boto3 chain, never here)."""

    model_config = _STRICT
    model_id: str = Field(
        default_factory=lambda: _env("RATCHET_BEDROCK_MODEL_ID", DEFAULT_BEDROCK_MODEL_ID))
    """Primary model (default ``$RATCHET_BEDROCK_MODEL_ID``; ``llm.model`` wins)."""
    fallback_model_id: str | None = Field(default_factory=lambda: os.environ.get(
        "RATCHET_BEDROCK_FALLBACK_MODEL_ID", DEFAULT_BEDROCK_FALLBACK_MODEL_ID) or None)
    """Fallback model (default ``$RATCHET_BEDROCK_FALLBACK_MODEL_ID``; empty or None = none)."""
    embed_model_id: str = Field(default_factory=lambda: _env(
        "RATCHET_BEDROCK_EMBED_MODEL_ID", DEFAULT_BEDROCK_EMBED_MODEL_ID))
    """Embedding model (default ``$RATCHET_BEDROCK_EMBED_MODEL_ID``)."""
    region: str = Field(default_factory=lambda: _env("AWS_REGION")
                        or _env("AWS_DEFAULT_REGION") or "us-east-1")
    """AWS region (default ``$AWS_REGION``, ``$AWS_DEFAULT_REGION`` or us-east-1)."""
    endpoint_url: str | None = Field(
        default_factory=lambda: _env("RATCHET_BEDROCK_ENDPOINT_URL"))
    """Endpoint override (default ``$RATCHET_BEDROCK_ENDPOINT_URL``)."""
    max_attempts: int = Field(
        default_factory=lambda: _env_int("RATCHET_BEDROCK_MAX_ATTEMPTS", 8), ge=1)
    """botocore attempts per call (default ``$RATCHET_BEDROCK_MAX_ATTEMPTS`` or 8)."""


class PriceEntry(BaseModel):
    model_config = _STRICT
    input: float = Field(ge=0.0)
    """USD per million input tokens."""
    output: float = Field(default=0.0, ge=0.0)
    """USD per million output tokens."""


def read_price_overlay(path: str | Path) -> dict[str, tuple[float, float]]:
    """``{pattern: (input, output)}`` of a YAML/JSON price file; ``ValueError`` naming the file
    and the expected shape when it cannot be used."""
    file = Path(path)
    try:
        text = file.read_text()
        data = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise ValueError(f"price table {file}: cannot read it ({exc}); expected YAML/JSON "
                         "{model_pattern: {input: usd_per_mtok, output: usd_per_mtok}}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"price table {file}: expected a mapping of model pattern -> prices")
    prices = {}
    for pattern, entry in data.items():
        if not isinstance(entry, dict) or "input" not in entry:
            raise ValueError(f"price table {file}: entry {pattern!r} needs keys input and output "
                             "(USD per million tokens)")
        try:
            price = PriceEntry(input=entry["input"], output=entry.get("output", 0.0))
        except ValueError as exc:  # pydantic's ValidationError: not a number, or below 0
            raise ValueError(f"price table {file}: entry {pattern!r} needs input and output as "
                             f"numbers >= 0 (USD per million tokens), not {entry!r}") from exc
        prices[str(pattern)] = (price.input, price.output)
    return prices


def prices_from_env() -> dict[str, PriceEntry]:
    """The overlay of ``$RATCHET_PRICE_TABLE`` (empty when unset): the default of ``llm.prices``."""
    path = _env("RATCHET_PRICE_TABLE")
    if not path:
        return {}
    return {k: PriceEntry(input=i, output=o) for k, (i, o) in read_price_overlay(path).items()}
