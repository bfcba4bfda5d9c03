"""The ``sim`` LLM backend's clients for the ``mbpp_oracle`` world (``OracleWorld.backend_module``).

``llm.registry`` imports this module by that name: ``make_llm(world)`` is the oracle stand-in
(``llm.OracleLLM``), ``make_embedder(world)`` the ``sim`` world's theme-aware embedder (the
``sim`` backend's own), ``make_world(world)`` the ``MbppWorld`` (for
``suites.sim.truth.analyze_run``).
"""

from __future__ import annotations

from ratchet_ray.suites.mbpp_oracle.llm import OracleLLM
from ratchet_ray.suites.mbpp_oracle.settings import OracleWorld
from ratchet_ray.suites.mbpp_oracle.world import MbppWorld
from ratchet_ray.suites.sim.backend import make_embedder

__all__ = ["make_embedder", "make_llm", "make_world"]


def make_llm(world: OracleWorld) -> OracleLLM:
    return OracleLLM(world)


def make_world(world: OracleWorld) -> MbppWorld:
    return MbppWorld(world)
