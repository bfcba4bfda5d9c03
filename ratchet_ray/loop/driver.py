"""The skill loop driver: orchestration only; state lives in the actors and the evidence.

One round is the list ``ROUND_PHASES``, run in order::

    eval -> rollback -> train -> critic -> metasynth -> synth -> curate -> snapshot

Which phases are critical, what reruns and what a failure does: docs/architecture.md (the phase
table) and docs/running.md ("When the infrastructure breaks", "Budget"). Contracts:
- ``run_loop(config)`` creates ``results/<suite>/<run-id>/`` and runs ``config.rounds`` rounds;
  ``run_loop(None, resume=RUN_DIR)`` reloads that run's ``config.yaml`` and task ids, rebuilds
  the rollback gate from the finished rounds' eval pass@1, and continues from the first round
  without a ``summary.json``; ``resume_sets`` may only raise ``budget.*`` limits, and a
  ``config.yaml`` edited since the run last ran is compared with the run's record of its
  settings (``run_config.resumed``): refused, or warned in run.log and on stderr. An
  uninterrupted run and a killed-and-resumed one end with the same capsules.
- A critical phase that fails stops the run; a soft one is listed in the round's
  ``failed_steps``. ``RayActorError`` or ``CriticIncomplete`` reruns a phase, up to
  ``PHASE_ATTEMPTS`` in all, then ``RunStopped`` (in a soft phase too).
- After each round: ``round_NN/summary.json`` (its ``suite_report`` from the suite's
  ``round_report`` hook), a ``round`` evidence row and ``loop.json``.
- Before the first round, the graders' precomputed inputs of every task (MBPP+: the expected
  outputs) are computed once and shared (``actors.grader.share_precomputed``); a failure stops
  the run. Then, on a fresh run, the suite's ``before_rounds`` hook grades on the Grader pool; a
  message it returns stops the run (``PreflightFailed``).
- ``RunStopped`` (preflight, breaker, actor start, ``BudgetExhausted``), a full disk met by the
  driver or an actor (``DiskFull``), and Ctrl-C (SIGINT, a stopped Ray job; SIGTERM through
  ``session.ray_session``; inside a DuckDB query too) leave the round unrecorded and are
  recorded by ``loop.stops``; an interrupt is raised as ``RunInterrupted`` carrying the round
  reached, which the CLI turns into one line with the exact ``--resume`` command.
"""

from __future__ import annotations

import logging
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import ray
from ray.exceptions import RayActorError

from actors.grader import share_precomputed
from actors.pool_errors import failure_text
from actors.pools import PoolError
from ratchet_ray.bank.checkpoints import available_rounds
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.run_config.files import dump_config
from ratchet_ray.run_config.resumed import RECORD_FILE
from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.schema import to_records
from ratchet_ray.evidence.store import EvidenceStore, query_interrupted
from ratchet_ray.storage.fsutil import disk_full
from ratchet_ray.governance.rollback import RollbackGate
from ratchet_ray.loop import phases
from ratchet_ray.loop.breaker import PreflightFailed, RunStopped
from ratchet_ray.loop.grade_pool import grade_all, reap_after_round
from ratchet_ray.loop.budget import RunBudget, resume_settings
from ratchet_ray.loop.phases import CriticIncomplete, LoopContext
from ratchet_ray.loop.progress import LoopProgress
from ratchet_ray.loop.rundir import CONFIG_FILE, SUMMARY_FILE, RunDir, resume_advice
from ratchet_ray.loop.runtime import Models, RayStartError, check_ray
from ratchet_ray.loop.session import RunRuntime
from ratchet_ray.loop.signals import (hold_sigterm, interrupting_signal, note_ctrl_c,
                                      raise_if_signalled, unwind_on_sigterm)
from ratchet_ray.loop.stops import STOPPED_FILE, record_interrupt, record_stop, refused_in_run_dir
from ratchet_ray.suites import before_rounds, hooks, split_tasks, suite_for
from ratchet_ray.report.otel import start_tracing
from ratchet_ray.report.tracking import Trackers, start_tracking
from ratchet_ray.types import RoundSummary, Task

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Phase:
    name: str
    run: Callable[[LoopContext, int, RoundSummary], str]
    critical: bool = False
    spends: bool = False
    """It calls an LLM: it does not start once the budget is spent."""
    rerunnable: bool = True
    """Running it again after a failure redoes only what is missing (see ``phases``)."""


PHASE_ATTEMPTS = 3
RETRY_PAUSE_S = 2.0
"""Between attempts of a phase, so a model server that a supervisor restarts can come back."""
TRANSIENT = (RayActorError, CriticIncomplete)
"""Failures that another attempt of the phase may not meet: a process died, a backend refused."""

