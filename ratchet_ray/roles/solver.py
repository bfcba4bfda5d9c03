"""The Solver: one attempt at a task with 0 or 1 skill's guidance injected into the prompt.

``solve(llm, task, skill, *, output_kind, ...) -> SolveResult``:
- ``"code"`` (built in): ONE call asking for the ``entry_point`` function in a ```python block
  (``extract_code``); a ``supports_prefill`` client gets the fence and ``def <entry_point>(``
  prefilled, re-attached to the continuation.
- Another kind is served by ``turn`` (the suite; without one: ``ValueError``): an agent
  (``suites.base.AgentTurn``) runs ``solve_agent``, given ``temperature`` and ``seed`` when its
  signature takes them; else ONE call with ``turn.solver_messages`` parsed by
  ``turn.parse_output`` (``SolverTurn``).
- Never raises for a failing backend or agent: ``exit_status`` is the exception's class name,
  ``error`` its message, ``output`` empty (the attempt is still graded and recorded). A full
  disk or quota (``fsutil.disk_full``, anywhere in the exception's chain) is raised instead: it
  is no attempt of the task, and the run must stop on it (the loop and the baseline say
  ``fsutil.no_room``'s words and the fix) rather than count it an infrastructure failure.

``SolverWorker`` (behind the Solver actor) routes and solves. ``set_bank(skills)`` keeps what a
split may route to (ACTIVE, plus CANDIDATE on a bootstrap train pass) and builds the
``SkillIndex`` once when routing needs it; ``run(..., bank=)`` takes a ``BankSnapshot`` (one
``ray.put`` per split) cached by ``snapshot_id``, so any worker serves any call. Router and solver
calls sample with seeds from ``config.seed``, round, split and task (``seeding.derive_seed``).
Eval generations go through ``CachedLLM`` with ``solver_cache_dir`` (keyed by the call's seed, so
only a resumed round replays); train is never cached. A patch agent writes
``<trajectory_root>/<task_id>/<split>_<round:02d>/trajectory.json``; both roots may be a folder
or the run's ``storage.artifacts.Artifacts``.
"""

from __future__ import annotations

import inspect
import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ratchet_ray.llm.base import Embedder, LLMClient, Reply
from ratchet_ray.llm.registry import LazyEmbedder, make_llm
from ratchet_ray.roles.prompt_base import supports_prefill
from ratchet_ray.roles.retrieval import SkillIndex
from ratchet_ray.roles.router import ROUTABLE, RouteDecision, Router
from ratchet_ray.roles.solver_prompt import CODE_STOP, code_messages, code_prefill
from ratchet_ray.seeding import derive_seed, sampling_kwargs
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.storage.artifacts import Artifacts, as_artifacts
from ratchet_ray.storage.fsutil import disk_full
from ratchet_ray.types import NONE_SKILL, Skill, Task

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
        # A suite's own prompt in one call; its ``parse_output`` makes the graded output.
        stop = list(getattr(turn, "solver_stop", ()) or ()) or None
        reply = llm.complete(turn.solver_messages(task, skill), max_tokens=max_tokens,
                             temperature=temperature, stop=stop, **sampling_kwargs(llm, seed))
        return SolveResult(turn.parse_output(reply.text), [reply])
    # Every attempt must become a graded capsule; the failure is recorded, not swallowed.
    except Exception as exc:  # noqa: BLE001
        if disk_full(exc):  # the run's disk, not the task: stops the run (module contracts)
            raise
        replies = list(getattr(exc, "replies", []) or [])
        return SolveResult("", replies, type(exc).__name__, str(exc)[:2000])


@dataclass(frozen=True)
class BankSnapshot:
    """The skills one split may route to, named by an id unique to this snapshot."""

    snapshot_id: str
    skills: tuple[Skill, ...]

    @classmethod
    def of(cls, skills: Sequence[Skill]) -> "BankSnapshot":
        return cls(uuid.uuid4().hex, tuple(skills))


