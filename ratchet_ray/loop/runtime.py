"""Ray connection and the actors of one run, with their resources in one table.

Contracts:
- ``connect_ray()`` joins the cluster named by ``RAY_ADDRESS`` (set by ``ray job submit``) or,
  when there is none, starts a local Ray bound to 127.0.0.1. It returns True when this call
  started Ray (the caller then shuts it down).
- ``start_runtime`` launches the SkillBank (pinned to the driver's node, where the run dir
  lives), the Solver / Grader / Critic pools and the Synthesizer (a healing pool of one).
  ``Models`` is the one injection
  point for the LLM and the embedder: ``Models()`` (production) is filled on the driver with the
  clients of ``config.llm`` over the cluster's shared services (``Models.filled``), which then
  travel to every actor; tests pass picklable doubles.
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
from actors.pools import ActorStartError, ActorStartTimeout, ResilientPool, init_failure, \
    init_failure_text
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

    def filled(self, config: LoopConfig) -> "Models":
        """These models with each None replaced by the client of ``config.llm`` over the cluster's
        shared services (``actors.llm_server.cluster_services``: the node's model server, the
        run-wide rate limiter). The clients are light: models load in the servers, on first use."""
        if self.llm is not None and self.embedder is not None:
            return self
        from actors.llm_server import cluster_services
        from ratchet_ray.llm.registry import make_embedder, make_llm

        services = cluster_services()
        return Models(
            llm=self.llm if self.llm is not None else make_llm(config.llm, services=services),
            embedder=(self.embedder if self.embedder is not None
                      else make_embedder(config.llm, services=services)))


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
    models = models.filled(config)
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
    synthesizer: ResilientPool
    extra: list[Any] = field(default_factory=list)

    def shutdown(self) -> None:
        for pool in (self.solvers, self.graders, self.critics, self.synthesizer):
            pool.shutdown()
        for handle in (self.bank, *self.extra):
            ray.kill(handle)


def make_pool(role: str, config: LoopConfig, make_actor: Callable[[], Any], size: int,
              **kwargs: Any) -> ResilientPool:
    """A ``ResilientPool`` of ``role`` actors with the run's start-up and setup bounds
    (``config.infra``) and the role's resources (named when an actor cannot be placed)."""
    return ResilientPool(make_actor, size, name=role, resources=actor_options(role, config.suite),
                         start_timeout_s=config.infra.actor_start_timeout_s,
                         setup_timeout_s=config.infra.setup_timeout_s, **kwargs)


def wait_bank(bank: Any, config: LoopConfig) -> None:
    """Wait (bounded) until the SkillBank actor answers; its constructor's error, if any, is
    raised as ``ActorStartError`` with that exception (e.g. a broken skills/ folder)."""
    try:
        ray.get(bank.ping.remote(), timeout=config.infra.actor_start_timeout_s)
    except ray.exceptions.GetTimeoutError as exc:
        raise ActorStartTimeout(
            f"the SkillBank actor did not start within {config.infra.actor_start_timeout_s:.0f}s"
            " (it is pinned to the driver's node and asks for no CPU); see the Ray worker logs"
        ) from exc
    except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as err:
        cause = init_failure(err)
        if cause is None:
            raise
        raise ActorStartError("bank", cause, init_failure_text(err, cause)) from cause


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
    models = models.filled(config)
    bank = ray.remote(SkillBankProcess).options(
        name=actor_name(run_id), get_if_exists=True, max_concurrency=1, max_restarts=3,
        max_task_retries=0, scheduling_strategy=pin_to_this_node(), **ROLE_RESOURCES["bank"],
    ).remote(str(run_dir), embedder=models.embedder, config=config, run_id=run_id)
    injected = {"llm": models.llm, "embedder": models.embedder}

    def make_critic() -> Any:
        return CriticActor.options(**ROLE_RESOURCES["critic"]).remote(config, llm=models.llm)

    def make_synthesizer() -> Any:
        return SynthesizerActor.options(**ROLE_RESOURCES["synthesizer"]).remote(
            config, tasks=list(train_tasks), **injected)

    workers = config.workers
    runtime = Runtime(
        bank=bank,
        solvers=make_pool("solver", config, make_solver_factory(config, run_dir, models),
                          workers.solvers),
        graders=make_pool("grader", config, make_grader_factory(config, run_dir),
                          workers.graders),
        critics=make_pool("critic", config, make_critic, workers.critics),
        # A pool of one: a Synthesizer that died is replaced (its constructor reloads its state:
        # config and train tasks) instead of failing every later synth phase. One attempt per
        # call: synthesis adds skills as it goes, so a blind retry could add a batch twice.
        synthesizer=make_pool("synthesizer", config, make_synthesizer, 1, max_attempts=1),
    )
    wait_bank(bank, config)  # fail early with the bank's own error
    return runtime
