"""Test doubles (tests only; production code has no fake path).

- ``HashEmbedder``: deterministic bag-of-words hashing embedder; texts sharing words are close,
  identical texts have cosine 1.0.
- ``ScriptedLLM``: answers from a responder function ``(messages, json_schema) -> str`` and records
  every call; picklable, so it can be handed to Ray actors.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Callable, Sequence

import numpy as np

from ratchet_ray.llm.base import Message, Reply


class HashEmbedder:
    name = "hash"

    def __init__(self, dim: int = 256):
        self.dim = dim

    def embed(self, texts: Sequence[str], input_type: str = "search_document") -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in re.findall(r"[a-z0-9]+", text.lower()):
                digest = hashlib.md5(token.encode()).digest()
                out[row, int.from_bytes(digest[:4], "little") % self.dim] += 1.0
            norm = np.linalg.norm(out[row])
            out[row] = out[row] / norm if norm else out[row]
            if not norm:
                out[row, 0] = 1.0
        return out


Responder = Callable[[Sequence[Message], "dict[str, Any] | None"], str]


class ScriptedLLM:
    backend = "scripted"
    model = "scripted-1"

    def __init__(self, responder: Responder):
        self.responder = responder
        self.calls: list[tuple[list[Message], dict | None]] = []

    def complete(self, messages, *, max_tokens=512, temperature=0.0, stop=None, json_schema=None):
        self.calls.append((list(messages), json_schema))
        text = self.responder(messages, json_schema)
        prompt_words = sum(len(m.content.split()) for m in messages)
        return Reply(text=text, input_tokens=prompt_words, output_tokens=len(text.split()),
                     latency_s=0.0, model=self.model, backend=self.backend)


class PromptScript:
    """A scripted model that answers each role from the prompt alone (each actor holds its own
    copy): ``__call__`` finds the role by the prompt's heading (``ROLES``: heading -> method)
    and raises on an unscripted prompt; ``_entry_point`` names the one task the prompt is about
    (one of ``solutions``' entry points), ``_skill`` the skill injected into it, if any."""

    ROLES = (("# Python programming task", "solve"), ("# Skill routing", "route"),
             ("# Failure review", "critique"), ("# Skill authoring", "author"))

    def __init__(self, solutions: dict[str, str]):
        self.solutions = solutions

    def __call__(self, messages, json_schema=None) -> str:
        text = "\n".join(m.content for m in messages)
        for marker, method in self.ROLES:
            if text.startswith(marker):
                return getattr(self, method)(text)
        raise ValueError(f"unscripted prompt: {text[:80]!r}")

    def _entry_point(self, text: str) -> str:
        import re

        found = [ep for ep in self.solutions if re.search(rf"\b{ep}\(", text)
                 or f"`{ep}`" in text]
        if len(found) != 1:
            raise ValueError(f"cannot tell the task from the prompt (matches {found})")
        return found[0]

    @staticmethod
    def _skill(text: str) -> str | None:
        import re

        match = re.search(r"Guidance \(skill `([^`]+)`\)", text)
        return match.group(1) if match else None

    @staticmethod
    def skill_draft(skill_id: str, words: str) -> str:
        """A valid skill draft (the Synthesizer's JSON) about ``words``."""
        import json

        filler = " ".join([words] * 4)
        return json.dumps({
            "id": skill_id, "name": skill_id, "description": f"tasks prone to {words}",
            "intent": f"Avoid {words}", "signals_match": words.split()[:3], "tags": ["auto"],
            "guidance": {"applies_when": filler, "key_insight": filler,
                         "common_pitfalls": [words], "verify_before_returning": filler}})
