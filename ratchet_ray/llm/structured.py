"""Structured replies: generate JSON for a pydantic model, validate, repair once, else a typed error.

``complete_structured`` asks for JSON matching the model's schema (constrained decoding where the
backend can) and validates it; a reply that does not validate is asked once more with the bad
reply and the error appended. ``seed`` is the first call's sampling seed, the repair's derived
from it (only for backends that take one). Returns ``Answer(value, replies)`` with every
generation made (1 or 2), else raises ``StructuredOutputError`` with the last raw text and all
replies; an ``LLMError`` on the repair also becomes one, on the first attempt it propagates.

``ask_structured`` (same arguments) never raises either: its ``Answer`` has ``value`` None on a
failure, with ``error`` ("<error type>: <message>"), the replies, and ``backend_failed`` (True
for an ``LLMError``, worth a retry; False for replies that did not validate). The roles turn
that one shape into their own outcome.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Generic, Sequence, TypeVar

from pydantic import BaseModel, ValidationError

from ratchet_ray.llm.base import LLMClient, LLMError, Message, Reply, StructuredOutputError
from ratchet_ray.seeding import derive_seed, sampling_kwargs

ModelT = TypeVar("ModelT", bound=BaseModel)

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Answer(Generic[ModelT]):
    """A structured call's outcome (``complete_structured``'s always has a ``value``)."""

    value: ModelT | None
    replies: list[Reply]
    error: str = ""
    backend_failed: bool = False
    exception: Exception | None = None
    """The ``StructuredOutputError`` / ``LLMError`` itself, to chain or word differently."""


def extract_json(text: str) -> str:
    """The JSON object in ``text``: the whole text, a fenced block, or the outermost braces.
    Models often wrap JSON in prose or code fences even when asked not to."""
    stripped = text.strip()
    if stripped.startswith("{") or stripped.startswith("["):
        return stripped
    fenced = _FENCE.search(text)
    if fenced:
        return fenced.group(1).strip()
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        return text[start : end + 1]
    return stripped


def parse_reply(text: str, schema_model: type[ModelT]) -> ModelT:
    """Validate ``text`` against ``schema_model``; raises ``ValidationError`` or ``ValueError``."""
    return schema_model.model_validate_json(extract_json(text))


def _describe(exc: Exception) -> str:
    if not isinstance(exc, ValidationError):
        return str(exc)
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
                     for err in exc.errors()[:8])


@functools.lru_cache(maxsize=512)
def _json_schema(schema_model: type[BaseModel]) -> dict[str, Any]:
    # Generating a JSON schema costs about a millisecond; the roles ask with a few fixed models
    # (the router's per bank, cached in ``roles.router_prompt``). Callers only read it.
    return schema_model.model_json_schema()


def schema_instruction(schema: dict[str, Any]) -> str:
    return ("Reply with only a JSON object (no prose, no code fences) that matches this JSON "
            f"schema:\n{json.dumps(schema, separators=(',', ':'))}")


def complete_structured(
    llm: LLMClient,
    messages: Sequence[Message],
    schema_model: type[ModelT],
    *,
    max_tokens: int,
    temperature: float = 0.0,
    seed: int | None = None,
) -> Answer[ModelT]:
    schema = _json_schema(schema_model)
    first = llm.complete(messages, max_tokens=max_tokens, temperature=temperature, json_schema=schema,
                         **sampling_kwargs(llm, seed))
    replies = [first]
    try:
        return Answer(parse_reply(first.text, schema_model), replies)
    except (ValidationError, ValueError) as exc:
        problem = _describe(exc)
    repair = [
        *messages,
        Message("assistant", first.text),
        Message("user", f"That reply is invalid: {problem}\n{schema_instruction(schema)}"),
    ]
    try:
        second = llm.complete(repair, max_tokens=max_tokens, temperature=temperature,
                              json_schema=schema,
                              **sampling_kwargs(llm, None if seed is None else derive_seed(seed, "repair")))
    except LLMError as exc:
        raise StructuredOutputError(
            f"{schema_model.__name__}: first reply invalid ({problem}); repair call failed: {exc}",
            raw=first.text, replies=replies,
        ) from exc
    replies.append(second)
    try:
        return Answer(parse_reply(second.text, schema_model), replies)
    except (ValidationError, ValueError) as exc:
        raise StructuredOutputError(
            f"{schema_model.__name__}: reply invalid after one repair attempt: {_describe(exc)}",
            raw=second.text, replies=replies,
        ) from exc


def ask_structured(llm: LLMClient, messages: Sequence[Message], schema_model: type[ModelT], *,
                   max_tokens: int, temperature: float = 0.0,
                   seed: int | None = None) -> Answer[ModelT]:
    """``complete_structured`` with its two failures as values (module contract)."""
    try:
        return complete_structured(llm, messages, schema_model, max_tokens=max_tokens,
                                   temperature=temperature, seed=seed)
    except StructuredOutputError as exc:
        return Answer(None, list(exc.replies), f"StructuredOutputError: {exc}", exception=exc)
    except LLMError as exc:
        return Answer(None, [], f"{type(exc).__name__}: {exc}", backend_failed=True,
                      exception=exc)
