"""Ray connection and the actors of one run, with their resources in one table.

Contracts:
- ``connect_ray`` is the library's one ``ray.init`` in a driver; a Ray that cannot be started
  or joined is ``RayStartError``, one line with the fix (``check_ray`` finds the quick cases
  first).
- ``start_runtime`` launches the SkillBank (pinned to the driver's node, where the run dir
  lives), the Solver / Grader / Critic pools and the Synthesizer (a healing pool of one).
  ``Models`` is the one injection point for the LLM and the embedder: ``Models()`` (production)
  is filled on the driver with ``config.llm``'s clients over the run's shared services; tests
  pass picklable doubles.
- Artifacts (trajectories, grader logs, the eval solver cache, the sim world) go through the
  run's ``storage.artifacts.Artifacts`` (``actors.artifacts.run_artifacts_access``), so no actor
  gets a run-dir path and every node's artifacts land in the head's run dir.
- Every actor gets the run's resolved config, so a worker on another node runs with the driver's
  settings, not its environment's. No actor gets a ``runtime_env`` (Ray would start it through a
  setup process: about 1 s of CPU per actor).
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import click
import ray

from actors.artifacts import run_artifacts_access
from actors.critic import CriticActor
from actors.named_client import kill_named
from actors.placement import pinned
from actors.pool_errors import ActorStartTimeout, raise_if_init_failed
from actors.pools import ResilientPool
from actors.skill_bank import actor_name, launch_skill_bank
from actors.solver import SolverActor
from actors.synthesizer import SynthesizerActor
from ratchet_ray.storage.artifacts import Artifacts, ArtifactStore
from ratchet_ray.storage.fsutil import unwritable
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.llm.base import Embedder, LLMClient
from ratchet_ray.llm.cache import CACHE_DIRNAME
from ratchet_ray.loop.ray_address import LOCAL, ray_problem
from ratchet_ray.suites.hooks import actor_resources, local_resources, placement
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


def actor_options(role: str, suite: str) -> dict[str, Any]:
    """Ray options of one ``role`` actor: ``ROLE_RESOURCES`` plus the custom resources the suite
    registered for the role (whether or not a node offers them yet)."""
    options = dict(ROLE_RESOURCES[role])
    custom = actor_resources(suite, role)
    if custom:
        options["resources"] = custom
    return options


@dataclass(frozen=True)
class Models:
    """LLM client and embedder handed to every actor; None means "build from config.llm"."""

    llm: LLMClient | None = None
    embedder: Embedder | None = None

    def filled(self, config: LoopConfig, scope: str | None = None) -> "Models":
        """These models with each None replaced by the client of ``config.llm`` over the cluster's
        shared services of run ``scope`` (``actors.llm_server.cluster_services``: the node's model
        server, the run's rate limiter). The clients are light: models load in the servers, on
        first use."""
        if self.llm is not None and self.embedder is not None:
            return self
        from actors.llm_server import DEFAULT_SCOPE, cluster_services
        from ratchet_ray.llm.registry import make_embedder, make_llm

        services = cluster_services(scope or DEFAULT_SCOPE, config.llm.limiter_scope)
        return Models(
            llm=self.llm if self.llm is not None else make_llm(config.llm, services=services),
            embedder=(self.embedder if self.embedder is not None
                      else make_embedder(config.llm, services=services)))


LOCAL_RAY_SYSTEM_CONFIG = {"prestart_worker_first_driver": False, "worker_niceness": 0}
"""Ray's settings for a local run's runtime: no idle worker started ahead for the first driver
(one per CPU otherwise; one no actor takes costs 1-2 s of CPU and its memory), and workers at the
driver's priority, not nice 15, so a Grader's few milliseconds of work do not wait behind every
busy process of a loaded machine (docs/benchmarks.md, SWE-bench under load). A cluster sets it
on ``ray start`` (``RAY_worker_niceness=0``)."""


def connect_ray(address: str | None = None) -> bool:
    """Join ``address``, else ``RAY_ADDRESS`` if set, else start a loopback-only local Ray; True
    if it started Ray. What ``check_ray`` refuses is refused before ``ray.init``."""
    if ray.is_initialized():
        return False
    check_ray(address)
    target = address or os.environ.get("RAY_ADDRESS") or None
    joined = target not in (None, LOCAL)
    local = {} if joined else dict(
        _node_ip_address="127.0.0.1", include_dashboard=False,
        resources=local_resources(),
        _system_config=LOCAL_RAY_SYSTEM_CONFIG)
    # A driver joined through RAY_ADDRESS (``ray job submit``) shows its workers' logs; one given
    # an address (a sweep's head, ``swe validate --address``) and a local run do not. A local
    # run starts its own Ray (``local``), never joining one it was not given.
    try:
        ray.init(address=address if joined else LOCAL, configure_logging=False,
                 log_to_driver=joined and not address, **local)
    except (ConnectionError, TimeoutError, RuntimeError, ValueError, OSError) as exc:
        # OSError: a local Ray that cannot make its session folder (its temp dir unwritable)
        raise RayStartError(target if joined else None, exc) from exc
    return True


RAY_TEMP_ROOM_BYTES = 64 * 2**20
"""Free space a local Ray's temp folder needs: its session's sockets, address files and logs
(a short run writes a few MB, a long one tens). With less, Ray's processes failed to write
their address files and ``ray.init`` gave up after 30 s blaming a slow start."""


def temp_dir_problem() -> str | None:
    """Why a local Ray started here cannot make its session folder under ``RAY_TMPDIR`` (else
    Ray's default, ``/tmp``), one line with the fix, else None: a folder that cannot be written
    (Ray met it with a traceback after the run dir was made) or with less than
    ``RAY_TEMP_ROOM_BYTES`` free."""
    folder = os.environ.get("RAY_TMPDIR")
    why = unwritable(folder) if folder else None
    if why is not None:
        return (f"a local Ray cannot make its session folder under RAY_TMPDIR={folder} ({why}); "
                "point RAY_TMPDIR at a writable folder, or unset it (Ray then uses /tmp)")
    where = Path(folder or "/tmp").absolute()
    while not where.exists() and where != where.parent:  # where the folder would be made
        where = where.parent
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return None  # not measurable here: Ray's own error stands
    if free >= RAY_TEMP_ROOM_BYTES:
        return None
    named = f"RAY_TMPDIR={folder}" if folder else "/tmp (Ray's temp folder)"
    return (f"a local Ray has no room for its session folder under {named}: "
            f"{free / 2**20:.1f} MiB free on that disk, it needs "
            f"{RAY_TEMP_ROOM_BYTES // 2**20} MiB; free space there (df -h {where}), or point "
            "RAY_TMPDIR at a disk with room")


def check_ray(address: str | None = None) -> None:
    """``RayStartError`` when the Ray ``connect_ray(address)`` would reach cannot be reached
    (``ray_address.ray_problem``); nothing when connected already. Starts nothing and takes
    three seconds at most, so entry points call it before they create anything."""
    if ray.is_initialized():
        return
    problem = dashboard_url_problem(address) or ray_problem(address)
    if problem is None and (address or os.environ.get("RAY_ADDRESS") or LOCAL) == LOCAL:
        problem = temp_dir_problem()  # only a Ray started here makes its folders here
    if problem is not None:
        raise RayStartError(address or os.environ.get("RAY_ADDRESS"), problem=problem)


def dashboard_url_problem(address: str | None = None) -> str | None:
    """Why ``address`` (else ``RAY_ADDRESS``) cannot be joined by a driver when it is a
    dashboard (job server) URL, one line with the fix, else None: ``ray.init`` refuses
    ``http(s)://`` addresses, and met one only after the run dir was made (Ray's docs export
    ``RAY_ADDRESS=http://HOST:8265`` for its job CLI, so a shell may well hold one). The
    ``ray job submit`` it advises runs the command being run (click's command path; outside a
    command, ``python -m jobs.skill_loop``)."""
    given = (address or os.environ.get("RAY_ADDRESS") or "").strip()
    if not given.startswith(("http://", "https://")):
        return None
    source = "--address" if address else "RAY_ADDRESS"
    here = click.get_current_context(silent=True)  # the command the user ran, e.g. swe validate
    command = f"{here.command_path} ..." if here is not None else \
        "python -m jobs.skill_loop SUITE ..."
    return (f"{given} ({source}) is a Ray dashboard (job server) URL, and this command joins a "
            "cluster by its GCS address: give HOST:6379 (`ray status` on the head prints it), "
            f"or submit the command to that job server (`ray job submit --address {given} "
            f"--working-dir . -- {command}`)")


class RayStartError(click.ClickException):
    """Ray could not be started or joined: one ``Error:`` line at every entry point (``ratchet``,
    the jobs, ``swe validate``) naming the cause and the fix, never Ray's traceback: the
    ``problem`` ``check_ray`` found, or why ``ray.init`` failed (``cause``)."""

    def __init__(self, address: str | None, cause: BaseException | None = None, *,
                 problem: str | None = None):
        if problem is not None:
            fix = problem
        else:
            why = " ".join(f"{type(cause).__name__}: {_said(cause)}".split())[:300]
            if address:
                fix = (f"cannot join the Ray cluster at {address} ({why}); check --address / "
                       "RAY_ADDRESS (`ray status --address ADDRESS`), or drop both for a local "
                       "Ray")
            else:
                fix = (f"cannot start a local Ray ({why}); a loaded machine can delay its start "
                       "past Ray's timeouts: retry when the load is lower, stop stale Ray "
                       "processes of yours, or join a running head with --address / "
                       "RAY_ADDRESS")
        super().__init__(fix)
        self.cause = cause


TRACEBACK = "Traceback (most recent call last)"


def _said(cause: BaseException) -> str:
    """What ``cause`` says, with a traceback it carries (Ray Client's server sends its own)
    cut to that traceback's last line, where the error is named."""
    text = str(cause)
    if TRACEBACK not in text:
        return text
    before, _, trace = text.partition(TRACEBACK)
    lines = [line.strip() for line in trace.splitlines() if line.strip()]
    return " ".join(part for part in (before.strip(), lines[-1] if lines else "") if part)


def make_grader_factory(config: LoopConfig, run_dir: Path,
                        artifacts: Artifacts | None = None) -> Callable[[], Any]:
    """Makes one of the suite's grader actors; what they produce goes to ``artifacts`` (the run's,
    ``run_artifacts_access``), or to the folder ``run_dir`` of their node when None (one node)."""
    from actors.grader import GraderActor

    options = actor_options("grader", config.suite)
    target = artifacts if artifacts is not None else str(run_dir)
    return lambda: GraderActor.options(**options).remote(config, target)


def make_solver_factory(config: LoopConfig, run_dir: Path, models: Models = Models(), *,
                        solver_cache: bool = True,
                        artifacts: Artifacts | None = None) -> Callable[[], Any]:
    """Makes one Solver actor. An agent suite's Solver gets ``suite.solver_settings(config)`` and
    writes each agent trajectory to ``logs/<suite>/<task>/<split>_<NN>/trajectory.json`` of
    ``artifacts`` (the run's; None: the folder ``run_dir`` of its node, one node only);
    ``solver_cache`` puts eval generations through its ``solver_cache/``."""
    from ratchet_ray.suites import suite_for

    suite = suite_for(config)
    models = models.filled(config)
    extra: dict[str, Any] = {"llm": models.llm, "embedder": models.embedder}
    store = artifacts if artifacts is not None else ArtifactStore(run_dir)
    if solver_cache:
        extra["solver_cache_dir"] = store.sub(CACHE_DIRNAME)
    solver_settings = getattr(suite, "solver_settings", None)
    if solver_settings is not None:
        extra["agent_settings"] = solver_settings(config)
        extra["trajectory_root"] = store.sub(f"logs/{config.suite}")
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


def release_run(run_id: str) -> list[str]:
    """Kill every named actor of run ``run_id`` that outlives its creator (the SkillBank, model
    servers, the run's own rate limiters, not a shared ``llm.limiter_scope``); returns their
    names."""
    from actors.llm_server import release_llm_actors

    released = release_llm_actors(run_id)
    if kill_named(actor_name(run_id), namespace=None):
        released.append(actor_name(run_id))
    return released


def make_pool(role: str, config: LoopConfig, make_actor: Callable[[], Any], size: int,
              **kwargs: Any) -> ResilientPool:
    """A ``ResilientPool`` of ``role`` actors with the run's bounds (``config.infra``), the
    role's resources and the suite's placement for the role (``suites.hooks.placement``)."""
    return ResilientPool(make_actor, size, name=role, resources=actor_options(role, config.suite),
                         start_timeout_s=config.infra.actor_start_timeout_s,
                         setup_timeout_s=config.infra.setup_timeout_s,
                         placement=placement(config, role), **kwargs)


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
        raise_if_init_failed("bank", err)
        raise


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
    models = models.filled(config, scope=run_id)
    bank = launch_skill_bank(run_dir, embedder=models.embedder, config=config, run_id=run_id,
                             scheduling_strategy=pinned(), **ROLE_RESOURCES["bank"])
    injected = {"llm": models.llm, "embedder": models.embedder}
    artifacts, service = run_artifacts_access(run_dir, config.infra.artifact_uri)

    def make_critic() -> Any:
        return CriticActor.options(**ROLE_RESOURCES["critic"]).remote(config, llm=models.llm)

    def make_synthesizer() -> Any:
        return SynthesizerActor.options(**ROLE_RESOURCES["synthesizer"]).remote(
            config, tasks=list(train_tasks), **injected)

    workers = config.workers
    runtime = Runtime(
        bank=bank,
        solvers=make_pool("solver", config, make_solver_factory(
            config, run_dir, models,
            # A backend that replays a seeded call for free (``free_replay``) gains nothing
            # from the eval cache, which costs a durable file write per call.
            solver_cache=not getattr(models.llm, "free_replay", False),
            artifacts=artifacts), workers.solvers, batch=config.infra.batch),
        graders=make_pool("grader", config, make_grader_factory(config, run_dir, artifacts),
                          workers.graders, batch=config.infra.batch),
        critics=make_pool("critic", config, make_critic, workers.critics),
        # A pool of one: a Synthesizer that died is replaced (its constructor reloads its state:
        # config and train tasks) instead of failing every later synth phase. One attempt per
        # call: synthesis adds skills as it goes, so a blind retry could add a batch twice.
        synthesizer=make_pool("synthesizer", config, make_synthesizer, 1, max_attempts=1),
        extra=[service] if service is not None else [],
    )
    wait_bank(bank, config)  # fail early with the bank's own error
    return runtime
