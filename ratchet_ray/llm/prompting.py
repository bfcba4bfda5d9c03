"""Completion-style prompts for base models (the local Gemma has no chat template).

``completion_prompt`` renders the conversation as plain text sections ending in an open
``### Response`` section; a trailing ``assistant`` message is a prefill written verbatim inside
it. ``STOP_SEQUENCES`` end a generation where a base model would start the next turn. A JSON
schema is also stated in the prompt, not only enforced by the grammar: a base model follows a
grammar far better when the prompt agrees.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from ratchet_ray.llm.base import Message

_HEADERS = {"system": "### Instructions", "user": "### Input", "assistant": "### Response"}

STOP_SEQUENCES = ("\n### Input", "\n### Instructions", "\n### Response")


def completion_prompt(messages: Sequence[Message], json_schema: dict[str, Any] | None = None) -> str:
    prefill = ""
    if messages and messages[-1].role == "assistant":
        prefill, messages = messages[-1].content, messages[:-1]
    sections = [f"{_HEADERS[m.role]}\n{m.content.strip()}" for m in messages]
    if json_schema is not None:
        sections.append("### Format\nAnswer with one JSON object matching this schema:\n"
                        + json.dumps(json_schema, separators=(",", ":")))
    return "\n\n".join(sections) + "\n\n### Response\n" + prefill
