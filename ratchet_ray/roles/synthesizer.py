"""The Synthesizer: turn clustered failure verdicts into new ACTIVE skills.

``Synthesizer(...).run(verdicts, active_skills, metaskill, add_skill, round_, ...)``:
- ``verdicts`` enter clustering in an order the run's ``seed`` decides per round
  (``seeding.seeded_order``), never in storage order; ``metaskill`` None (A3): the prompt
  carries only ``skill_contract``'s bare schema; ``tasks`` and ``capsules`` add the task text,
  failed output and grader trace to examples; ``known_ids`` (deprecated too) keep ids unique.
- ``add_skill(skill, *, sources)`` is ``SkillBank.add`` (``bank_adder``); ``sources``, the
  cluster's size, goes on the ``added`` event. With ``synth.refine`` (A10) and ``refine_skill``
  (``SkillBank.refine``) the skills ``refiner.refine_targets`` picks are revised first; their
  verdicts are not clustered again, and the cover guard sees the revision, not its parent.
- Steps: ``preprocess.cluster_verdicts`` -> ``cover_guard`` -> for the first
  ``max_new_per_round`` kept clusters: draft (``synth.draft_mode``: one whole-skill call or one
  per field), validate into a ``Skill``, ``add_skill``, re-prompting on a refusal
  (``roles.drafts``). A base model's field past its bound is cut at a clause boundary
  (``fit_field``); a fieldwise id is the cluster's pattern (first 6 words, slugified) on a
  base-model backend and wherever the model cannot write one.
- Never raises for LLM trouble (the cluster goes to ``failed`` as ``"<pattern>: <reason>"``);
  errors from ``add_skill`` propagate. ``synth.enabled`` False does nothing.

``SynthesizerWorker`` (behind the Synthesizer actor) takes a ``SkillBank`` (or anything with its
``add`` and, for A10, ``refine``), drops ``metaskill`` under A3, and with ``synth.leakage_guard``
passes every add and revision through the guard first.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Mapping, Sequence

from pydantic import ValidationError

from ratchet_ray.settings.schema import LoopConfig, RoleLimits, RoleSettings, SynthSettings
from ratchet_ray.llm.base import Embedder, LLMClient, LLMError, Message, Reply
from ratchet_ray.llm.registry import LazyEmbedder, make_llm
from ratchet_ray.llm.structured import ask_structured
from ratchet_ray.roles.drafts import (DraftError, RepromptNotes, draft_to_skill,
                                      reprompt_until_added, slugify)
from ratchet_ray.roles.synthesizer_prompt import (FIELD_ORDER, FIELD_STOPS, assemble_draft,
                                                   field_items, field_max_tokens, field_messages,
                                                   field_model, field_opening, fit_field,
                                                   pattern_core, synth_messages)
from ratchet_ray.roles.metasynth import MetaRefresh, refresh
from ratchet_ray.roles.prompt_base import supports_prefill
from ratchet_ray.roles.refiner import Reviser, refine_targets
from ratchet_ray.seeding import derive_seed, sampling_kwargs, seeded_order
from ratchet_ray.bank.skill_contract import SkillDraft
from ratchet_ray.synthesis.leak_sources import guarded_adder, run_leak_index
from ratchet_ray.synthesis.preprocess import cluster_verdicts, cover_guard
from ratchet_ray.types import Capsule, MetaSkill, Skill, Task, Verdict

EXAMPLES_PER_CLUSTER = 3
log = logging.getLogger(__name__)


@dataclass
class SynthOutcome:
    created: list[str] = field(default_factory=list)
    skipped_clusters: list[str] = field(default_factory=list)  # covered by an ACTIVE skill
    duplicates: list[str] = field(default_factory=list)  # bank ids a draft duplicated
    evicted: list[str] = field(default_factory=list)  # evicted by the bank to make room
    failed: list[str] = field(default_factory=list)  # "<pattern>: <reason>"
    deferred: list[str] = field(default_factory=list)  # kept clusters beyond max_new_per_round
    leaked: list[str] = field(default_factory=list)  # "<id>: <spans>" refused by the leakage guard
    refined: list[str] = field(default_factory=list)  # skills deprecated by their revision (A10)
    replies: list[Reply] = field(default_factory=list)


def _verdict_order_key(verdict: Verdict) -> tuple:
    """What a verdict says, in a run-independent order (ties fall to the capsule id)."""
    return (verdict.round, verdict.task_id, verdict.skill_id, verdict.pattern,
            verdict.attribution, verdict.confidence, verdict.rationale, verdict.capsule_id)


LIST_FIELDS = frozenset({"common_pitfalls", "signals_match"})


def _pattern_id(label: str) -> str:
    """A skill id from the cluster's pattern: its first 6 words, slugified."""
    return "_".join(slugify(pattern_core(label)).split("_")[:6])


