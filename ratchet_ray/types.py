"""The data model shared by every component: skills, meta-skills, tasks and evidence rows.

Contracts:
- ``Skill`` mirrors the paper's skill YAML (``docs/running.md``). ``intent`` and ``description`` are
  required; ``signals_match``, ``tags`` and ``preconditions`` default to empty lists; unknown
  fields and unknown status values are rejected (pydantic ``extra="forbid"``).
- ``Capsule`` and ``Verdict`` are evidence rows: append-only, one per (task, skill, attempt) and one
  per train-failure capsule respectively. Their field names are the Parquet column names.
- ``NONE_SKILL`` is the skill id recorded when the Router injects nothing.
- The field descriptions of ``Skill`` and ``Guidance`` are the one skill contract: the
  Synthesizer's structured-output schema and the meta-skill's schema lock are both generated
  from them (``ratchet_ray.bank.skill_contract``).
"""

from __future__ import annotations

import enum
import hashlib
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

NONE_SKILL = "NONE"
Split = Literal["train", "eval", "baseline"]
Attribution = Literal["helped", "hurt", "neutral", "inapplicable"]
_ID_PATTERN = r"^[a-z0-9][a-z0-9_\-]{0,79}$"


class SkillStatus(str, enum.Enum):
    ACTIVE = "active"
    DEPRECATED = "deprecated"
    CANDIDATE = "candidate"


class Guidance(BaseModel):
    """The natural-language payload injected into the Solver's prompt."""

    model_config = ConfigDict(extra="forbid")
    applies_when: str = Field(min_length=1, description=(
        "the observable feature of a task statement that triggers this skill"))
    key_insight: str = Field(min_length=1, description=(
        "the one idea that avoids the failure, stated so it transfers to new tasks"))
    common_pitfalls: list[str] = Field(default_factory=list, description=(
        "concrete mistakes seen in the failures, one short sentence each"))
    verify_before_returning: str = Field(default="", description=(
        "one concrete check the solver can do mentally before answering"))


