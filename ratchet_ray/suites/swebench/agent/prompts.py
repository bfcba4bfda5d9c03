"""Prompts and the action schema of the patch Solver (completion-style, base-model friendly).

Contracts:
- ``AgentAction`` validates one agent reply: ``{"thought", "command", "done"}``; ``done=true``
  submits (the command is then ignored); otherwise ``command`` must be a non-empty shell command.
  ``ACTION_SCHEMA`` is the JSON schema passed to ``llm.complete(json_schema=...)`` (a flat object,
  which llama.cpp grammars constrain reliably).
- ``agent_messages(task, skill, steps, settings)``: a system message (the routed skill's guidance
  as its preamble — the CLAUDE.md analogue — then the rules) and one user message holding the
  issue and the newest steps that fit in ``settings.max_prompt_chars``.
- ``extract_diff(text)``: the diff in a reply (a ```diff block, else from the first
  ``diff --git``/``--- `` line), or "" when there is none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from pydantic import BaseModel, ConfigDict, model_validator

from ratchet_ray.llm.base import Message
from ratchet_ray.suites.swebench.settings import AgentSettings
from ratchet_ray.types import Skill, Task

ACTION_SCHEMA = {
    "type": "object",
    "properties": {
        "thought": {"type": "string"},
        "command": {"type": "string"},
        "done": {"type": "boolean"},
    },
    "required": ["thought", "command", "done"],
    "additionalProperties": False,
}
MAX_ISSUE_CHARS = 4000


class AgentAction(BaseModel):
    model_config = ConfigDict(extra="ignore")
    thought: str = ""
    command: str = ""
    done: bool = False

    @model_validator(mode="after")
    def _command_or_done(self) -> "AgentAction":
        if not self.done and not self.command.strip():
            raise ValueError("give a non-empty shell `command`, or set `done` to true")
        return self


@dataclass
class Step:
    """One turn of the loop: the model's action (or why its reply was rejected) and what happened."""

    thought: str
    command: str
    observation: str
    exit_code: int | None = None

    def render(self, number: int) -> str:
        head = f"## Step {number}\nthought: {self.thought.strip()}\n$ {self.command.strip()}"
        code = "" if self.exit_code is None else f"\n(exit {self.exit_code})"
        return f"{head}{code}\n{self.observation.rstrip() or '(no output)'}"


def clip_middle(text: str, limit: int) -> str:
    """Head and tail of ``text`` (commands print the cause first or last)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n...[{len(text) - 2 * half} chars cut]...\n{text[-half:]}"


def skill_preamble(skill: Skill | None) -> str:
    if skill is None:
        return ""
    return ("# Project guidance (follow it where it applies)\n" + skill.guidance_text() + "\n\n")


def _rules(workdir: str) -> str:
    return (
        f"# Task\nYou fix an issue in the Git repository at {workdir}. You work by running one "
        "bash command per step (no network, no interactive programs, each command has a time "
        "limit). Read the relevant code first, make the smallest change that fixes the issue, "
        "and check it by running code or existing tests. Do not modify tests. Delete scratch "
        "files you created. When the fix is complete, reply with done set to true: the patch is "
        "the repository's `git diff` at that moment.\n"
        "Useful commands: grep -rn PATTERN .; sed -n '10,40p' FILE; python3 -c '...'; edit with "
        "sed -i 's/old/new/' FILE or python3 - <<'EOF' ... EOF.\n"
        'Reply with one JSON object: {"thought": "<why>", "command": "<bash>", "done": false}')


def agent_messages(task: Task, skill: Skill | None, steps: Sequence[Step],
                   settings: AgentSettings, workdir: str = "/testbed") -> list[Message]:
    system = skill_preamble(skill) + _rules(workdir)
    issue = f"# Issue ({task.payload.get('repo', '')})\n{clip_middle(task.prompt.strip(), MAX_ISSUE_CHARS)}"
    budget = max(0, settings.max_prompt_chars - len(system) - len(issue))
    shown: list[str] = []
    for number in range(len(steps), 0, -1):
        block = steps[number - 1].render(number)
        if len(block) > budget:
            break
        shown.insert(0, block)
        budget -= len(block)
    omitted = len(steps) - len(shown)
    history = ([f"({omitted} earlier steps omitted)"] if omitted else []) + shown
    body = "\n\n".join([issue, "# Steps so far", *(history or ["(none yet)"]),
                        f"# Step {len(steps) + 1}\nReply with the next action as one JSON object."])
    return [Message("system", system), Message("user", body)]


def single_call_messages(task: Task, skill: Skill | None, files: str, context: str) -> list[Message]:
    """One request for a unified diff (``files``: the file list; ``context``: named files)."""
    system = skill_preamble(skill) + (
        "# Task\nWrite a patch that fixes the issue below. Reply with only a unified diff in git "
        "format (diff --git a/PATH b/PATH, ---/+++ lines, @@ hunks with 3 lines of context) "
        "inside one ```diff block. Do not modify tests.")
    body = (f"# Issue ({task.payload.get('repo', '')})\n{clip_middle(task.prompt.strip(), MAX_ISSUE_CHARS)}"
            f"\n\n# Repository files\n{files}\n\n# Relevant file contents\n{context or '(none found)'}"
            "\n\n# Patch\n```diff\n")
    return [Message("system", system), Message("user", body)]


_DIFF_FENCE = re.compile(r"```(?:diff|patch)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
_DIFF_START = re.compile(r"^(diff --git |--- )", re.MULTILINE)


def extract_diff(text: str) -> str:
    """The unified diff in ``text`` (see the module contract); "" when none is recognisable."""
    for block in _DIFF_FENCE.findall(text):
        if _DIFF_START.search(block):
            text = block
            break
    start = _DIFF_START.search(text)
    if start is None:
        return ""
    diff = text[start.start():].split("\n```", 1)[0].rstrip()
    return diff + "\n"