ROUND_PHASES: tuple[Phase, ...] = (
    Phase("eval", phases.evaluate, critical=True, spends=True),
    # The gate observes each round once: a second observation would count a regression twice.
    Phase("rollback", phases.rollback_check, critical=True, rerunnable=False),
    Phase("train", phases.train, critical=True, spends=True),
    Phase("critic", phases.critic, critical=True, spends=True),
    Phase("metasynth", phases.metasynth, spends=True),
    Phase("synth", phases.synth, spends=True),
    Phase("curate", phases.curate),
    Phase("snapshot", phases.snapshot, critical=True),
)


def run_round(ctx: LoopContext, round_: int) -> RoundSummary:
    """Run every phase of ``round_`` and record the round."""
    started = time.monotonic()
    summary = RoundSummary(round=round_)
    report_start = hooks.round_report(ctx.config, None)  # the suite's readings at the start
    for phase in ROUND_PHASES:
        raise_if_signalled()  # a stop whose KeyboardInterrupt was lost (Python, DuckDB) stops here
        gone = ctx.run.lost() or _deleted(ctx, round_)  # under the running run: stop here
        if gone is not None:
            raise RunStopped(gone)
        if phase.spends and ctx.budget is not None:
            ctx.budget.check(f"before round {round_} {phase.name}")
        ctx.progress.phase(round_, phase.name)
        log.info("round %d: %s", round_, phase.name)
        try:
            note = run_phase(ctx, phase, round_, summary)
        except Exception as exc:  # a soft phase's failure is recorded and the round goes on
            if phase.critical or isinstance(exc, (RunStopped, PoolError)) or disk_full(exc) \
                    or query_interrupted(exc):  # Ctrl-C during one of its queries: DuckDB's words
                raise  # ... unless the run itself cannot go on (actors that cannot start)
            log.exception("round %d: phase %s failed", round_, phase.name)
            summary.failed_steps.append(f"{phase.name}: {type(exc).__name__}: {exc}"[:500])
            note = f"FAILED ({type(exc).__name__})"
        ctx.progress.end_phase(note)
        log.info("round %d: %s: %s", round_, phase.name, note)
    # What killed graders or agents of this run left on their nodes (e.g. a suite's containers).
    reap_after_round(ctx.actors.graders)
    if report_start is not None:
        summary.suite_report = hooks.round_report(ctx.config, report_start) or {}
    finish_round(ctx, summary, time.monotonic() - started)
    return summary


def _deleted(ctx: LoopContext, round_: int) -> str | None:
    """What of the run's record was deleted while it ran (an earlier round's folder, evidence
    parts it read), as a stop's cause and its fix: going on would record the run without it."""
    gone = [*(ctx.run.round_file(k, SUMMARY_FILE) for k in range(round_)
              if not ctx.run.round_file(k, SUMMARY_FILE).is_file()), *ctx.store.vanished()]
    return None if not gone else (
        f"{len(gone)} file(s) of the run dir were deleted while the run ran (e.g. {gone[0]}): "
        f"going on would record the run without them; restore them from a copy of the run dir "
        f"and continue with {resume_advice(ctx.run.path)}, or start the run anew")


def run_phase(ctx: LoopContext, phase: Phase, round_: int, summary: RoundSummary) -> str:
    """``phase`` once, or again after a ``TRANSIENT`` failure (module contracts); raises
    ``RunStopped`` when its last attempt fails that way, so no round is recorded with its work
    missing."""
    attempts = PHASE_ATTEMPTS if phase.rerunnable else 1
    for attempt in range(1, attempts + 1):
        try:
            return phase.run(ctx, round_, summary)
        except TRANSIENT as exc:
            cause = failure_text(exc) if isinstance(exc, RayActorError) else \
                f"{type(exc).__name__}: {exc}"  # a dead actor named: class, pid, signal, log
            if attempt == attempts:
                raise RunStopped(
                    f"round {round_} {phase.name}: failed {attempt} time(s), last: "
                    f"{cause[:1500]}; {resume_advice()} redoes only what it left undone") from exc
            log.warning("round %d: phase %s attempt %d of %d failed (%s); running it again",
                        round_, phase.name, attempt, attempts, cause[:500])
            time.sleep(RETRY_PAUSE_S * attempt)
    raise AssertionError("unreachable")  # the loop returns or raises