class Synthesizer(Reviser):
    def __init__(self, llm: LLMClient, embedder: Embedder, synth_settings: SynthSettings,
                 suite: str, *, tasks: Mapping[str, Task] | None = None, seed: int = 42,
                 limits: RoleLimits | None = None,
                 templates: Mapping[str, str] | None = None):
        self.llm = llm
        self.templates = templates  # the run's prompt overrides (``prompts.texts``)
        self.embedder = embedder
        self.settings = synth_settings
        self.suite = suite
        self.tasks = dict(tasks or {})
        self.seed = seed
        self.limits = limits or RoleSettings().synth
        # Base-model backends continue a trailing assistant message: the draft opens there.
        self.prefill = supports_prefill(llm)
        mode = synth_settings.draft_mode
        self.fieldwise = mode == "fieldwise" or (mode == "auto" and self.prefill)

    def _example(self, verdict: Verdict, capsules: Mapping[str, Capsule]) -> str:
        lines = []
        task = self.tasks.get(verdict.task_id)
        if task is not None:
            lines.append("Task: " + task.prompt.strip().strip('"').strip()[:600])
        capsule = capsules.get(verdict.capsule_id)
        if capsule is not None:
            lines.append("Failed output:\n" + capsule.output.strip()[:700])
            lines.append("Grader: " + capsule.grader_trace.strip()[-400:])
        lines.append(f"Critic ({verdict.attribution}): {verdict.rationale.strip()[:400]}")
        return "\n".join(lines)

    def run(self, verdicts: Sequence[Verdict], active_skills: Sequence[Skill],
            metaskill: MetaSkill | None, add_skill: Callable[[Skill], Any], round_: int, *,
            capsules: Mapping[str, Capsule] | None = None,
            known_ids: Collection[str] = (),
            refine_skill: Callable[[Skill, str], Any] | None = None) -> SynthOutcome:
        outcome = SynthOutcome()
        if not self.settings.enabled or not verdicts:
            return outcome
        # The sort key names what the verdict is about, never its capsule id: that hashes the
        # run id (a timestamp), so two runs of one seed would otherwise cluster in two orders.
        ordered = seeded_order(verdicts, _verdict_order_key, self.seed, round_, "synth")
        taken = set(known_ids) | {s.id for s in active_skills}
        if self.settings.refine and refine_skill is not None:
            active_skills, ordered = self._refine_all(ordered, list(active_skills), metaskill,
                                                      refine_skill, taken, outcome, round_,
                                                      capsules or {})
        clusters = cluster_verdicts(ordered, self.embedder, self.settings)
        kept, skipped = cover_guard(clusters, list(active_skills), self.embedder,
                                    self.settings.cover_threshold,
                                    enabled=self.settings.cover_guard)
        outcome.skipped_clusters = [c.pattern for c in skipped]
        budget = self.settings.max_new_per_round
        outcome.deferred = [c.pattern for c in kept[budget:]]
        existing = list(active_skills)
        for cluster in kept[:budget]:
            # Most confident verdicts first: they are the clearest examples of the pattern.
            chosen = sorted(cluster.verdicts, key=lambda v: -v.confidence)[:EXAMPLES_PER_CLUSTER]
            examples = [self._example(v, capsules or {}) for v in chosen]
            skill = self._author(cluster.pattern, len(cluster.verdicts), examples, existing,
                                 metaskill, add_skill, taken, outcome, round_)
            if skill is not None:
                taken.add(skill.id)
                existing.append(skill)
        log.info("round %d synth: %d clusters, created %s, skipped %d, failed %d, deferred %d",
                 round_, len(clusters), outcome.created, len(outcome.skipped_clusters),
                 len(outcome.failed), len(outcome.deferred))
        return outcome

    def _refine_all(self, ordered: list[Verdict], active: list[Skill],
                    metaskill: MetaSkill | None, refine_skill: Callable[[Skill, str], Any],
                    taken: set[str], outcome: SynthOutcome, round_: int,
                    capsules: Mapping[str, Capsule]) -> tuple[list[Skill], list[Verdict]]:
        """Revise this round's targets; the ACTIVE skills after them and the verdicts left."""
        consumed: set[str] = set()
        for target in refine_targets(ordered, active, self.settings):
            revision = self._revise(target, metaskill, refine_skill, taken, outcome, round_,
                                    capsules)
            if revision is None:
                continue
            taken.add(revision.id)
            consumed |= {v.capsule_id for v in target.verdicts}
            active = [revision if s.id == target.skill.id else s for s in active]
        return active, [v for v in ordered if v.capsule_id not in consumed]

    def _author(self, pattern: str, size: int, examples: list[str], existing: list[Skill],
                metaskill: MetaSkill | None, add_skill: Callable[..., Any],
                taken: set[str], outcome: SynthOutcome, round_: int = 0) -> Skill | None:
        """Draft -> validate -> add, re-prompting on refusals (``roles.drafts``)."""
        label = f"{pattern} (x{size})"

        def draft(attempt: int, feedback: Sequence[str]) -> SkillDraft:
            seed = derive_seed(self.seed, round_, pattern, attempt, "synth")
            return self._draft(label, examples, existing, metaskill, list(feedback), seed,
                               outcome)

        notes = RepromptNotes(
            template=("Your draft repeated the schema lock's placeholder text. "
                      f"Write real guidance about this failure: {pattern}."),
            duplicate=lambda skill, dup: (
                f"Your draft `{skill.id}` duplicates the existing skill `{dup}`. Write a skill "
                "for a different aspect of the failure, with a different id, intent and key "
                "insight."),
            too_long=lambda skill, reason: (
                f"Your draft `{skill.id}` was too long ({reason}). Keep the whole skill under "
                f"{self.settings.max_skill_chars} characters."))
        return reprompt_until_added(pattern, outcome, self.settings.max_reprompts, draft,
                                    lambda d: draft_to_skill(d, taken, self.suite),
                                    lambda skill: add_skill(skill, sources=size), notes, taken)

    def _draft(self, label: str, examples: list[str], existing: list[Skill],
               metaskill: MetaSkill | None, feedback: list[str], seed: int,
               outcome: SynthOutcome) -> SkillDraft:
        """One draft, whole or field by field; its replies go to ``outcome``. Raises
        ``DraftError`` when the LLM fails or a field/whole draft does not validate."""
        limits = self.limits
        if not self.fieldwise:
            messages = synth_messages(self.suite, metaskill, label, examples, existing,
                                      feedback, prefill=self.prefill, templates=self.templates)
            return self._structured(messages, SkillDraft, limits.max_tokens, seed, outcome)
        fields: dict[str, Any] = {}
        for name in FIELD_ORDER:
            messages = field_messages(self.suite, metaskill, label, examples, existing,
                                      feedback, fields, name, templates=self.templates)
            cap, field_seed = field_max_tokens(name, limits.max_tokens), derive_seed(seed, name)
            if name == "id" and self.prefill:  # a base model's own id: 'id_1' (see below)
                fields[name] = _pattern_id(label)
                continue
            opening = field_opening(name, label) if self.prefill else ""
            if opening:
                fields[name] = self._continue(messages, opening, name, cap, field_seed, outcome,
                                              label)
                continue
            try:
                fields[name] = getattr(self._structured(messages, field_model(name), cap,
                                                        field_seed, outcome), name)
            except DraftError as exc:
                if name != "id":
                    raise
                # The id is only a handle: when a model cannot write one (measured: Gemma 270M
                # wrote 'id_1' or ran it into its token cap), the cluster's pattern names it.
                outcome.replies.extend(exc.replies)
                fields[name] = _pattern_id(label)
        try:
            return assemble_draft(fields)
        except ValidationError as exc:
            raise DraftError(f"invalid fieldwise draft: {exc.errors()[:3]}", []) from exc

    def _continue(self, messages: list, opening: str, name: str, max_tokens: int, seed: int,
                  outcome: SynthOutcome, opening_label: str = "") -> Any:
        """A field written as the continuation of ``opening`` up to the line break (or where it
        turns into a numbered list), validated against the field's bounds (``DraftError``
        otherwise); a list field's items are the line's comma-separated parts."""
        try:
            reply = self.llm.complete([*messages, Message("assistant", opening)],
                                      max_tokens=max_tokens, temperature=self.limits.temperature,
                                      stop=list(FIELD_STOPS), **sampling_kwargs(self.llm, seed))
        except LLMError as exc:
            raise DraftError(f"{type(exc).__name__}: {exc}", []) from exc
        outcome.replies.append(reply)
        line = re.sub(r"^\s*1[).]\s*", "", reply.text)  # a list's first number, not its text
        if name in LIST_FIELDS:
            # An empty line (measured: Gemma 270M often ends signals_match at once) falls back
            # to the cluster's pattern: its words are what the failures share.
            value: Any = field_items(name, line) or (
                [pattern_core(opening_label)] if name == "common_pitfalls"
                else field_items(name, ", ".join(w for w in pattern_core(opening_label).split()
                                                 if len(w) > 3)))
        else:
            value = fit_field(name, " ".join((opening + line).split()))
        try:
            return getattr(field_model(name).model_validate({name: value}), name)
        except ValidationError as exc:
            raise DraftError(f"field {name}: {exc.errors()[:1]}", []) from exc

    def _structured(self, messages: list, model: type, max_tokens: int, seed: int,
                    outcome: SynthOutcome) -> Any:
        """The validated reply, its generations recorded in ``outcome``; ``DraftError`` (holding
        them) when there is none."""
        answer = ask_structured(self.llm, messages, model, max_tokens=max_tokens,
                                temperature=self.limits.temperature, seed=seed)
        if answer.value is None:
            raise DraftError(answer.error, answer.replies) from answer.exception
        outcome.replies.extend(answer.replies)
        return answer.value


def bank_adder(bank: Any, round_: int) -> Callable[..., Any]:
    """``add_skill`` for the Synthesizer: ``bank.add(skill, round_=round_, sources=sources)``."""
    return lambda skill, sources=None: bank.add(skill, round_=round_, sources=sources)


class SynthesizerWorker:
    def __init__(self, config: LoopConfig, *, llm: LLMClient | None = None,
                 embedder: Embedder | None = None, tasks: Sequence[Task] = ()):
        self.config = config
        self.llm = llm if llm is not None else make_llm(config.llm)
        self.embedder = LazyEmbedder(config.llm, embedder)
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

        def guarded(submit: Callable[..., Any]) -> Callable[..., Any]:
            if not self.config.synth.leakage_guard:
                return submit
            return guarded_adder(submit, self._leak_index(), self.config.synth.leakage_threshold)

        def refine(skill: Skill, parent_id: str) -> Any:  # a revision passes the guard too
            return guarded(lambda revision: bank.refine(revision, parent_id, round_=round_))(skill)

        add = guarded(bank_adder(bank, round_))
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
