"""The Solver's prompt for code tasks (an agent suite writes its own prompts in its folder).

``code_messages`` is ONE user message from ``SOLVER_TEMPLATE`` (template ``solver``): the skill's
guidance block (none without a skill), the task and the rule naming the entry point. A
non-empty ``prefill`` (``code_prefill``: the opening fence + ``def <entry_point>(``) is a
trailing assistant message, for ``supports_prefill`` backends. ``CODE_STOP`` ends a completion
where a base model goes on after the function; it only ever matches a closing fence.
"""

from __future__ import annotations

from typing import Mapping

from ratchet_ray.llm.base import Message
from ratchet_ray.settings.prompt_templates import render, template
from ratchet_ray.roles.prompt_base import entry_point, task_text
from ratchet_ray.types import Skill, Task

# A base model keeps writing after the function; these end the completion at the usual places.
CODE_STOP = ("\n```\n", "\nassert ", "\nprint(", "\nif __name__", "\n# Test", "\n# Example",
             "\n    \n    \n")


def code_prefill(task: Task) -> str:
    """The start of the answer (fence + function header) for backends that continue a prefill."""
    name = entry_point(task)
    return f"```python\ndef {name}(" if name else "```python\n"


# The Solver's template (``prompt_templates``; a run's ``prompts.dir`` may override it).
SOLVER_TEMPLATE = (
    "# Python programming task\n\n"
    "Write one correct, self-contained Python function that solves the task. "
    "Use only the standard library. Answer with only the code in one ```python block.\n\n"
    "{guidance}\n\n"
    "Task:\n{task}\n\n"
    "{entry_point_rule}")


def code_messages(task: Task, skill: Skill | None, *, prefill: str = "",
                  templates: Mapping[str, str] | None = None) -> list[Message]:
    """The prompt (module docstring); the prefill because base models write far better code when
    the function header is already written."""
    name = entry_point(task)
    text = render(template("solver", SOLVER_TEMPLATE, templates), {
        "guidance": skill.guidance_text() if skill is not None else "",
        "task": task_text(task),
        "entry_point_rule": f"The function must be named `{name}`." if name else ""})
    messages = [Message("user", text)]
    return [*messages, Message("assistant", prefill)] if prefill else messages