@dataclass
class SolveOutcome:
    """One routed attempt, ready to be graded and recorded as a capsule."""

    task_id: str
    split: str
    round: int
    skill_id: str
    route_reason: str
    output: str
    exit_status: str
    error: str = ""
    router_replies: list[Reply] = field(default_factory=list)
    solver_replies: list[Reply] = field(default_factory=list)
    latency_s: float = 0.0
    route_error: str = ""
    """The router's failure when it fell back to NONE (``RouteDecision.error``), else ""."""


class SolverWorker:
    def __init__(self, config: LoopConfig, *, llm: LLMClient | None = None,
                 embedder: Embedder | None = None, output_kind: str | None = None,
                 solver_cache_dir: str | Path | Artifacts | None = None,
                 agent_settings: Any = None, trajectory_root: str | Path | Artifacts | None = None):
        self.config = config
        self.llm = llm if llm is not None else make_llm(config.llm)
        self.embedder = LazyEmbedder(config.llm, embedder)
        self.turn = None  # the suite itself when it brings its own output kind (SolverTurn)
        if output_kind is None:
            from ratchet_ray.suites import suite_for

            suite = suite_for(config)
            output_kind = suite.output_kind
            self.turn = suite if output_kind not in OUTPUT_KINDS else None  # its own turn
        self.output_kind = output_kind
        self.agent_settings = agent_settings
        self.trajectory_root = (as_artifacts(trajectory_root) if trajectory_root is not None
                                else None)
        self.eval_llm = self.llm
        if solver_cache_dir is not None:
            from ratchet_ray.llm.cache import CachedLLM

            self.eval_llm = CachedLLM(self.llm, solver_cache_dir)
        self.skills: list[Skill] = []
        self.index: SkillIndex | None = None
        self.snapshot_id: str | None = None
        """The ``BankSnapshot`` that ``skills`` and ``index`` come from (None: ``set_bank``)."""

    def set_bank(self, skills: Sequence[Skill]) -> int:
        self.snapshot_id = None
        self.skills = [s for s in skills if s.status in ROUTABLE]
        router = self.config.router
        needs_index = bool(self.skills) and router.inject and (
            router.mode == "retrieval_only" or len(self.skills) > router.full_bank_max)
        self.index = SkillIndex.build(self.skills, self.embedder) if needs_index else None
        return len(self.skills)

    def run(self, task: Task, split: str, round_: int, *, probe: bool = False,
            bank: BankSnapshot | None = None) -> SolveOutcome:
        """Route and solve ``task`` against ``bank`` (default: ``set_bank``'s); ``probe`` (a
        counterfactual probe, ``curator.counterfactual``) solves it with NONE, no router call,
        under its own sampling seed."""
        started = time.perf_counter()
        if bank is not None and bank.snapshot_id != self.snapshot_id:
            self.set_bank(bank.skills)
            self.snapshot_id = bank.snapshot_id
        llm = self.eval_llm if split == "eval" else self.llm
        seed = self.config.seed
        if probe:
            decision = RouteDecision(NONE_SKILL, reason="counterfactual probe (NONE)")
        else:
            decision = Router(llm, self.embedder, self.config.router,
                              self.config.llm.roles.router,
                              templates=self.config.prompts.texts).route(
                task, self.skills, self.index,
                seed=derive_seed(seed, round_, split, task.task_id, "router"))
        skill = next((s for s in self.skills if s.id == decision.skill_id), None)
        trajectories = (None if self.trajectory_root is None
                        else self.trajectory_root.sub(f"{task.task_id}/{split}_{round_:02d}"))
        result = solve(llm, task, skill, output_kind=self.output_kind,
                       max_tokens=self.config.llm.max_tokens,
                       temperature=self.config.llm.temperature,
                       agent_settings=self.agent_settings, turn=self.turn,
                       templates=self.config.prompts.texts,
                       log_dir=trajectories,
                       seed=derive_seed(seed, round_, split, task.task_id,
                                        "probe" if probe else "solver"))
        return SolveOutcome(task_id=task.task_id, split=split, round=round_,
                            skill_id=decision.skill_id, route_reason=decision.reason,
                            route_error=decision.error,
                            output=result.output, exit_status=result.exit_status,
                            error=result.error, router_replies=decision.replies,
                            solver_replies=result.replies,
                            latency_s=time.perf_counter() - started)
