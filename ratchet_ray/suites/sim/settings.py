"""Settings of the simulated world (the ``sim`` section of the config) and the world handle the
``sim`` LLM backend receives (``llm.world``: these settings plus the run seed).

Every number here shapes the world or how the simulated LLM answers; none of them is read by the
governance (router, bank, curator, synthesis, rollback), which only ever sees prompts, replies,
embeddings and grades.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

_STRICT = ConfigDict(extra="forbid", validate_assignment=True)


class SimSettings(BaseModel):
    """The world (tasks, failure types, skill-effect prior) and the LLM's noise."""

    model_config = _STRICT
    n_tasks: int = Field(default=100, ge=2)
    """Tasks in the world; a run draws ``n_train + n_eval`` of them."""
    n_types: int = Field(default=8, ge=1, le=16)
    """K latent failure types (at most 16: the built-in lexicon has 16 themes)."""
    phrases_per_type: int = Field(default=6, ge=1, le=20)
    """Paraphrased pattern phrases per type (canonicalisation and the cover guard merge them)."""
    base_alpha: float = Field(default=2.0, gt=0)
    base_beta: float = Field(default=5.0, gt=0)
    """A task's base solve probability p0 ~ Beta(base_alpha, base_beta) (mean 0.29 by default,
    near the paper's round-0 0.26)."""
    p_helpful: float = Field(default=0.5, ge=0)
    p_neutral: float = Field(default=0.2, ge=0)
    p_harmful: float = Field(default=0.2, ge=0)
    p_off_target: float = Field(default=0.1, ge=0)
    """Prior over a new skill's true effect class (normalised; at least one must be > 0)."""
    helpful_effect: float = Field(default=0.35, ge=0, le=1)
    """A helpful skill adds about this to p on tasks of its target type (x U(0.6, 1.4))."""
    harmful_effect: float = Field(default=0.25, ge=0, le=1)
    """A harmful skill subtracts about this on its target type (x U(0.6, 1.4))."""
    off_target_harm: float = Field(default=0.15, ge=0, le=1)
    """An off-target skill helps its type like a helpful one and subtracts this on every other."""
    no_guide_helpful_drop: float = Field(default=0.5, ge=0, le=1)
    """Without an authoring guide in the prompt (ablation A3) this share of the helpful prior
    mass moves to neutral."""
    route_accuracy: float = Field(default=0.85, ge=0, le=1)
    """Probability that the Router picks a skill aimed at the task's type when one is offered."""
    route_noise: float = Field(default=0.05, ge=0, le=1)
    """Probability that the Router picks a uniformly random offered skill instead."""
    route_hard_bias: float = Field(default=0.0, ge=0, le=1)
    """Share of the easier half of the tasks (p0 at or above the world's median) the Router
    sends to NONE regardless of the skills: 1.0 routes only hard tasks (the confound of c-hat)."""
    pattern_noise: float = Field(default=0.15, ge=0, le=1)
    """Probability that the Critic names a phrase of a wrong (random other) type."""
    attribution_noise: float = Field(default=0.2, ge=0, le=1)
    """Probability that the Critic's attribution label is uniformly random."""
    refine_gain: float = Field(default=0.1, ge=0, le=1)
    """A revision (``synth.refine``, A10) shifts its parent's effect on the target type by
    N(refine_gain * (2 q - 1), refine_noise), q the share of the failures it was built from
    that were of the target type: + refine_gain on average from the skill's own failures."""
    refine_noise: float = Field(default=0.1, ge=0, le=1)
    """Standard deviation of a revision's shift (a revision can help or harm)."""

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
    backend_module: ClassVar[str] = "ratchet_ray.suites.sim.backend"
    """The module whose ``make_llm(world)`` / ``make_embedder(world)`` build the ``sim``
    backend's clients: ``llm.registry`` imports it by this name, so neither the LLM layer nor
    this leaf module imports the suite's code."""

    @classmethod
    def of(cls, settings: SimSettings, seed: int) -> "SimWorld":
        """The world of a run: its ``sim`` settings and its seed."""
        return cls(seed=seed, **settings.model_dump())


def configure_sim(config: Any, settings: SimSettings) -> None:
    """The ``sim`` suite's rules for a LoopConfig (registered as its ``configure``): it needs the
    ``sim`` LLM backend, which answers from the world of THIS run (its settings and its seed), so
    ``llm.world`` is derived here each time the config is resolved (``resolve_config``)."""
    if config.llm.backend != "sim":
        raise ValueError(f"suite 'sim' with llm.backend {config.llm.backend!r}: the sim backend "
                         "only answers the sim suite and the sim suite needs it; use "
                         "configs/sim.yaml (llm.backend: sim)")
    world = SimWorld.of(settings, config.seed)
    if config.llm.world != world:
        config.llm.world = world
