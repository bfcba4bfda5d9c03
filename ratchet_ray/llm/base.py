"""The two interfaces every backend implements: text generation and embeddings.

``LLMClient.complete`` returns a ``Reply`` or raises ``LLMError`` once the backend's single retry
layer gives up; a backend that can constrain decoding to ``json_schema`` does (callers still
validate: ``llm.structured``). ``Embedder.embed`` returns float32 ``(len(texts), dim)`` rows of
unit L2 norm, so cosine similarity is a dot product.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Protocol, Sequence, runtime_checkable

import numpy as np

Role = Literal["system", "user", "assistant"]
InputType = Literal["search_document", "search_query", "clustering", "classification"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass
class Reply:
    """One generation and its accounting, taken from the provider's usage fields."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    model: str = ""
    backend: str = ""
    cached: bool = False
    retries: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class LLMError(RuntimeError):
    """A generation or embedding call failed after retries."""


class StructuredOutputError(LLMError):
    """A structured reply failed validation even after one repair attempt."""

    def __init__(self, message: str, *, raw: str = "", replies: Sequence[Reply] = ()):
        super().__init__(message)
        self.raw = raw
        self.replies = list(replies)


@runtime_checkable
class LLMClient(Protocol):
    backend: str
    model: str

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> Reply: ...


@runtime_checkable
class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str], input_type: InputType = "search_document") -> np.ndarray: ...


def embed_in_batches(texts: Sequence[str], batch: int,
                     embed_batch: Callable[[list[str]], Sequence[Any]], dim: int = 0) -> np.ndarray:
    """The rows of ``embed_batch`` over ``texts`` in slices of at most ``batch``, in order, as
    float32 and L2-normalised (an all-zero row stays zero); shape ``(0, dim)`` for no text."""
    rows = [row for start in range(0, len(texts), batch)
            for row in embed_batch(list(texts[start:start + batch]))]
    if not rows:
        return np.zeros((0, dim), dtype=np.float32)
    matrix = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise cosine of row-normalised embeddings (a: n x d, b: m x d) -> n x m."""
    if a.size == 0 or b.size == 0:
        return np.zeros((a.shape[0], b.shape[0]), dtype=np.float32)
    return a @ b.T
