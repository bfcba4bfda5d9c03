"""The Router: pick one ACTIVE skill for a task, or NONE (the paper's rule; docs/architecture.md).

``Router(..., limits)`` takes the router's temperature and token cap (``llm.roles.router``);
``route(task, active_skills, index=None, *, seed=None)``: ``active_skills`` are what the split
may route to (ACTIVE, plus CANDIDATE on a train split during ``router.bootstrap_rounds``; never
DEPRECATED); ``index`` is the round's prebuilt ``SkillIndex`` over them (built on the fly when
None and needed).
- ``settings.inject`` False (A1), or no ACTIVE skill: NONE, no LLM call.
- ``settings.mode == "retrieval_only"`` (A2): the top retrieved skill, no LLM call.
- Up to ``settings.full_bank_max`` skills all go to the LLM; a larger bank sends the
  ``SkillIndex`` shortlist (tf-idf top-K union embedding top-K, K = ``settings.shortlist_k``).
- The LLM answers ``{"skill_id": ...}`` constrained to the candidates plus NONE. A garbled or
  failed reply routes to NONE with the error in ``reason`` and ``error`` (which the caller
  records as evidence); ``route`` never raises for LLM trouble, and ``replies`` keeps every
  reply, failed attempts too, for cost accounting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ratchet_ray.settings.schema import RoleLimits, RoleSettings, RouterSettings
from ratchet_ray.llm.base import Embedder, LLMClient, Reply
from ratchet_ray.llm.structured import ask_structured
from ratchet_ray.roles.router_prompt import router_choice_model, router_messages
from ratchet_ray.roles.retrieval import SkillIndex
from ratchet_ray.types import NONE_SKILL, Skill, SkillStatus, Task

DEFAULT_LIMITS = RoleSettings().router
ROUTABLE = (SkillStatus.ACTIVE, SkillStatus.CANDIDATE)  # never DEPRECATED


@dataclass
class RouteDecision:
    skill_id: str
    replies: list[Reply] = field(default_factory=list)
    reason: str = ""
    error: str = ""
    """Why a failed or unusable LLM reply fell back to NONE ("" when the router chose); the
    caller records it (a failed ``llm_call`` row, the capsule's trace)."""


class Router:
    def __init__(self, llm: LLMClient | None, embedder: Embedder | None, settings: RouterSettings,
                 limits: RoleLimits | None = None, *,
                 templates: Mapping[str, str] | None = None):
        self.llm = llm
        self.templates = templates
        self.embedder = embedder
        self.settings = settings
        self.limits = limits or DEFAULT_LIMITS

    def _index(self, active: Sequence[Skill], index: SkillIndex | None) -> SkillIndex:
        if index is not None:
            return index
        if self.embedder is None:
            raise ValueError("Router needs an embedder to shortlist a bank of "
                             f"{len(active)} skills; pass one or a prebuilt SkillIndex")
        return SkillIndex.build(active, self.embedder)

    def candidates(self, task: Task, active: Sequence[Skill],
                   index: SkillIndex | None = None) -> list[Skill]:
        """The skills the LLM chooses among: the whole bank when small, else the shortlist."""
        if len(active) <= self.settings.full_bank_max:
            return list(active)
        by_id = {s.id: s for s in active}
        shortlist = self._index(active, index).query(task.prompt, self.settings.shortlist_k)
        # An index built for an older snapshot may name skills retired since: skip them.
        return [by_id[i] for i in shortlist if i in by_id]

    def route(self, task: Task, active_skills: Sequence[Skill],
              index: SkillIndex | None = None, *, seed: int | None = None) -> RouteDecision:
        active = [s for s in active_skills if s.status in ROUTABLE]
        if not self.settings.inject:
            return RouteDecision(NONE_SKILL, reason="injection disabled (A1)")
        if not active:
            return RouteDecision(NONE_SKILL, reason="no active skills")
        if self.settings.mode == "retrieval_only":
            by_id = {s.id for s in active}
            ranked = [i for i in self._index(active, index).query(task.prompt, 1) if i in by_id]
            if not ranked:
                return RouteDecision(NONE_SKILL, reason="retrieval-only: nothing retrieved")
            return RouteDecision(ranked[0], reason="retrieval-only top-1 (A2)")
        candidates = self.candidates(task, active, index)
        if not candidates:
            return RouteDecision(NONE_SKILL, reason="empty shortlist")
        return self._ask_llm(task, candidates, shortlisted=len(candidates) < len(active),
                             seed=seed)

    def _ask_llm(self, task: Task, candidates: list[Skill], shortlisted: bool,
                 seed: int | None = None) -> RouteDecision:
        if self.llm is None:
            raise ValueError("Router in mode 'llm' needs an LLM client")
        scope = f"{'shortlist' if shortlisted else 'bank'} of {len(candidates)}"
        schema = router_choice_model([s.id for s in candidates])
        result = ask_structured(self.llm, router_messages(task, candidates,
                                                          templates=self.templates),
                                schema, max_tokens=self.limits.max_tokens,
                                temperature=self.limits.temperature, seed=seed)
        if result.value is None:
            what = "router LLM failed" if result.backend_failed else "garbled router reply"
            reason = f"{what} -> NONE ({scope}): {result.error}"
            return RouteDecision(NONE_SKILL, result.replies, reason, error=reason)
        return RouteDecision(result.value.skill_id, list(result.replies), f"llm pick from {scope}")
