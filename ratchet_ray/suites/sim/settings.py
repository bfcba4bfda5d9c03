"""Settings of the simulated world (the ``sim`` config section) and the world handle the ``sim``
LLM backend receives (``llm.world``: these settings plus the run seed). Each number shapes the
world or the simulated LLM's answers; the governance never reads them (it sees only prompts,
replies, embeddings and grades).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

_STRICT = ConfigDict(extra="forbid", validate_assignment=True)

# The world before the calibration (issue 40): every mechanism below the ``world`` field off and
# the older prior. ``sim.world: legacy`` fills any setting not given explicitly from here.
LEGACY_WORLD: dict[str, Any] = {
    "n_types": 8, "base_alpha": 2.0, "base_beta": 5.0, "p_helpful": 0.5, "p_neutral": 0.2,
    "p_harmful": 0.2, "p_off_target": 0.1, "helpful_effect": 0.35, "effect_spread": 0.4,
    "route_hard_bias": 0.0, "route_easy_p0": None, "misapply_cost": 0.0, "surface_share": 0.0,
    "phrase_share": 0.0, "submodes": 1, "cross_submode": 1.0, "impurity_cost": 0.0,
    "idea_share": 0.0, "draft_diversity": 1.0, "redraft_helpful_drop": 0.0,
    "route_preference": 0.0, "route_accuracy": 0.85, "route_noise": 0.05, "train_lift": 1.0,
}


class SimSettings(BaseModel):
    """The world (tasks, failure types, skill-effect prior) and the LLM's noise."""

    model_config = _STRICT
    world: Literal["calibrated", "legacy"] = "calibrated"
    """'calibrated' (the default: the mechanisms below, fitted to the paper's MBPP+ Default row
    only, docs/ablations.md) or 'legacy' (the world before issue 40: misapplied guidance free,
    no shared words, drafts and routing independent of the bank). The preset fills every
    setting not given explicitly."""
    default_world: ClassVar[str] = "calibrated"
    """The preset a suite's section starts from when ``world`` is not given."""
    n_tasks: int = Field(default=100, ge=2)
    """Tasks in the world; a run draws ``n_train + n_eval`` of them."""
    n_types: int = Field(default=16, ge=1, le=16)
    """K latent failure types (at most 16: the built-in lexicon has 16 themes)."""
    phrases_per_type: int = Field(default=6, ge=1, le=20)
    """Paraphrased pattern phrases per type (canonicalisation and the cover guard merge them)."""
    base_alpha: float = Field(default=0.12, gt=0)
    base_beta: float = Field(default=0.34, gt=0)
    """A task's base solve probability p0 ~ Beta(base_alpha, base_beta): mean 0.26 (the paper's
    round-0 0.258), U-shaped (about 2 tasks in 3 have p0 < 0.3, mean 0.035); legacy 2 / 5."""
    p_helpful: float = Field(default=0.75, ge=0)
    p_neutral: float = Field(default=0.1, ge=0)
    p_harmful: float = Field(default=0.1, ge=0)
    p_off_target: float = Field(default=0.05, ge=0)
    """Prior over a new skill's true effect class (normalised; at least one must be > 0)."""
    helpful_effect: float = Field(default=1.0, ge=0, le=1)
    """A helpful skill adds about this to p on its target type and sub-mode (x U(1 -
    effect_spread, 1 + effect_spread))."""
    effect_spread: float = Field(default=0.2, ge=0, le=1)
    """Half-width of a skill's effect multiplier around 1 (legacy 0.4: U(0.6, 1.4))."""
    harmful_effect: float = Field(default=0.25, ge=0, le=1)
    """A harmful skill subtracts about this on its target type (x U(0.6, 1.4))."""
    off_target_harm: float = Field(default=0.15, ge=0, le=1)
    """An off-target skill helps its type like a helpful one and subtracts this on every other."""
    misapply_cost: float = Field(default=0.08, ge=0, le=1)
    """Misapplied guidance: any skill injected on a task of another type subtracts this (an
    off-target skill subtracts it on top of ``off_target_harm``). Legacy 0."""
    surface_share: float = Field(default=0.45, ge=0, le=1)
    """Probability that each theme word a task's prompt names is its surface partner's (types
    2i and 2i+1): the surface says less about the latent type than the Router's reading (A2
    retrieves on surface). Legacy 0."""
    phrase_share: float = Field(default=0.2, ge=0, le=1)
    """Probability that a pattern phrase swaps one of its three theme words for a word of the
    type's partner: canonicalisation can then merge the two types' clusters. Legacy 0."""
    submodes: int = Field(default=2, ge=1, le=3)
    """Sub-modes per failure type: a task has one, each pattern phrase belongs to one, and a
    skill is written for the sub-mode most of its cluster's examples show. Legacy 1."""
    cross_submode: float = Field(default=0.7, ge=0, le=1)
    """Share of a skill's target-type effect on tasks of the type's other sub-modes."""
    impurity_cost: float = Field(default=0.6, ge=0, le=1)
    """A draft's effect is scaled by 1 - impurity_cost x (1 - purity), purity the share of its
    cluster's examples of the target type and sub-mode (A5). Legacy 0."""
    idea_share: float = Field(default=0.3, ge=0, le=1)
    """Probability that a skill's effect class and size are its theme's idea (one draw per
    type, sub-mode and guide) instead of a fresh draw: redundant skills are not independent
    lottery tickets (A6). Legacy 0."""
    draft_diversity: float = Field(default=0.08, ge=0, le=1)
    """Probability that a draft picks fresh aspect words instead of its theme's stock ones,
    with which a re-draft lands on the theme's earlier skill (dedup, deprecated ones too): a
    retired theme is hard to write again (A4). Legacy 1 (re-synthesis free)."""
    redraft_helpful_drop: float = Field(default=0.6, ge=0, le=1)
    """A draft re-written because dedup refused the theme's stock wording (its earlier skill,
    ACTIVE or deprecated, holds the first idea) moves this share of the helpful prior mass to
    neutral. Legacy 0."""
    route_preference: float = Field(default=8.0, ge=0)
    """Among the offered skills aimed at the task's type the Router picks with weights
    exp(route_preference x true effect on the task). Legacy 0 (uniform)."""
    train_lift: float = Field(default=0.75, ge=0, le=1)
    """The share of a skill's positive effect that reaches a train task (eval tasks get all;
    harm reaches both in full): skills are written and scored on the residue the model keeps
    failing, which guidance reaches less often. A hypothesis, not a fit (the eval-only Default
    row cannot identify it). 1.0: no asymmetry (legacy)."""
    no_guide_helpful_drop: float = Field(default=0.5, ge=0, le=1)
    """Without an authoring guide in the prompt (ablation A3) this share of the helpful prior
    mass moves to neutral."""
    route_accuracy: float = Field(default=0.92, ge=0, le=1)
    """Probability that the Router picks a skill aimed at the task's type when one is offered."""
    route_noise: float = Field(default=0.03, ge=0, le=1)
    """Probability that the Router picks a uniformly random offered skill instead."""
    route_hard_bias: float = Field(default=0.95, ge=0, le=1)
    """Share of the easier tasks (p0 >= ``route_easy_p0``) the Router sends to NONE whatever
    the skills: 1.0 routes only hard tasks (the confound of c-hat)."""
    route_easy_p0: float | None = Field(default=0.3, ge=0, le=1)
    """Where the easier tasks start for ``route_hard_bias``: None (legacy) the median p0; a
    value: tasks that usually pass without help (no model asks for guidance there)."""
    pattern_noise: float = Field(default=0.15, ge=0, le=1)
    """Probability that the Critic names a phrase of a wrong (random other) type."""
    attribution_noise: float = Field(default=0.2, ge=0, le=1)
    """Probability that the Critic's attribution label is uniformly random."""
    refine_gain: float = Field(default=0.1, ge=0, le=1)
    """A revision (A10) shifts its parent's target effect by N(refine_gain * (2 q - 1),
    refine_noise), q the share of its failures of the target type."""
    refine_noise: float = Field(default=0.1, ge=0, le=1)
    """Standard deviation of a revision's shift (a revision can help or harm)."""

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        """Fill the settings not given from the chosen world's preset (``LEGACY_WORLD``)."""
        if not isinstance(data, dict):
            return data
        world = data.get("world", cls.default_world)
        data = {**data, "world": world}
        return {**LEGACY_WORLD, **data} if world == "legacy" else data

    @model_validator(mode="after")
    def _prior_has_mass(self) -> "SimSettings":
        if self.p_helpful + self.p_neutral + self.p_harmful + self.p_off_target <= 0:
            raise ValueError("sim: p_helpful + p_neutral + p_harmful + p_off_target must be > 0")
        if self.route_accuracy + self.route_noise > 1:
            raise ValueError("sim: route_accuracy + route_noise must be at most 1")
        return self


class SimWorld(SimSettings):
    """What the ``sim`` backend needs to rebuild the world: the settings and the run seed."""

    seed: int = 42
    train_tasks: tuple[str, ...] = ()
    """The run's train split, which ``train_lift`` applies to (``configure_sim`` fills it when
    ``train_lift`` < 1). Empty: every task is held out."""
    backend_module: ClassVar[str] = "ratchet_ray.suites.sim.backend"
    """The module whose ``make_llm`` / ``make_embedder`` / ``make_world`` build the backend's
    clients, imported by name (``llm.registry``) so neither that layer nor this leaf module
    imports the suite's code."""

    @classmethod
    def of(cls, settings: SimSettings, seed: int,
           train_tasks: tuple[str, ...] = ()) -> "SimWorld":
        """The world of a run: its settings, seed and (for ``train_lift``) train split."""
        return cls(seed=seed, train_tasks=tuple(train_tasks), **settings.model_dump())
