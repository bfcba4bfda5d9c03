"""The ``sim`` suite's registration: everything sim-specific the generic code asks for.

Imported once by ``suites.registry`` (its built-in list), exactly as a plugin module would be:
its settings section and ``configure`` rule (the sim LLM backend, ``llm.world``), offline tasks,
the ``ratchet sim-report`` command and the truth columns of a sweep report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ratchet_ray.suites.base import split_tasks
from ratchet_ray.suites.registry import BUILTIN_ORIGIN, register
from ratchet_ray.suites.sim import SimSuite
from ratchet_ray.suites.sim.settings import SimSettings, SimWorld

NAME = "sim"


def configure_sim(config: Any, settings: SimSettings) -> None:
    """The suite's ``configure``: it needs the ``sim`` LLM backend, which answers from THIS run's
    world (settings, seed, train split), so ``llm.world`` is derived at every resolve."""
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


def sweep_truth(run_dirs: list[Path]) -> tuple[str, list[dict[str, Any]], list[str]]:
    """The truth columns of ``ratchet sim-report`` per arm over ``run_dirs`` (sim runs)."""
    from ratchet_ray.suites.sim.report import ARM_COLUMNS, arm_table, headline
    from ratchet_ray.suites.sim.truth import analyze_run

    heads = [headline(analyze_run(run_dir)) for run_dir in run_dirs]
    return "Against the truth (sim-report)", arm_table(heads), list(ARM_COLUMNS)


register(NAME, "ratchet_ray.suites.sim:SimSuite", settings=SimSettings, configure=configure_sim,
         origin=BUILTIN_ORIGIN, offline_tasks=True, sweep_report=sweep_truth,
         commands="ratchet_ray.cli.sim:COMMANDS",
         impossible_twin="ratchet_ray.suites.sim.grader:impossible_twin",
         skill_truth="ratchet_ray.suites.sim.truth:skill_verdicts",
         task_id_pattern=r"sim/\d+")
