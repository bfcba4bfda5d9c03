"""The Critic: one Verdict per train-failure capsule.

``critique(llm, task, capsule, skill, ...) -> CritiqueResult(verdict, replies, error,
retryable)``: ``skill`` is the routed one (None for NONE), ``limits`` is ``llm.roles.critic``,
``flavour`` the review prompt (default: the task's suite's).
- A capsule that is not ``is_critiquable`` (a failed, non-infrastructure, train one) is refused
  without an LLM call (``"NotCritiquable: ..."``).
- The reply is a ``VerdictOut`` under a JSON-schema constraint (``critic_prompt.verdict_model``,
  one repair retry); ``verdict.pattern`` is the label with spaces.
- Never raises for LLM trouble: a garbled reply gives ``"StructuredOutputError: ..."`` with the
  replies kept; a backend failure ``"<ExcName>: ..."`` with ``retryable`` True.

``CriticWorker`` (behind the Critic actor): ``critique_batch(items)``, one result per ``(task,
capsule, skill)`` in order, each sampled with a seed from ``config.seed`` and the capsule's
round, split, task and attempt (not its run id: two runs of a seed agree).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, NamedTuple, Sequence

from ratchet_ray.settings.schema import LoopConfig, RoleLimits, RoleSettings
from ratchet_ray.llm.base import LLMClient, Reply
from ratchet_ray.llm.registry import make_llm
from ratchet_ray.llm.structured import ask_structured
from ratchet_ray.roles.critic_prompt import CONFIDENCE, critic_messages, verdict_model
from ratchet_ray.roles.prompt_base import entry_point, supports_prefill
from ratchet_ray.seeding import derive_seed
from ratchet_ray.types import NONE_SKILL, Capsule, Skill, Task, Verdict

DEFAULT_LIMITS = RoleSettings().critic


@dataclass
class CritiqueResult:
    verdict: Verdict | None
    replies: list[Reply] = field(default_factory=list)
    error: str = ""
    retryable: bool = False
    """No verdict because the backend failed (not the model's answer): ask again later."""

    @property
    def ok(self) -> bool:
        return self.verdict is not None


def refusal_reason(capsule: Capsule) -> str:
    """Why a capsule may not be critiqued ("" when it may)."""
    if capsule.infra_failure:
        return (f"capsule {capsule.capsule_id} is an infrastructure failure "
                f"({capsule.exit_status}); the Critic never learns from those")
    if capsule.passed:
        return f"capsule {capsule.capsule_id} passed; only failures get verdicts"
    if capsule.split != "train":
        return f"capsule {capsule.capsule_id} is from split {capsule.split!r}; only train failures"
    return ""


def is_critiquable(capsule: Capsule) -> bool:
    return not refusal_reason(capsule)


def critique(llm: LLMClient, task: Task, capsule: Capsule, skill: Skill | None, *,
             limits: RoleLimits | None = None, seed: int | None = None,
             templates: Mapping[str, str] | None = None,
             flavour: str | Callable[..., list] | None = None) -> CritiqueResult:
    limits = limits or DEFAULT_LIMITS
    reason = refusal_reason(capsule)
    if reason:
        return CritiqueResult(None, [], f"NotCritiquable: {reason}")
    if task.task_id != capsule.task_id:
        return CritiqueResult(None, [], f"NotCritiquable: task {task.task_id} does not match "
                                        f"capsule task {capsule.task_id}")
    # A skill id on the capsule with no skill object (e.g. retired since) still gets a verdict,
    # judged as if no guidance were visible.
    shown = skill if skill is not None and capsule.skill_id != NONE_SKILL else None
    # Base-model backends continue a trailing assistant message: the review opens there.
    result = ask_structured(llm, critic_messages(task, capsule, shown,
                                                 prefill=supports_prefill(llm),
                                                 templates=templates, flavour=flavour),
                            verdict_model(shown is not None, entry_point=entry_point(task)),
                            max_tokens=limits.max_tokens, temperature=limits.temperature,
                            seed=seed)
    if result.value is None:
        return CritiqueResult(None, result.replies, result.error,
                              retryable=result.backend_failed)
    out = result.value
    verdict = Verdict(
        capsule_id=capsule.capsule_id, run_id=capsule.run_id, round=capsule.round,
        task_id=capsule.task_id, skill_id=capsule.skill_id, attribution=out.attribution,
        # Stored as plain words: the embedder clusters and the Synthesizer reads them as text.
        pattern=out.pattern.replace("_", " ")[:200], confidence=CONFIDENCE[out.confidence],
        rationale=out.rationale.strip(),
    )
    return CritiqueResult(verdict, list(result.replies))


class CritiqueItem(NamedTuple):
    task: Task
    capsule: Capsule
    skill: Skill | None


class CriticWorker:
    def __init__(self, config: LoopConfig, *, llm: LLMClient | None = None):
        from ratchet_ray.suites import load_plugins

        self.config = config
        self.llm = llm if llm is not None else make_llm(config.llm)
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