def finish_round(ctx: LoopContext, summary: RoundSummary, wall_s: float) -> None:
    """Usage totals from the evidence, then the round row, summary.json and loop.json."""
    with ctx.store.connect() as con:
        tokens_in, tokens_out, cost = nq.fetch_one(con, "llm_spend_of_round", round=summary.round)
        recorded = nq.fetch_one(con, "round_rows_of", round=summary.round)[0]
    summary.input_tokens, summary.output_tokens = int(tokens_in), int(tokens_out)
    summary.cost_usd, summary.wall_s = float(cost), wall_s
    if not recorded:  # a resumed round may have written its row just before the driver died
        row = to_records("round", [summary])[0] | {"run_id": ctx.run.run_id}
        ctx.store.append("round", summary.round, [row])
    ctx.run.write_summary(summary)  # last: its presence marks the round finished
    ctx.run.write_loop_json(ctx.config, ctx.run.summaries())
    ctx.progress.round_done(summary)


# ---- run setup ---------------------------------------------------------------------------------
def _pick(tasks: list[Task], ids: list[str], where: str) -> list[Task]:
    by_id = {t.task_id: t for t in tasks}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise ValueError(f"{where}: {len(missing)} task id(s) are not in the suite (e.g. "
                         f"{missing[:3]}); was the dataset changed? use the original "
                         "--dataset-path")
    return [by_id[i] for i in ids]


class RunSetupError(ValueError):
    """The run cannot start (bad run dir, suite, dataset or split); the message says the fix."""


def open_run(config: LoopConfig | None, resume: Path | None,
             resume_sets: Sequence[str] = ()) -> tuple[RunDir, LoopConfig, list[Task], list[Task]]:
    """Create a new run dir from ``config`` or reopen ``resume`` (its ``budget.*`` overrides
    ``resume_sets`` applied and saved); returns the run and its tasks. ``RunSetupError`` for
    anything the user can fix (nothing has been run yet)."""
    try:
        opened = _open_run(config, resume, resume_sets)
        opened[0].acquire("ratchet run --resume" if resume else "ratchet run")  # the one writer
        if resume is not None and resume_sets:
            dump_config(opened[1], opened[0].path / CONFIG_FILE)  # later resumes keep it
        if resume is not None:  # what the resumed rounds run with: the next resume compares
            dump_config(opened[1], opened[0].path / RECORD_FILE)
        return opened
    except (FileNotFoundError, FileExistsError, ValueError, KeyError) as exc:
        raise RunSetupError(str(exc).strip("'\"")) from exc


def _open_run(config: LoopConfig | None, resume: Path | None, resume_sets: Sequence[str] = ()
              ) -> tuple[RunDir, LoopConfig, list[Task], list[Task]]:
    if resume is not None:
        run = RunDir.open(resume)
        run.check_writable()
        run.check_bank()
        run.check_name()
        config, run.setting_edits = resume_settings(run.path / CONFIG_FILE, resume_sets)
        tasks = suite_for(config).load_tasks(config)
        train = _pick(tasks, run.train_ids(), str(run.path / "train_ids.json"))
        eval_ = _pick(tasks, run.eval_ids(), str(run.path / "eval_ids.json"))
        return run, config, train, eval_
    if config is None:
        raise ValueError("run_loop needs a config for a new run (or resume=RUN_DIR)")
    if config.bank.pack:  # a bad pack is refused before the run dir exists (docs/skill-packs.md)
        from ratchet_ray.bank.pack_import import check_pack

        check_pack(config.bank.pack, config.suite, config.bank.allow_other_suite)
    tasks = suite_for(config).load_tasks(config)
    train, eval_ = split_tasks(tasks, config)
    run = RunDir.create(config, [t.task_id for t in train], [t.task_id for t in eval_])
    return run, config, train, eval_


def resume_point(run: RunDir, config: LoopConfig) -> tuple[int, RollbackGate]:
    """The first unfinished round and the rollback gate as it stood before it."""
    done = run.summaries()
    history = [(s.round, s.eval.pass_at_1) for s in done if s.eval is not None]
    gate = RollbackGate.from_history(history, config.rollback.threshold,
                                     config.rollback.consecutive, config.rollback.enabled)
    return (done[-1].round + 1 if done else 0), gate


