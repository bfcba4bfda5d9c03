"""Ray connection and the actors of one run, with their resources in one table.

Contracts:
- ``connect_ray()`` joins the cluster named by ``RAY_ADDRESS`` (set by ``ray job submit``) or,
  when there is none, starts a local Ray bound to 127.0.0.1. It returns True when this call
  started Ray (the caller then shuts it down).
- ``start_runtime`` launches the SkillBank (pinned to the driver's node, where the run dir
  lives), the Solver / Grader / Critic pools and the Synthesizer. ``Models`` is the one injection
  point for the LLM and the embedder: ``Models()`` (production) lets every actor build its client
  from ``config.llm``; tests pass picklable doubles.
- Resources: every actor asks for its role's ``ROLE_RESOURCES``; SWE-bench Solvers and Graders
  also ask for one ``docker`` unit when the cluster advertises that resource (``actor_options``).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from actors.critic import CriticActor
from actors.pools import ResilientPool
from actors.skill_bank import SkillBankProcess, actor_name
from actors.solver import SolverActor
from actors.synthesizer import SynthesizerActor
from ratchet_ray.config import LoopConfig
from ratchet_ray.llm.base import Embedder, LLMClient
from ratchet_ray.types import Task

log = logging.getLogger(__name__)

# Ray resources per role. Solvers, critics and the synthesizer mostly wait on the LLM; graders
# run the generated code. The bank holds no CPU: it must always be schedulable on the driver's
# node, which on a cluster advertises no CPUs (cluster.yaml).
ROLE_RESOURCES: dict[str, dict[str, Any]] = {
    "bank": {"num_cpus": 0},
    "solver": {"num_cpus": 0.25},
    "grader": {"num_cpus": 0.5},
    "critic": {"num_cpus": 0.25},
    "synthesizer": {"num_cpus": 0.25},
}

# Custom resources per (suite, role), requested only where the cluster advertises them (a local
# Ray has none, so everything schedules as above). cluster.yaml's docker_worker nodes offer
# `docker`, one SWE-bench harness per unit: the Grader runs the eval in a container, and the
# Solver's agent works in the instance's container too.
SUITE_RESOURCES: dict[tuple[str, str], dict[str, float]] = {
    ("swebench", "grader"): {"docker": 1},
    ("swebench", "solver"): {"docker": 1},
}


def actor_options(role: str, suite: str) -> dict[str, Any]:
    """Ray options of one ``role`` actor: ``ROLE_RESOURCES`` plus the ``SUITE_RESOURCES`` that
    ``ray.cluster_resources()`` advertises (Ray must be initialised)."""
    options = dict(ROLE_RESOURCES[role])
    advertised = ray.cluster_resources()
    custom = {name: amount for name, amount in SUITE_RESOURCES.get((suite, role), {}).items()
              if advertised.get(name, 0) >= amount}
    if custom:
        options["resources"] = custom
    return options


@dataclass(frozen=True)
class Models:
    """LLM client and embedder handed to every actor; None means "build from config.llm"."""

    llm: LLMClient | None = None
    embedder: Embedder | None = None


def connect_ray() -> bool:
    """Join ``RAY_ADDRESS`` if set, else start a loopback-only local Ray; True if it started Ray."""
    if ray.is_initialized():
        return False
    if os.environ.get("RAY_ADDRESS"):
        ray.init(configure_logging=False, log_to_driver=True)
        return True
    ray.init(_node_ip_address="127.0.0.1", include_dashboard=False, configure_logging=False,
             log_to_driver=False)
    return True


def pin_to_this_node() -> NodeAffinitySchedulingStrategy:
    """Schedule on the driver's node (hard affinity): the run dir is a local folder here."""
    return NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(),
                                          soft=False)


def _bank_embedder(config: LoopConfig, models: Models) -> Embedder | Callable[[], Embedder]:
    if models.embedder is not None:
        return models.embedder
    from ratchet_ray.llm.registry import make_embedder

    settings = config.llm
    return lambda: make_embedder(settings)  # built inside the bank's process, never pickled


