"""The ``sim`` LLM backend's clients, built from a run's world.

``llm.registry`` imports this module by the name the world gives (``SimWorld.backend_module``)
when ``llm.backend`` or ``llm.embedder`` is ``sim``: ``make_llm(world)`` answers from that world
(its settings and run seed), ``make_embedder(world)`` is the world's theme-aware bag of words.
"""

from __future__ import annotations

from ratchet_ray.suites.sim.embedder import SimEmbedder
from ratchet_ray.suites.sim.llm import SimLLM
from ratchet_ray.suites.sim.settings import SimWorld


def make_llm(world: SimWorld) -> SimLLM:
    return SimLLM(world)


def make_embedder(world: SimWorld) -> SimEmbedder:
    return SimEmbedder()
