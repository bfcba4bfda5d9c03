"""The ``mbpp_oracle`` suite: a simulated world over the real MBPP+ tasks with real grading.

A product feature (``suite: mbpp_oracle``, ``configs/mbpp_oracle.yaml``): the tasks are every
MBPP+ problem (a run splits them as ``mbpp`` does), every output is graded by the real sandboxed
evalplus check and the governance is the real one on real Ray actors, while the models are the
``sim`` world's: each skill has a true effect per latent failure type (``suites.sim.world``),
the Router and Critic answer from that truth, and the Solver answers with the task's canonical
solution with probability p(task, routed skill), else a plausibly broken variant (``llm.py``,
``mutate.py``). So decisions taken on real grades can be scored against a known truth
(``ratchet sim-report``), with MBPP+'s grading in the loop: its cost, its sandbox and any broken
variant its tests fail to catch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ratchet_ray.types import Task


def world_of(config: Any) -> Any:
    """The run's world (``llm.world``, which the suite's ``configure`` derives), built."""
    from ratchet_ray.suites.mbpp_oracle.registration import configure_oracle
    from ratchet_ray.suites.mbpp_oracle.world import MbppWorld
    from ratchet_ray.suites.registry import settings_for

    if config.llm.world is None:  # a config not resolved through the suite registry
        configure_oracle(config, settings_for(config))
    return MbppWorld(config.llm.world)


class MbppOracleSuite:
    """The ``mbpp_oracle`` suite of the Suite protocol (output kind: code, graded by MBPP+)."""

    name = "mbpp_oracle"
    output_kind = "code"

    def load_tasks(self, config: Any) -> list[Task]:
        """The MBPP+ tasks (``mbpp``'s payload: entry point, example tests, dataset hash) with
        the world's prompts (``MbppWorld.prompt``: the task tag and its theme words added)."""
        from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus, to_tasks

        world = world_of(config)
        return [task.model_copy(update={"prompt": world.prompt(task.task_id)})
                for task in to_tasks(load_mbpp_plus(config.dataset_path), suite=self.name)]

    def make_grader(self, config: Any, run_dir: Path) -> Any:
        from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus
        from ratchet_ray.suites.mbpp.grader import mbpp_settings
        from ratchet_ray.suites.mbpp_oracle.grader import OracleGrader

        return OracleGrader(load_mbpp_plus(config.dataset_path), config.grader,
                            mbpp=mbpp_settings(config))


__all__ = ["MbppOracleSuite", "world_of"]