class Skill(BaseModel):
    """A natural-language skill (never executable code)."""

    model_config = ConfigDict(extra="forbid", use_enum_values=False)
    id: str = Field(pattern=_ID_PATTERN, description=(
        "new, unique snake_case name of the idea (lowercase letters, digits, _)"))
    name: str = Field(min_length=1, description="the same as id")
    version: str = "0.1.0"
    description: str = Field(min_length=1, description=(
        "one line: which tasks this skill applies to"))
    intent: str = Field(min_length=1, description=(
        "one imperative sentence a task statement would match"))
    signals_match: list[str] = Field(default_factory=list, description=(
        "short lowercase cue words that appear in matching task statements"))
    tags: list[str] = Field(default_factory=list, description="short lowercase topic labels")
    preconditions: list[str] = Field(default_factory=list, description=(
        "what must hold before the skill applies; often empty"))
    status: SkillStatus = SkillStatus.ACTIVE
    author: str = "synthesized"
    do_not_retire: bool = False
    lineage: str | None = Field(default=None, pattern=_ID_PATTERN)
    """Set by the bank on a refined version (``synth.refine``): the id of its lineage's first
    version. None: the skill is its lineage's first version (its own id names the lineage)."""
    lineage_version: int = Field(default=1, ge=1)
    """1 for a first version; a refinement of version n is version n + 1 of the same lineage."""
    guidance: Guidance

    @field_validator("signals_match", "tags", "preconditions", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value

    @property
    def is_active(self) -> bool:
        return self.status is SkillStatus.ACTIVE

    @property
    def lineage_id(self) -> str:
        """The lineage this skill is a version of (its own id for a first version)."""
        return self.lineage or self.id

    def as_revision_of(self, parent: "Skill") -> "Skill":
        """This skill as the next version of ``parent``'s lineage (``SkillBank.refine``)."""
        return self.model_copy(update={"lineage": parent.lineage_id,
                                       "lineage_version": parent.lineage_version + 1})

    def retrieval_text(self) -> str:
        """The surface the Router scores: intent, name, description and signals (empties dropped)."""
        parts = [self.intent, self.name.replace("_", " "), self.description, *self.signals_match]
        return " \n".join(p for p in parts if p)

    def guidance_text(self) -> str:
        """The 'Guidance' block a solver prompt injects (every suite's solver renders it alike)."""
        g = self.guidance
        lines = [f"Guidance (skill `{self.id}`):", f"- Applies when: {g.applies_when}",
                 f"- Key insight: {g.key_insight}"]
        if g.common_pitfalls:
            lines.append("- Pitfalls: " + "; ".join(g.common_pitfalls))
        if g.verify_before_returning:
            lines.append(f"- Verify before returning: {g.verify_before_returning}")
        return "\n".join(lines)


# What a skill's author writes, and what the loop sets itself.
AUTHORED_FIELDS = ("id", "name", "description", "intent", "signals_match", "tags",
                   "preconditions", "guidance")
SYSTEM_FIELDS = ("version", "status", "author", "do_not_retire")
LINEAGE_FIELDS = ("lineage", "lineage_version")
"""Set by the bank when it refines a skill (``SkillBank.refine``); written to a skill file only
when not the default, so a bank without refinements has no such field in its files."""


class MetaSkill(BaseModel):
    """One authoring prior per suite (Markdown: schema lock + Do/Don't list)."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=_ID_PATTERN)
    suite: str
    version: str = "0.1.0"
    status: SkillStatus = SkillStatus.ACTIVE
    body: str = Field(min_length=1)
    created_round: int = -1


class Task(BaseModel):
    """One benchmark task. ``payload`` holds suite-specific fields (tests, repo, base commit...)."""

    model_config = ConfigDict(extra="forbid")
    task_id: str
    suite: str
    prompt: str
    tags: list[str] = Field(default_factory=list)
    payload: dict[str, Any] = Field(default_factory=dict)


class GradeResult(BaseModel):
    """What a Grader returns for one solver output. ``infra_failure`` rows still count in the
    denominator but are never fed to the Critic."""

    passed: bool
    trace: str = ""
    exit_status: str = "ok"
    infra_failure: bool = False
    duration_s: float = 0.0


def capsule_id(run_id: str, round_: int, split: str, task_id: str, attempt: int = 0) -> str:
    """Deterministic capsule key: a resumed run recomputes the same id and skips finished work."""
    raw = f"{run_id}|{round_}|{split}|{task_id}|{attempt}"
    return hashlib.sha1(raw.encode()).hexdigest()[:16]


class Capsule(BaseModel):
    """One attempt at one task under one routing decision. Field names are Parquet columns."""

    model_config = ConfigDict(extra="forbid")
    capsule_id: str
    run_id: str
    arm: str = "default"
    seed: int = 42
    round: int
    split: Split
    task_id: str
    attempt: int = 0
    skill_id: str = NONE_SKILL
    passed: bool
    exit_status: str = "ok"
    infra_failure: bool = False
    output: str = ""
    grader_trace: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    created_at: float = Field(default_factory=time.time)
    impossible: bool = False
    """An impossible twin's grade (``governance.cheat_probe``): the attempt graded against
    expectations no correct answer meets, so a pass is cheating by construction. Never in
    pass@1, the Critic's input or a skill's contribution."""


class Verdict(BaseModel):
    """The Critic's judgement of one train-failure capsule."""

    model_config = ConfigDict(extra="forbid")
    capsule_id: str
    run_id: str
    round: int
    task_id: str
    skill_id: str = NONE_SKILL
    attribution: Attribution
    pattern: str = Field(min_length=1, max_length=200)
    confidence: float = Field(ge=0.0, le=1.0)
    rationale: str = ""
    created_at: float = Field(default_factory=time.time)


class BenchResult(BaseModel):
    """Pass@1 of one split in one round (infrastructure failures stay in the denominator)."""

    split: Split
    round: int
    total: int
    resolved: int
    infra_failures: int = 0

    @property
    def pass_at_1(self) -> float:
        return self.resolved / self.total if self.total else 0.0


class RoundSummary(BaseModel):
    """What one round did; written as ``round_NN/summary.json`` and as a ``round`` evidence row."""

    round: int
    eval: BenchResult | None = None
    train: BenchResult | None = None
    verdicts: int = 0
    skills_created: list[str] = Field(default_factory=list)
    skills_evicted: list[str] = Field(default_factory=list)
    skills_retired: list[str] = Field(default_factory=list)
    skills_skipped: list[str] = Field(default_factory=list)
    metaskill_created: str | None = None
    rollback_fired: bool = False
    restored_round: int | None = None
    active_skills: int = 0
    deprecated_skills: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0
    failed_steps: list[str] = Field(default_factory=list)
    suite_report: dict[str, Any] = Field(default_factory=dict)
    """What the run's suite reports of the round (its ``round_report`` hook; e.g. SWE-bench's
    per-node image cache). In summary.json only, not in the evidence's ``round`` rows."""
