"""Shared pieces of the role prompts: text clipping and the task's text (the injected skill's
block is ``Skill.guidance_text``, so suites' own agents render it without importing the roles;
a structured reply's model config is ``bank.skill_contract.DRAFT_CONFIG``)."""

from __future__ import annotations

from ratchet_ray.types import Task


def supports_prefill(llm: object) -> bool:
    """Backends that continue a trailing assistant message declare ``supports_prefill = True``."""
    return bool(getattr(llm, "supports_prefill", False))


def clip(text: str, limit: int) -> str:
    """Keep the head of ``text`` and say how much was cut, so the model knows it is partial."""
    text = text.strip()
    return text if len(text) <= limit else f"{text[:limit]}\n...[{len(text) - limit} chars cut]"


def clip_tail(text: str, limit: int) -> str:
    """Keep the end of ``text`` (tracebacks and test failures put the cause last)."""
    text = text.strip()
    return text if len(text) <= limit else f"[{len(text) - limit} chars cut]...\n{text[-limit:]}"


def entry_point(task: Task) -> str:
    """The function a code task asks for ('' when the task names none)."""
    return str(task.payload.get("entry_point") or "").strip()


def task_text(task: Task, limit: int = 3000) -> str:
    # MBPP+ prompts are wrapped in a docstring; the quotes are noise to the model.
    return clip(task.prompt.strip().strip('"').strip(), limit)
