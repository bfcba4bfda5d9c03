"""How a run that stops early says so: ``stopped.json`` and ``loop.json`` in its run dir.

Contracts:
- ``record_stop`` / ``record_interrupt`` write the cause into ``stopped.json`` (and
  ``loop.json``'s ``stopped``) and return the exception to raise; recording never hides the
  cause. ``stopped.json`` stays until a later run of the run dir finishes.
- A run dir deleted, moved or replaced while the run ran (``RunDir.lost``) is not made again to
  record a stop or interrupt: the log says where it went.
- The way on that every stop names is ``rundir.resume_advice``: ``--resume RUN``, or in a
  sweep's job the sweep's command (``rundir.SWEEP_COMMAND_ENV``).
"""

from __future__ import annotations

import logging
import shlex
import time
from pathlib import Path

from ratchet_ray.loop.breaker import RunStopped
from ratchet_ray.loop.budget import BudgetExhausted
from ratchet_ray.loop.rundir import RunDir, resume_advice
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.storage.fsutil import (atomic_write_json, cannot_write, disk_full_error,
                                        no_room, refused_write_error)

log = logging.getLogger(__name__)
STOPPED_FILE = "stopped.json"


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped the run in ``round`` (``finished`` rounds were done); the stop is
    recorded in the run dir's ``stopped.json`` and ``loop.json`` unless the run dir is gone.
    Still a ``KeyboardInterrupt``, so a caller that does not know it unwinds as from Ctrl-C."""

    def __init__(self, run_dir: Path, round_: int, finished: int, rounds: int,
                 unrecorded: str = ""):
        super().__init__(f"interrupted in round {round_} of {rounds} ({finished} finished)")
        self.run_dir, self.round, self.finished, self.rounds = run_dir, round_, finished, rounds
        self.unrecorded = unrecorded
        """Why the interrupt is not in ``stopped.json`` ('' when it is)."""


class DiskFull(RunStopped):
    """The run's disk (or quota) is full: nothing more can be written; free space and resume."""


def _record(run: RunDir, config: LoopConfig, stopped: dict, what: str) -> tuple[bool, str]:
    """Write ``stopped`` (``what``: the stop, the interrupt) into ``stopped.json`` and
    ``loop.json``: ``(whether the run dir is still there, '' or why nothing was recorded)``, a
    failure logged. Nothing is written into a run dir that is gone: that would make a bare run
    dir a report lists as a run, or write into another folder."""
    gone = run.lost() or (None if run.path.is_dir() else f"its run dir {run.path} is gone "
                          "(deleted while the run ran), so nothing was recorded")
    if gone is not None:
        log.error("%s (%s is not recorded)", gone, what)
        return False, gone
    try:
        atomic_write_json(run.path / STOPPED_FILE, stopped)
        run.write_loop_json(config, run.summaries(), stopped=stopped)
    except (OSError, ValueError) as err:  # the cause is raised and logged either way
        log.error("could not record %s in stopped.json / loop.json: %s", what, err)
        return True, f"writing {run.path / STOPPED_FILE} failed: {err}"
    return True, ""


def record_interrupt(run: RunDir, config: LoopConfig, by: str = "") -> RunInterrupted:
    """Record an interrupt: the round it came in is the first without a summary; ``by`` names
    the signal when it was not Ctrl-C (``SIGTERM``)."""
    try:
        finished = run.summaries()
    except (OSError, ValueError):
        finished = []
    round_ = finished[-1].round + 1 if finished else 0
    stopped = {"cause": f"interrupted ({by or 'Ctrl-C / SIGINT'}) in round {round_} of "
                        f"{config.rounds}",
               "kind": "Interrupted", "at": time.time(), "round": round_}
    there, unrecorded = _record(run, config, stopped, "the interrupt")
    if there:
        log.warning("run interrupted in round %d; continue it with %s", round_,
                    resume_advice(run.path))
    return RunInterrupted(run.path, round_, len(finished), config.rounds, unrecorded)


def refused_in_run_dir(run: RunDir, exc: BaseException) -> OSError | None:
    """The write refused for good in the run dir that ``exc`` is or wraps (``WRITE_REFUSED``)."""
    refused = refused_write_error(exc)
    where = Path(refused.filename or "/") if refused is not None else None
    return refused if where and where.absolute().is_relative_to(run.path.absolute()) else None


def record_stop(run: RunDir, config: LoopConfig, exc: BaseException) -> RunStopped:
    """Record why the run stopped and return what to raise: ``exc`` itself when it is a
    ``RunStopped``, else a ``RunStopped`` naming it; a full disk anywhere in its chain is a
    ``DiskFull`` naming the folder and the ``--resume`` command; the run dir lost
    (``RunDir.lost``), or a write refused in it (read-only, a file where a folder was), is a
    ``RunStopped`` saying so and the fix."""
    full, lost, refused = disk_full_error(exc), run.lost(), refused_in_run_dir(run, exc)
    if lost is not None:
        stop: RunStopped = RunStopped(lost)
    elif refused is not None:
        stop = RunStopped(cannot_write(
            "into the run dir", refused, f"make {run.path} writable and whole again, then "
            f"continue with {resume_advice(run.path)}"))
    elif full is not None:
        where, line = no_room(full, run.path)
        stop = DiskFull(
            f"{line}: free space on that disk (df -h {shlex.quote(str(where))}), then continue "
            f"with {resume_advice(run.path)}")
    else:
        stop = exc if isinstance(exc, RunStopped) else RunStopped(str(exc))
    stopped = {"cause": str(stop), "kind": type(stop).__name__, "at": time.time()}
    if isinstance(exc, BudgetExhausted):
        stopped["budget"] = exc.details
    if _record(run, config, stopped, f"its stop ({stop})")[0]:
        log.error("run stopped: %s; continue it with %s", stop, resume_advice(run.path))
    return stop
