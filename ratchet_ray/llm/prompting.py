"""Completion-style prompts for base models (the local Gemma has no chat template).

Contract: ``completion_prompt(messages, json_schema=None)`` renders the conversation as plain
text sections and ends with an open ``### Response`` section for the model to continue. A
trailing ``assistant`` message is a prefill: it is written verbatim inside that open section, so
a role can start the answer (e.g. a code fence and the function signature) for the model.
``STOP_SEQUENCES`` end a generation where a base model would start writing the next turn.
When a JSON schema is given, the instruction to answer in JSON is added to the prompt as well
as enforced by the grammar: a base model follows a grammar far better when the prompt agrees.
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