def make_grader_factory(config: LoopConfig, run_dir: Path) -> Callable[[], Any]:
    """Makes one of the suite's grader actors (their scratch space lives under ``run_dir``)."""
    from actors.grader import GraderActor

    options = actor_options("grader", config.suite)
    return lambda: GraderActor.options(**options).remote(config, str(run_dir))


def make_solver_factory(config: LoopConfig, run_dir: Path, models: Models = Models(), *,
                        solver_cache: bool = True) -> Callable[[], Any]:
    """Makes one Solver actor. A patch suite's Solver gets ``suite.solver_settings(config)`` and
    writes each agent trajectory to ``run_dir/logs/<suite>/<task>/<split>_<NN>/trajectory.json``;
    ``solver_cache`` puts eval generations through ``run_dir/solver_cache``."""
    from ratchet_ray.suites import get_suite

    suite = get_suite(config.suite)
    extra: dict[str, Any] = {"llm": models.llm, "embedder": models.embedder}
    if solver_cache:
        extra["solver_cache_dir"] = str(run_dir / "solver_cache")
    solver_settings = getattr(suite, "solver_settings", None)
    if solver_settings is not None:
        extra["patch_settings"] = solver_settings(config)
        extra["trajectory_root"] = str(run_dir / "logs" / config.suite)
    options = actor_options("solver", config.suite)
    return lambda: SolverActor.options(**options).remote(config, **extra)


@dataclass
class Runtime:
    """Handles of one run's actors; ``shutdown`` kills them all."""

    bank: Any
    solvers: ResilientPool
    graders: ResilientPool
    critics: ResilientPool
    synthesizer: Any
    extra: list[Any] = field(default_factory=list)

    def shutdown(self) -> None:
        for pool in (self.solvers, self.graders, self.critics):
            pool.shutdown()
        for handle in (self.bank, self.synthesizer, *self.extra):
            ray.kill(handle)


def warn_if_oversized(config: LoopConfig) -> float:
    """Log a warning when the pools ask for more CPUs than the cluster has now (an actor that
    cannot be placed holds its jobs until a node joins); returns the CPUs asked for."""
    workers = config.workers
    wanted = sum(n * ROLE_RESOURCES[role]["num_cpus"] for role, n in (
        ("solver", workers.solvers), ("grader", workers.graders), ("critic", workers.critics),
        ("synthesizer", 1)))
    have = ray.cluster_resources().get("CPU", 0.0)
    if wanted > have:
        log.warning("the actors ask for %.2f CPUs but the cluster has %.2f now; without an "
                    "autoscaler some never start and the run waits: lower --workers or "
                    "workers.solvers/graders/critics", wanted, have)
    return wanted


def start_runtime(config: LoopConfig, run_dir: Path, run_id: str, train_tasks: Sequence[Task],
                  models: Models = Models()) -> Runtime:
    """Launch every actor of a run (see module contracts)."""
    warn_if_oversized(config)
    bank = ray.remote(SkillBankProcess).options(
        name=actor_name(run_id), get_if_exists=True, max_concurrency=1, max_restarts=3,
        max_task_retries=0, scheduling_strategy=pin_to_this_node(), **ROLE_RESOURCES["bank"],
    ).remote(str(run_dir), embedder=_bank_embedder(config, models), config=config, run_id=run_id)
    injected = {"llm": models.llm, "embedder": models.embedder}

    def make_critic() -> Any:
        return CriticActor.options(**ROLE_RESOURCES["critic"]).remote(config, llm=models.llm)

    workers = config.workers
    runtime = Runtime(
        bank=bank,
        solvers=ResilientPool(make_solver_factory(config, run_dir, models), workers.solvers,
                              name="solver"),
        graders=ResilientPool(make_grader_factory(config, run_dir),
                              workers.graders, name="grader"),
        critics=ResilientPool(make_critic, workers.critics, name="critic"),
        synthesizer=SynthesizerActor.options(**ROLE_RESOURCES["synthesizer"]).remote(
            config, tasks=list(train_tasks), **injected),
    )
    ray.get(bank.ping.remote())  # fail early (e.g. a broken skills/ folder) with the bank's error
    return runtime
