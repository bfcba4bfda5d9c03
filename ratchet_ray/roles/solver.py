"""The Solver: one attempt at a task with 0 or 1 skill's guidance injected into the prompt.

API:
- ``solve(llm, task, skill, *, output_kind, max_tokens, temperature, agent_settings=None,
  log_dir=None, seed=None, turn=None) -> SolveResult(output, replies, exit_status, error)``;
  ``seed`` is the sampling seed of a single call on backends that take one.
  - ``output_kind == "code"`` (the built-in turn): ONE completion call asking for the
    ``entry_point`` function in a ```python block; ``output`` is that block's code
    (``extract_code``). When the client declares ``supports_prefill`` (a base-model completion
    backend), the answer's fence and ``def <entry_point>(`` header are prefilled and
    re-attached to the continuation.
  - any other ``output_kind`` is the suite's own, served by ``turn`` (the suite):
    - an agent (``suites.base.AgentTurn``: the suite has ``solve_agent``, e.g. SWE-bench's
      patch agent): ``turn.solve_agent(llm, task, skill, agent_settings, log_dir=log_dir)``
      returns ``(output, replies)``; the agent writes its trajectory under ``log_dir``. An agent
      whose ``solve_agent`` takes ``temperature`` and ``seed`` keywords gets the Solver's
      temperature and the call's seed (it samples like the one-call turns; older plugin agents
      without them are called as before);
    - else ONE completion call with the messages of ``turn.solver_messages(task, skill)``;
      ``output`` is ``turn.parse_output(reply.text)`` (``suites.base.SolverTurn``).
  An output kind other than ``"code"`` without a ``turn`` is a caller bug: ``ValueError``.
- Never raises for a failing backend or agent: ``exit_status`` is the exception's class name
  (mini-swe-agent style), ``error`` its message, ``output`` empty; the caller still grades and
  records the attempt, so every task yields a capsule. ``exit_status == "ok"`` otherwise.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ratchet_ray.storage.artifacts import Artifacts
from ratchet_ray.llm.base import LLMClient, Reply
from ratchet_ray.roles.prompts.solver import CODE_STOP, code_messages, code_prefill
from ratchet_ray.seeding import sampling_kwargs
from ratchet_ray.types import Skill, Task

OUTPUT_KINDS = ("code",)
"""Output kinds with a built-in Solver turn; a suite of any other kind is its own turn."""


@dataclass
class SolveResult:
    output: str
    replies: list[Reply] = field(default_factory=list)
    exit_status: str = "ok"
    error: str = ""


_FENCE_OPEN = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n", re.IGNORECASE)


def extract_code(text: str) -> str:
    """The code of a reply: the first fenced block (closed or cut off by a stop sequence), else
    the whole text. Graders extract again; this keeps the capsule's ``output`` readable."""
    opening = _FENCE_OPEN.search(text)
    if opening is None:
        return text.strip("\n").rstrip()
    body = text[opening.end():]
    closing = body.find("```")
    return (body if closing == -1 else body[:closing]).rstrip()


def supports_prefill(llm: LLMClient) -> bool:
    """Backends that continue a trailing assistant message declare ``supports_prefill = True``."""
    return bool(getattr(llm, "supports_prefill", False))


def solve_code(llm: LLMClient, task: Task, skill: Skill | None, *, max_tokens: int,
               temperature: float, seed: int | None = None,
               templates: Mapping[str, str] | None = None) -> SolveResult:
    prefill = code_prefill(task) if supports_prefill(llm) else ""
    messages = code_messages(task, skill, prefill=prefill, templates=templates)
    reply = llm.complete(messages, max_tokens=max_tokens,
                         temperature=temperature, stop=list(CODE_STOP),
                         **sampling_kwargs(llm, seed))
    # A chat model may restate the whole answer despite the prefill; keep it whole then.
    text = reply.text if reply.text.lstrip().startswith("```") else prefill + reply.text
    return SolveResult(extract_code(text), [reply])


def solve_turn(llm: LLMClient, task: Task, skill: Skill | None, turn: Any, *, max_tokens: int,
               temperature: float, seed: int | None = None) -> SolveResult:
    """One call with a suite's own prompt; its ``parse_output`` makes the graded output."""
    stop = list(getattr(turn, "solver_stop", ()) or ()) or None
    reply = llm.complete(turn.solver_messages(task, skill), max_tokens=max_tokens,
                         temperature=temperature, stop=stop, **sampling_kwargs(llm, seed))
    return SolveResult(turn.parse_output(reply.text), [reply])


def _agent_sampling(agent: Any, temperature: float, seed: int | None) -> dict[str, Any]:
    """``temperature`` and ``seed`` for an agent that takes them as keywords, else nothing."""
    try:
        params = inspect.signature(agent).parameters
    except (TypeError, ValueError):  # a builtin or C callable: no introspection, pass nothing
        return {}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    wanted = {"temperature": temperature, "seed": seed}
    return {k: v for k, v in wanted.items() if takes_any or k in params}


def solve(llm: LLMClient, task: Task, skill: Skill | None, *, output_kind: str,
          max_tokens: int, temperature: float, agent_settings: Any = None,
          log_dir: str | Path | Artifacts | None = None, seed: int | None = None,
          turn: Any = None, templates: Mapping[str, str] | None = None) -> SolveResult:
    if output_kind not in OUTPUT_KINDS and turn is None:
        raise ValueError(f"solve: output kind {output_kind!r} has no built-in turn (built in: "
                         f"{OUTPUT_KINDS}); pass the suite as turn= (a SolverTurn or AgentTurn)")
    try:
        if output_kind in OUTPUT_KINDS:
            return solve_code(llm, task, skill, max_tokens=max_tokens, temperature=temperature,
                              seed=seed, templates=templates)
        agent = getattr(turn, "solve_agent", None)
        if agent is not None:
            output, replies = agent(llm, task, skill, agent_settings, log_dir=log_dir,
                                    **_agent_sampling(agent, temperature, seed))
            return SolveResult(output, list(replies))
        return solve_turn(llm, task, skill, turn, max_tokens=max_tokens,
                          temperature=temperature, seed=seed)
    # Every attempt must become a graded capsule; the failure is recorded, not swallowed.
    except Exception as exc:  # noqa: BLE001
        replies = list(getattr(exc, "replies", []) or [])
        return SolveResult("", replies, type(exc).__name__, str(exc)[:2000])
