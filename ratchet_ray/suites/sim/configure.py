"""The ``sim`` suite's ``configure`` rule (kept out of ``settings``, a leaf module that imports
no project code: this rule needs the suite's tasks and the split)."""

from __future__ import annotations

from typing import Any

from ratchet_ray.suites.base import split_tasks
from ratchet_ray.suites.sim import SimSuite
from ratchet_ray.suites.sim.settings import SimSettings, SimWorld


def configure_sim(config: Any, settings: SimSettings) -> None:
    """The ``sim`` suite's rules for a LoopConfig (registered as its ``configure``): it needs the
    ``sim`` LLM backend, which answers from the world of THIS run (its settings and its seed), so
    ``llm.world`` is derived here each time the config is resolved (``resolve_config``)."""
    if config.llm.backend != "sim":
        raise ValueError(f"suite 'sim' with llm.backend {config.llm.backend!r}: the sim backend "
                         "only answers the sim suite and the sim suite needs it; use "
                         "configs/sim.yaml (llm.backend: sim)")
    train: tuple[str, ...] = ()
    if settings.train_lift < 1:  # the asymmetry needs to know which tasks are the train split
        train = tuple(t.task_id for t in split_tasks(SimSuite().load_tasks(config), config)[0])
    world = SimWorld.of(settings, config.seed, train)
    if config.llm.world != world:
        config.llm.world = world
