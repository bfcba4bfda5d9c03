"""Worker classes behind the Solver, Critic and Synthesizer actors (plain classes; ``actors/*.py``
applies ``ray.remote``, unit tests use them directly).

Each worker builds its clients from ``config.llm`` with ``llm.registry.make_llm`` /
``make_embedder`` unless an ``llm`` / ``embedder`` object is injected (tests inject
``tests/fakes.ScriptedLLM`` / ``HashEmbedder``; a deployment may inject a shared client). The
embedder is built lazily: a worker that never needs one (small bank, no synthesis) never loads it.

API:
- ``SolverWorker(config, *, llm=None, embedder=None, output_kind=None, solver_cache_dir=None,
  agent_settings=None, trajectory_root=None)``
  - ``set_bank(skills) -> int``: what the caller lets the split route to (the round's ACTIVE
    skills, plus CANDIDATE ones on a bootstrap train pass; DEPRECATED ones are dropped); builds
    the ``SkillIndex`` once when routing will need it; returns the number of routable skills.
  - ``run(task, split, round_, *, bank=None) -> SolveOutcome`` (route + solve; never raises for
    LLM trouble). ``bank`` (a ``BankSnapshot``) is what this call routes to; the worker keeps the
    last snapshot's routable skills and index, keyed by its ``snapshot_id``, so the calls of one
    split pay for them once, and any worker (a fresh replacement too) can serve any call: the
    loop ``ray.put``s the snapshot once per split and sends its ref with every call. Without
    ``bank`` the call routes to what ``set_bank`` gave (direct use, tools, tests).
    The router and solver calls sample with seeds derived from ``config.seed``, the round, the
    split and the task (``seeding.derive_seed``), so a resumed run draws the same numbers.
    Eval-split generations go through ``CachedLLM`` when ``solver_cache_dir`` is given: its key
    holds the call's seed (round included) on every backend, so a sampled eval call is a new
    draw each round and only a resumed round replays; the train pass is never cached. With ``trajectory_root``, a patch agent writes
    ``<trajectory_root>/<task_id>/<split>_<round:02d>/trajectory.json``. Both may be a folder or
    an ``ratchet_ray.storage.artifacts.Artifacts`` (the run's store, which a Solver on any node reaches).
- ``CriticWorker(config, *, llm=None)``
  - ``critique_batch(items) -> list[CritiqueResult]``: one result per ``(task, capsule, skill)``
    item, in order; infrastructure failures are refused per item (``error`` NotCritiquable).
    Each call samples with a seed derived from ``config.seed`` and the capsule's round, split,
    task and attempt (not its run id, so two runs of one seed draw alike).
- ``SynthesizerWorker(config, *, llm=None, embedder=None, tasks=())``
  - ``run(verdicts, active_skills, metaskill, bank, round_, *, capsules=None, known_ids=())
    -> SynthOutcome``: ``bank`` is a ``SkillBank`` or anything with its ``add(skill, *,
    round_)`` (``actors/synthesizer.py`` wraps the bank actor's handle so), and with
    ``synth.refine`` (A10) its ``refine(skill, parent_id, *, round_)``; ``metaskill`` is
    dropped when ``config.meta.enabled`` is False (ablation A3).
  - ``refresh_metaskill(current, verdicts, round_) -> MetaRefresh``.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from ratchet_ray.storage.artifacts import Artifacts, as_artifacts
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.llm.base import Embedder, LLMClient, Reply
from ratchet_ray.roles.critic import CritiqueResult, critique
from ratchet_ray.roles.metasynth import MetaRefresh, refresh
from ratchet_ray.roles.retrieval import SkillIndex
from ratchet_ray.roles.router import ROUTABLE, RouteDecision, Router
from ratchet_ray.roles.solver import OUTPUT_KINDS, solve
from ratchet_ray.roles.synthesizer import SynthOutcome, Synthesizer
from ratchet_ray.seeding import derive_seed
from ratchet_ray.synthesis.leak_sources import guarded_adder, run_leak_index
from ratchet_ray.types import NONE_SKILL, Capsule, MetaSkill, Skill, Task, Verdict


def _make_llm(config: LoopConfig) -> LLMClient:
    from ratchet_ray.llm.registry import make_llm

    return make_llm(config.llm)


def _make_embedder(config: LoopConfig) -> Embedder:
    from ratchet_ray.llm.registry import make_embedder

    return make_embedder(config.llm)


class _LazyEmbedder:
    """Builds the configured embedder on first use (loading MiniLM costs seconds and memory)."""

    def __init__(self, config: LoopConfig, embedder: Embedder | None):
        self._config = config
        self._embedder = embedder

    @property
    def name(self) -> str:
        return self.get().name

    def get(self) -> Embedder:
        if self._embedder is None:
            self._embedder = _make_embedder(self._config)
        return self._embedder

    def embed(self, texts: Sequence[str], input_type: str = "search_document") -> Any:
        return self.get().embed(texts, input_type)


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
        self.llm = llm if llm is not None else _make_llm(config)
        self.embedder = _LazyEmbedder(config, embedder)
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

    def use_bank(self, bank: BankSnapshot) -> None:
        """Route to ``bank`` from now on (a no-op when it is the snapshot already in use)."""
        if bank.snapshot_id != self.snapshot_id:
            self.set_bank(bank.skills)
            self.snapshot_id = bank.snapshot_id

    def run(self, task: Task, split: str, round_: int, *, probe: bool = False,
            bank: BankSnapshot | None = None) -> SolveOutcome:
        """Route and solve ``task`` against ``bank`` (default: ``set_bank``'s); ``probe`` (a
        counterfactual probe, ``curator.counterfactual``) solves it with NONE, no router call,
        under its own sampling seed."""
        started = time.perf_counter()
        if bank is not None:
            self.use_bank(bank)
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
        result = solve(llm, task, skill, output_kind=self.output_kind,
                       max_tokens=self.config.llm.max_tokens,
                       temperature=self.config.llm.temperature,
                       agent_settings=self.agent_settings, turn=self.turn,
                       templates=self.config.prompts.texts,
                       log_dir=self._trajectory_dir(task, split, round_),
                       seed=derive_seed(seed, round_, split, task.task_id,
                                        "probe" if probe else "solver"))
        return SolveOutcome(task_id=task.task_id, split=split, round=round_,
                            skill_id=decision.skill_id, route_reason=decision.reason,
                            route_error=decision.error,
                            output=result.output, exit_status=result.exit_status,
                            error=result.error, router_replies=decision.replies,
                            solver_replies=result.replies,
                            latency_s=time.perf_counter() - started)


    def _trajectory_dir(self, task: Task, split: str, round_: int) -> Artifacts | None:
        if self.trajectory_root is None:
            return None
        return self.trajectory_root.sub(f"{task.task_id}/{split}_{round_:02d}")


class CritiqueItem(NamedTuple):
    task: Task
    capsule: Capsule
    skill: Skill | None


class CriticWorker:
    def __init__(self, config: LoopConfig, *, llm: LLMClient | None = None):
        from ratchet_ray.suites import load_plugins

        self.config = config
        self.llm = llm if llm is not None else _make_llm(config)
        # The review prompt is the one the task's suite registered: a plugin suite's too.
        load_plugins(config.suite_plugins)

    def critique_batch(self, items: Sequence[CritiqueItem | tuple]) -> list[CritiqueResult]:
        results = []
        for item in items:
            task, capsule, skill = CritiqueItem(*item)
            results.append(critique(self.llm, task, capsule, skill,
                                    limits=self.config.llm.roles.critic,
                                    templates=self.config.prompts.texts,
                                    seed=derive_seed(self.config.seed, capsule.round,
                                                     capsule.split, capsule.task_id,
                                                     capsule.attempt, "critic")))
        return results


def bank_adder(bank: Any, round_: int) -> Callable[..., Any]:
    """``add_skill`` for the Synthesizer: ``bank.add(skill, round_=round_, sources=sources)``."""
    return lambda skill, sources=None: bank.add(skill, round_=round_, sources=sources)


class SynthesizerWorker:
    def __init__(self, config: LoopConfig, *, llm: LLMClient | None = None,
                 embedder: Embedder | None = None, tasks: Sequence[Task] = ()):
        self.config = config
        self.llm = llm if llm is not None else _make_llm(config)
        self.embedder = _LazyEmbedder(config, embedder)
        self.synthesizer = Synthesizer(self.llm, self.embedder, config.synth, config.suite,
                                       tasks={t.task_id: t for t in tasks}, seed=config.seed,
                                       limits=config.llm.roles.synth,
                                       templates=config.prompts.texts)
        self._index = None

    def run(self, verdicts: Sequence[Verdict], active_skills: Sequence[Skill],
            metaskill: MetaSkill | None, bank: Any, round_: int, *,
            capsules: Mapping[str, Capsule] | None = None,
            known_ids: Sequence[str] = ()) -> SynthOutcome:
        prior = metaskill if self.config.meta.enabled else None
        add = bank_adder(bank, round_)
        guard = self.config.synth.leakage_guard

        def refine(skill: Skill, parent_id: str) -> Any:
            def put(revision: Skill) -> Any:
                return bank.refine(revision, parent_id, round_=round_)
            if guard:  # a revision passes the same leakage guard as a new skill
                put = guarded_adder(put, self._leak_index(), self.config.synth.leakage_threshold)
            return put(skill)

        if guard:
            add = guarded_adder(add, self._leak_index(), self.config.synth.leakage_threshold)
        return self.synthesizer.run(verdicts, active_skills, prior, add,
                                    round_, capsules=capsules, known_ids=known_ids,
                                    refine_skill=refine if self.config.synth.refine else None)

    def _leak_index(self) -> Any:
        """The run's leak index, built on first use (``synth.leakage_guard``): the split
        ``split_tasks`` derives from the config, the ids the run dir records."""
        if self._index is None:
            self._index = run_leak_index(self.config)[0]
        return self._index

    def refresh_metaskill(self, current: MetaSkill, verdicts: Sequence[Verdict],
                          round_: int) -> MetaRefresh:
        return refresh(self.llm, self.config.suite, current, verdicts, round_=round_,
                       limits=self.config.llm.roles.metasynth,
                       seed=derive_seed(self.config.seed, round_, "metasynth"),
                       templates=self.config.prompts.texts)
