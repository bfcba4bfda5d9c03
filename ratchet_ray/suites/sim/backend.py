"""The ``sim`` LLM backend's clients, built from a run's world: ``llm.registry`` imports this
module by ``SimWorld.backend_module`` when ``llm.backend`` or ``llm.embedder`` is ``sim``.
"""

from __future__ import annotations

from ratchet_ray.suites.sim.embedder import SimEmbedder
from ratchet_ray.suites.sim.llm import SimLLM
from ratchet_ray.suites.sim.settings import SimWorld
from ratchet_ray.suites.sim.world import World


def make_llm(world: SimWorld) -> SimLLM:
    return SimLLM(world)


def make_embedder(world: SimWorld) -> SimEmbedder:
    return SimEmbedder()


def make_world(world: SimWorld) -> World:
    """The world itself (the truth report rebuilds it from a run's config)."""
    return World(world)
