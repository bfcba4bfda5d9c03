"""Preflight of a run: the ``ratchet doctor`` checks this run depends on, bounded in time.

Contracts of ``preflight(config, models, scope=None)``, run before any round of a run or resume
(``config.infra.preflight`` False skips it all):
- With ``models.llm`` / ``models.embedder`` None (production), one one-token call and one
  embedding on the run's own clients (``Models.filled`` over the services of ``scope``, the run
  id), each in a thread bounded by ``infra.preflight_timeout_s``; injected clients are skipped.
- For the ``local`` backend the model is first loaded and called in a child process
  (``llm.local_probe``, same timeout, stderr logged under ``log_dir``, default the Ray session's
  logs folder): a llama.cpp crash fails the check with the signal, the crashing function, the
  fix and the log, before the run's model server is started to die the same way.
- An actor that dies under a check fails it with the actor's class, pid, signal and worker log
  (``actors.pool_errors.describe_death``), never the backend's install hint.
- The suite's checks (``suites.environment_checks``, ``preflight=True``) run as one Ray task
  with the Grader's resources, so they run where grading will.
- A failed blocking check (``Check.blocking``; a suite check that did not finish in time
  blocks) raises ``PreflightFailed`` with each failed check's detail and fix, as ``ratchet
  doctor`` prints them; the others are warnings. Which of a suite's checks block is the suite's
  declaration, built-in or plugin alike.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

import ray
from ray.exceptions import RayActorError

from actors.pool_errors import ActorDied, ray_logs_dir
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.llm import doctor
from ratchet_ray.llm.doctor import Check
from ratchet_ray.loop.breaker import PreflightFailed
from ratchet_ray.suites import environment_checks

log = logging.getLogger(__name__)


def _naming_deaths(probe: Callable[[], str]) -> Callable[[], str]:
    """``probe`` with an actor's death (``RayActorError``) raised as ``ActorDied``: the check
    names the actor, its signal and its log, and the fix that cause calls for."""
    def run() -> str:
        try:
            return probe()
        except RayActorError as err:
            raise ActorDied.from_error(err) from err
    return run


def _local_model_first(config: LoopConfig, probe: Callable[[], str],
                       log_dir: Path | None) -> Callable[[], str]:
    """The model loaded and called in a child process, then ``probe`` (the run's server)."""
    from ratchet_ray.llm.local import LocalConfig
    from ratchet_ray.llm.local_probe import probe_local_model

    def run() -> str:
        probe_local_model(LocalConfig.from_settings(config.llm), log_dir=log_dir,
                          timeout_s=config.infra.preflight_timeout_s)
        return probe()
    return run


def model_checks(config: LoopConfig, models: Any, scope: str | None = None,
                 log_dir: Path | None = None) -> list[Check]:
    """The LLM and embedder checks on the run's own clients (see module contracts)."""
    if models.llm is not None and models.embedder is not None:
        return []
    filled = models.filled(config, scope=scope)  # a ``runtime.Models``
    timeout = config.infra.preflight_timeout_s
    settings = config.llm
    joins = []
    if models.llm is None:
        llm = doctor.few_retries(filled.llm)
        probe = _naming_deaths(lambda: doctor.check_llm_client(llm))
        bound = timeout
        if settings.backend == "local":  # two bounded steps: the child, then the server
            probe, bound = _local_model_first(config, probe, log_dir or ray_logs_dir()), 2 * timeout
        joins.append(doctor.in_thread(f"llm ({settings.backend})", doctor.backend_hint(settings.backend),
                              probe, bound))
    if models.embedder is None:
        backend = settings.embedder or settings.backend
        embedder = doctor.few_retries(filled.embedder)
        joins.append(doctor.in_thread(f"embedding ({backend})", doctor.backend_hint(backend),
                              _naming_deaths(lambda: doctor.check_embedder_client(embedder)),
                              timeout))
    return [join() for join in joins]


def suite_checks(config: LoopConfig) -> list[Check]:
    """The suite's ``environment_checks`` as a Ray task placed like a Grader (bounded)."""
    from ratchet_ray.loop.runtime import actor_options

    options = {k: v for k, v in actor_options("grader", config.suite).items()
               if k in ("num_cpus", "resources")}
    timeout = config.infra.preflight_timeout_s
    task = ray.remote(environment_checks).options(**options, max_retries=0)
    ref = task.remote(config, preflight=True)
    try:
        return ray.get(ref, timeout=timeout)
    except ray.exceptions.GetTimeoutError:
        ray.cancel(ref, force=True)
        return [Check(f"{config.suite} environment", False,
                      f"the checks did not finish within {timeout:.0f}s on a node with the "
                      f"grader's resources {options}",
                      "make sure a node offers those resources and is idle enough, or raise "
                      "infra.preflight_timeout_s")]


def preflight(config: LoopConfig, models: Any, scope: str | None = None,
              log_dir: Path | None = None) -> list[Check]:
    """Run the checks; raise ``PreflightFailed`` on a blocking failure (module contracts)."""
    if not config.infra.preflight:
        return []
    checks = [*model_checks(config, models, scope, log_dir), *suite_checks(config)]
    for check in checks:
        log.info("preflight %s %s: %s (%.1fs)", "PASS" if check.ok else "FAIL", check.name,
                 check.detail, check.seconds)
    failed = [c for c in checks if not c.ok]
    blocking = [c for c in failed if c.blocking]
    for check in failed:
        if check not in blocking:
            log.warning("preflight: %s: %s (fix: %s); going on", check.name, check.detail,
                        check.hint)
    if blocking:
        lines = "; ".join(f"FAIL {c.name}: {c.detail} (fix: {c.hint})" for c in blocking)
        raise PreflightFailed(f"preflight failed, no round was run: {lines}. Check again with "
                              f"`ratchet doctor --llm {config.llm.backend} --suite {config.suite}`")
    return checks
