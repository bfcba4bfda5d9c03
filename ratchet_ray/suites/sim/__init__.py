"""The ``sim`` suite: a seeded world with known skill effects that drives the real governance.

``SimSuite`` loads the world's tasks and grades the sim Solver's drawn outcome; the LLM and the
embedder are the ``sim`` backends of ``llm.registry`` (``llm.py``, ``embedder.py``, selected by
``configs/sim.yaml``).
"""

from __future__ import annotations

from typing import Any

from ratchet_ray.suites.sim.settings import SimSettings, SimWorld
from ratchet_ray.types import Task


def world_spec(config: Any) -> SimWorld:
    """The world of a run: its ``sim`` settings and its seed."""
    from ratchet_ray.suites.registry import settings_for

    return SimWorld.of(settings_for(config, "sim"), config.seed)


class SimSuite:
    """The ``sim`` suite of the Suite protocol (output kind: code, graded from its outcome line)."""

    name = "sim"
    output_kind = "code"

    def load_tasks(self, config: Any) -> list[Task]:
        from ratchet_ray.suites.sim.world import World

        return [Task(task_id=t.task_id, suite=self.name, prompt=t.prompt)
                for t in World(world_spec(config)).tasks]

    def make_grader(self, config: Any, run_dir: Any):
        from ratchet_ray.suites.sim.grader import SimGrader
        from ratchet_ray.suites.sim.world import World

        return SimGrader.for_run(World(world_spec(config)), run_dir)


__all__ = ["SimSettings", "SimSuite", "SimWorld", "world_spec"]
