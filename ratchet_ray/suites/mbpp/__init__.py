"""MBPP+ (evalplus v0.2.0, 378 tasks): tasks for the loop and sandboxed evalplus grading
(``MbppSuite``, the ``suites.base.Suite`` protocol)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.suites.base import LeakSource
from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus, to_tasks
from ratchet_ray.suites.mbpp.grader import MbppGrader
from ratchet_ray.types import Task


class MbppSuite:
    name = "mbpp"
    output_kind = "code"

    def load_tasks(self, config: LoopConfig) -> list[Task]:
        return to_tasks(load_mbpp_plus(config.dataset_path), suite=self.name)

    def make_grader(self, config: LoopConfig, run_dir: Path) -> MbppGrader:
        return MbppGrader.from_config(config, run_dir)

    def leak_sources(self, config: LoopConfig, tasks: list[Task]) -> Iterable[LeakSource]:
        """What a skill must not quote (``leaks.mbpp_leak_sources``)."""
        from ratchet_ray.suites.mbpp.leaks import mbpp_leak_sources

        return mbpp_leak_sources(config, tasks)


__all__ = ["MbppGrader", "MbppSuite"]
