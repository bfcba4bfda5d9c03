"""The ``sim`` LLM backend's clients for the ``mbpp_oracle`` world (``OracleWorld.backend_module``).

``llm.registry`` imports this module by that name: ``make_llm(world)`` is the oracle stand-in
(``llm.OracleLLM``), ``make_embedder(world)`` the ``sim`` world's theme-aware embedder,
``make_world(world)`` the ``MbppWorld`` (for ``suites.sim.truth.analyze_run``).
"""

from __future__ import annotations

from ratchet_ray.suites.mbpp_oracle.llm import OracleLLM
from ratchet_ray.suites.mbpp_oracle.settings import OracleWorld
from ratchet_ray.suites.mbpp_oracle.world import MbppWorld
from ratchet_ray.suites.sim.embedder import SimEmbedder


def make_llm(world: OracleWorld) -> OracleLLM:
    return OracleLLM(world)


def make_embedder(world: OracleWorld) -> SimEmbedder:
    return SimEmbedder()


def make_world(world: OracleWorld) -> MbppWorld:
    return MbppWorld(world)