def run_loop(config: LoopConfig | None, *, resume: Path | None = None, models: Models = Models(),
             show_progress: bool = True, announce: Callable[[Path], None] | None = None,
             resume_sets: Sequence[str] = ()) -> Path:
    """Run (or resume) a skill loop; returns the run dir (module contracts). ``models``
    replaces every actor's LLM and embedder (tests inject doubles there); ``announce`` gets the
    run dir as soon as it exists."""
    unwind_on_sigterm()
    note_ctrl_c()
    release_sigterm = hold_sigterm()  # a SIGTERM until the try below is taken there, recorded
    try:
        check_ray()  # an unreachable address or a leftover head: refused before the run dir
        run, config, train_tasks, eval_tasks = open_run(config, resume, resume_sets)
        if announce is not None:
            announce(run.path)
        handler = run.attach_log()
        log.info("%s run %s: %d train / %d eval tasks, %d rounds",
                 "resuming" if resume else "starting", run.path, len(train_tasks),
                 len(eval_tasks), config.rounds)
        for line in run.setting_edits:  # config.yaml's operational keys edited: said, and kept
            log.warning(line)
            print(f"warning: {line}", file=sys.stderr)
    except BaseException:
        release_sigterm()
        raise
    tracker = None
    finished = discard = False
    try:
        release_sigterm()  # a stop while the run starts is recorded as one mid-round is
        # The finished rounds' summaries are read (and a damaged one refused, naming the file
        # and the fix) before any actor starts.
        next_round, gate = resume_point(run, config)
        # Ray, the run's lease, the preflight and every actor of the run, released on the way
        # out however the run ends; a crashed local-model probe's log lands in the run dir.
        with RunRuntime(config, run.run_id, models, log_dir=run.path) as rt:
            runtime = rt.start_run_actors(run.path, train_tasks)
            # Computed once for the run (MBPP+: the expected outputs, in one batch), then carried
            # to the graders of every node through the object store.
            shared_inputs = share_precomputed(runtime.graders,
                                              [t.task_id for t in (*train_tasks, *eval_tasks)])
            # The bank round 0 starts from, made once: snapshots a resumed run finds deleted
            # are not made again from its later bank (a rollback would restore that instead);
            # a rollback that needs one missing stops on a line saying so.
            if next_round == 0 and not available_rounds(run.path):
                # The suite's own checks on the run's Grader pool (``before_rounds``)
                problem = before_rounds(config, lambda items: grade_all(runtime.graders, items),
                                        [*train_tasks, *eval_tasks], run.path)
                if problem:
                    raise PreflightFailed(problem)
                ray.get(runtime.bank.ensure_default_metaskill.remote(config.suite, round_=0))
                if config.bank.pack:  # the bank starts from a skill pack, on probation
                    for line in ray.get(runtime.bank.import_pack.remote(
                            config.bank.pack, round_=0,
                            allow_other_suite=config.bank.allow_other_suite,
                            probation=config.bank.probation)):
                        log.info("bank.pack: %s", line.line())
                ray.get(runtime.bank.snapshot.remote(0))
            store = EvidenceStore(run.path, cached=True)  # long-lived: loads only new parts
            budget = RunBudget.for_run(config.budget, store, str(run.path))
            # MLflow tracking and OpenTelemetry tracing: off by default; neither ever raises
            tracker = Trackers(start_tracking(config, run.path), start_tracing(config, run.path))
            with LoopProgress(config.rounds, enabled=show_progress, budget=budget) as progress:
                ctx = LoopContext(config=config, run=run, store=store, actors=runtime,
                                  train_tasks=train_tasks, eval_tasks=eval_tasks, gate=gate,
                                  progress=progress, budget=budget, shared_inputs=shared_inputs)
                for round_ in range(next_round, config.rounds):
                    tracker.round_done(run_round(ctx, round_))  # after the round is durable
            log.info("run %s finished %d rounds", run.path, config.rounds)
            finished = True
            run.write_loop_json(config, run.summaries())  # mended even when no round was left
            (run.path / STOPPED_FILE).unlink(missing_ok=True)
            return run.path
    except (RunStopped, PoolError) as exc:
        stop = record_stop(run, config, exc)
        if stop is exc:
            raise
        raise stop from exc
    except RayStartError:
        discard = resume is None and not run.summaries()  # a new run that never reached Ray
        raise
    except KeyboardInterrupt as exc:  # Ctrl-C, a Ray job stopped (its SIGINT), or SIGTERM
        raise record_interrupt(run, config, interrupting_signal() or str(exc)) from exc
    except BaseException as exc:
        if query_interrupted(exc):  # Ctrl-C (or SIGTERM) that came while DuckDB ran a query
            raise record_interrupt(run, config, interrupting_signal()) from exc
        # A full disk wherever it came from (the driver's files, an actor's, a part), the run dir
        # gone or a write refused in it
        if disk_full(exc) or run.lost() is not None or refused_in_run_dir(run, exc) is not None:
            raise record_stop(run, config, exc) from exc
        log.exception("run stopped; continue it with %s", resume_advice(run.path))
        raise
    finally:
        if tracker is not None:  # bounded wait (tracking.timeout_s), never raises
            tracker.close(finished)
        run.detach_log(handler)
        run.release()
        if discard:
            shutil.rmtree(run.path, ignore_errors=True)
