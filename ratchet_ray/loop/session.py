"""One runtime context for everything that puts a run's actors on Ray: the skill loop, the
baseline job, the sweep and the experiment evaluator start and stop Ray the same way.

Contracts:
- ``ray_session(address=None)``: Ray connected for the block (``runtime.connect_ray``); shut
  down on leaving, however the block ends, only when this block connected it (it yields True).
  When it connects, SIGTERM in the main thread raises ``KeyboardInterrupt("SIGTERM")``
  (``unwind_on_sigterm``), so a terminated driver unwinds (and records its stop) as on Ctrl-C;
  so does one terminated while ``ray.init`` starts Ray (whose own handler exits the process).
  A SIGTERM during ``ray.init`` whose exception Python swallowed is still seen (a wakeup pipe
  notes it below Python) and unwinds as Ctrl-C once Ray is up.
  ``hold_sigterm`` defers SIGTERM while a run dir is made, until the stop can be recorded.
- ``raise_if_signalled``, ``watching_signals``, ``interrupting_signal``, ``hold_sigterm`` and
  ``unwind_on_sigterm`` are ``loop.signals``' (their contracts there), imported from here too.
  The interrupt's own words can be lost on the way up (DuckDB turns it into its
  ``InterruptException``, a library re-raises a bare one), so the driver asks
  ``interrupting_signal()`` rather than trusting the exception's text.
- ``RunRuntime(config, scope, models)`` owns one run's (or job's) Ray resources under the name
  ``scope`` (a run id, ``baseline_<hex>``). Entering connects Ray, takes the scope's lease
  (``actors.run_lease``: its detached servers leave by themselves if this process dies), runs
  the preflight (``PreflightFailed`` leaves nothing behind) and fills ``models``;
  ``checks=False`` (a job that asks no LLM) skips the last two. ``pool``, ``artifacts`` and
  ``start_run_actors`` start actors it releases on exit; ``breaker`` is one split's
  circuit breaker. Leaving, by return, exception or Ctrl-C, releases in reverse order: pools and
  owned actors, every named actor of the scope (``runtime.release_run``; skipped, with a
  warning, when Ray's GCS does not answer within 3 s: a local Ray stopped with the driver), the
  lease, then Ray when it started it; each release runs even when an earlier one failed.
"""

from __future__ import annotations

import logging
import signal
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import ray

from actors.artifacts import run_artifacts_access
from actors.pools import ResilientPool
from actors.run_lease import hold_run_lease
from ratchet_ray.storage.artifacts import Artifacts
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.loop.breaker import InfraBreaker
from ratchet_ray.loop.preflight import preflight
from ratchet_ray.loop.ray_address import gcs_answers
from ratchet_ray.loop.runtime import Models, Runtime, connect_ray, make_pool, release_run, \
    start_runtime
# The signal handling lives apart (no Ray import there); the driver and the jobs import it here
from ratchet_ray.loop.signals import (_interrupt, _noting_signals, _signalled,  # noqa: F401
                                      hold_sigterm, interrupting_signal, raise_if_signalled,
                                      unwind_on_sigterm, watching_signals)
from ratchet_ray.types import Task

log = logging.getLogger(__name__)


@contextmanager
def ray_session(address: str | None = None) -> Iterator[bool]:
    """Ray connected for the block; shut down after it only if this block connected it."""
    _signalled.clear()
    with _noting_signals() as came:
        try:
            connected = connect_ray(address)
        except SystemExit as exc:  # ray.init's own SIGTERM handler, set while it starts Ray
            if exc.code != signal.SIGTERM:
                raise
            _signalled.append("SIGTERM")
            raise KeyboardInterrupt("SIGTERM") from exc
        if connected:
            unwind_on_sigterm()
        if came(signal.SIGTERM) and not _signalled:  # its SystemExit swallowed: Ray went on
            _signalled.append("SIGTERM")
    if not connected:
        raise_if_signalled()
        yield False
        return
    try:
        raise_if_signalled()
        yield True
    finally:
        ray.shutdown()


class RunRuntime:
    """The Ray resources of one run or job named ``scope`` (module contracts)."""

    def __init__(self, config: LoopConfig, scope: str, models: Models = Models(), *,
                 log_dir: Path | None = None, checks: bool = True):
        self.config, self.scope, self.log_dir, self.checks = config, scope, log_dir, checks
        self.models = models
        self._stack: ExitStack | None = None

    def __enter__(self) -> "RunRuntime":
        with ExitStack() as stack:  # unwound here if entering fails, else kept until __exit__
            stack.enter_context(ray_session())
            lease = hold_run_lease(self.scope)
            stack.callback(ray.kill, lease)
            stack.callback(self._release_scope)
            if self.checks:  # a crashed local-model probe's log lands in log_dir (the run dir)
                preflight(self.config, self.models, scope=self.scope, log_dir=self.log_dir)
                self.models = self.models.filled(self.config, scope=self.scope)
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()

    def _release_scope(self) -> None:
        # A signal to the whole process group (`timeout`, `kill -- -PGID`, a scheduler's stop)
        # stops the local Ray with the driver, and listing a dead GCS's actors blocks for good:
        # the stop would never be recorded. Its actors went with it.
        address = ray.get_runtime_context().gcs_address
        if not gcs_answers(address):
            log.warning("Ray's GCS at %s does not answer (the local Ray stopped with this "
                        "process?): the actors of %s are not released", address, self.scope)
            return
        released = release_run(self.scope)
        log.debug("released the actors of %s: %s", self.scope, released)

    @property
    def _open(self) -> ExitStack:
        if self._stack is None:
            raise RuntimeError("RunRuntime is not entered: use it as `with RunRuntime(...) as rt`")
        return self._stack

    def pool(self, role: str, make_actor: Callable[[], Any], size: int,
             **kwargs: Any) -> ResilientPool:
        """A pool of ``role`` actors with the run's bounds (``runtime.make_pool``), shut down
        when the runtime closes."""
        stack = self._open
        pool = make_pool(role, self.config, make_actor, size, **kwargs)
        stack.callback(pool.shutdown)
        return pool

    def artifacts(self, run_dir: Path, uri: str = "") -> Artifacts:
        """Where the actors write what they produce for ``run_dir`` (``run_artifacts_access``);
        a service actor it starts is killed when the runtime closes."""
        stack = self._open
        artifacts, service = run_artifacts_access(run_dir, uri)
        if service is not None:
            stack.callback(ray.kill, service)
        return artifacts

    def start_run_actors(self, run_dir: Path, train_tasks: Sequence[Task]) -> Runtime:
        """Every actor of a skill-loop run (``runtime.start_runtime``), shut down on close."""
        stack = self._open
        runtime = start_runtime(self.config, run_dir, self.scope, train_tasks, self.models)
        stack.callback(runtime.shutdown)
        return runtime

    def breaker(self, split: str, round_: int, total: int, **kwargs: Any) -> InfraBreaker:
        """The circuit breaker of one split of ``total`` jobs at ``infra.max_failure_rate``."""
        return InfraBreaker(split, round_, total, self.config.infra.max_failure_rate, **kwargs)
