"""The ``sim`` LLM backend's clients for the ``mbpp_oracle`` world, imported by ``llm.registry``
by ``OracleWorld.backend_module``: the oracle Solver, the ``sim`` embedder, the ``MbppWorld``.
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
