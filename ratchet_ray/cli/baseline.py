"""The direct-LLM baseline: every task, ``--probes`` (5) calls each, no skills; resumable
(``python -m jobs.baseline SUITE [--out FILE] [--probes 5] [--limit N] [--temperature T] ...``).

Contracts:
- One JSON line per (task, probe) (``_row``'s keys), appended and flushed once graded, so a
  kill loses only probes in flight; a rerun skips every pair in the file (a torn last line is
  cut first). ``jobs.select_subset`` reads it.
- The Solver is the loop's own with an empty bank (the Router makes no call); probes differ
  only through sampling, each with its own seed from ``seed`` and the probe number. Without
  ``--temperature`` they sample as the loop's Solver does (``llm.temperature`` and the suite's
  own settings), so the hard subset is chosen under the conditions it is used in;
  ``--temperature`` sets them all (``suites.hooks.sampling_overrides``).
- SUITE is any registered suite, plugins included; grading is its grader; SWE-bench logs and
  trajectories go to ``<out stem>_workdir/logs/<suite>/`` (under ``infra.artifact_uri`` when
  set, as a run's do). Config layers as every job's.
- Infrastructure failures are retried as the loop retries them, at most ``INFRA_ATTEMPTS`` in
  all per probe (a failed grade regrades the same answer, a failed solve solves again); the
  row's ``infra_retries`` counts them and the job's last line sums them.
- Fails loudly as ``ratchet run``: preflight checks first; a share of probes still failing on
  infrastructure over ``infra.max_failure_rate`` stops the job with the root cause (non-zero
  exit), and their rows are not written, so a rerun retries them. A full disk (met here or by
  an actor) stops it with one line naming the folder; a rerun goes on.
- Ctrl-C or SIGTERM, from before the output folder is made to the end (one whose exception
  Python swallowed too, ``loop.signals.watching_signals``): exit 130 and one line naming the probes
  kept and the rerun; the job's actors are released on the way out.
"""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path
from typing import Any

import click

from ratchet_ray.cli.options import NumberRange, suite_config
from ratchet_ray.run_config.options import (config_option, dataset_path_option, llm_option,
                                            profile_option, set_option, workers_option)
from ratchet_ray.loop.entry import (DRY_RUN, SUITE, check_startable, print_config,
                                    version_option)
from ratchet_ray.run_config.flags import build_overrides

log = logging.getLogger(__name__)


def done_probes(out: Path) -> set[tuple[str, int]]:
    """(task_id, probe) pairs already in ``out``; a torn last line (killed mid-write) is removed.
    Any other line that is no baseline row (garbled, not UTF-8) is a ``ClickException`` naming
    the file, the line and the fix, before any probe runs."""
    if not out.is_file():
        return set()
    data = out.read_bytes()
    if data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
        out.write_bytes(data)
    done = set()
    for n, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)  # bytes: not UTF-8 is a UnicodeDecodeError, a ValueError
            done.add((str(row["task_id"]), int(row["probe"])))
        except (ValueError, KeyError, TypeError) as exc:
            raise click.ClickException(
                f"{out}:{n}: not a baseline row ({' '.join(str(exc).split())}); delete that line "
                "(the rerun redoes its probe) or pass another --out") from exc
    return done


INFRA_ATTEMPTS = 3


def _row(suite: str, task_id: str, probe: int, outcome: Any, grade: Any, failure: str,
         infra_retries: int = 0) -> dict:
    replies = [*outcome.router_replies, *outcome.solver_replies] if outcome is not None else []
    return {
        "suite": suite, "task_id": task_id, "probe": probe,
        "passed": bool(grade is not None and grade.passed and not failure),
        "exit_status": failure or grade.exit_status,
        "infra_failure": bool(failure) or bool(grade.infra_failure),
        "input_tokens": sum(r.input_tokens for r in replies),
        "output_tokens": sum(r.output_tokens for r in replies),
        "cost_usd": sum(r.cost_usd for r in replies),
        "latency_s": round(outcome.latency_s if outcome is not None else 0.0, 3),
        "backend": replies[-1].backend if replies else "",
        "model": replies[-1].model if replies else "",
        "infra_retries": infra_retries,
    }


class ProbeRun:
    """The baseline's probes while their results arrive, one method per event (retries: the
    module contract). Rows go to ``sink`` as probes finish; an infra-failure row is held until
    the job ends below the breaker's threshold (``release_held``)."""

    def __init__(self, suite: str, solvers: Any, graders: Any, shared: dict[str, Any],
                 sink: Any, breaker: Any):
        self.suite, self.solvers, self.graders, self.shared = suite, solvers, graders, shared
        self.sink, self.breaker = sink, breaker
        self.answers: dict[tuple[str, int], Any] = {}  # the Solver outcome each grade grades
        self.retries: dict[tuple[str, int], int] = {}  # infrastructure retries so far
        self.held_infra_rows: list[dict] = []
        self.written = self.passed = 0

    def on_result(self, pool: Any, result: Any) -> None:
        (self.solved if pool is self.solvers else self.graded)(result)

    def solved(self, result: Any) -> None:
        task, probe = result.key
        outcome = result.value
        if result.ok and outcome.exit_status == "ok":
            self.answers[(task.task_id, probe)] = outcome
            self.grade(task, probe, outcome)
            return
        if not result.ok:  # a full disk a Solver met stops the job (main: no_room), no retry
            from ratchet_ray.loop.execute import stop_on_full_disk

            stop_on_full_disk(result.error)
        failed = outcome if result.ok else result  # the attempt failed, or its actor died
        cause = f"{failed.exit_status}: {failed.error}"
        if not self.retried(task, probe, "solve", cause):
            self.write(_row(self.suite, task.task_id, probe, outcome, None, failed.exit_status,
                            self.retries.get((task.task_id, probe), 0)), cause)

    def graded(self, result: Any) -> None:
        task, probe = result.key
        tried = self.retries.get((task.task_id, probe), 0)
        verdict = result.value if result.ok else None
        cause = (f"{result.exit_status}: {result.error}" if not result.ok
                 else f"{verdict.exit_status}: {verdict.trace}")
        if (verdict is None or verdict.infra_failure) and self.retried(task, probe, "grade", cause):
            return
        outcome = self.answers.pop((task.task_id, probe))
        self.write(_row(self.suite, task.task_id, probe, outcome, verdict,
                        "" if result.ok else result.exit_status, tried), cause)

    def grade(self, task: Any, probe: int, outcome: Any) -> None:
        from actors.grader import GraderWorker

        extra = (self.shared[task.task_id],) if task.task_id in self.shared else ()
        self.graders.submit(GraderWorker.grade, task, outcome.output, *extra, key=(task, probe))

    def retried(self, task: Any, probe: int, what: str, cause: str) -> bool:
        """Whether the probe gets another attempt after an infrastructure failure."""
        key = (task.task_id, probe)
        if self.retries.get(key, 0) + 1 >= INFRA_ATTEMPTS:
            return False
        self.retries[key] = self.retries.get(key, 0) + 1
        log.warning("baseline %s probe %d: %s failed on infrastructure (%s); attempt %d of %d",
                    task.task_id, probe, what, cause[:300], self.retries[key] + 1,
                    INFRA_ATTEMPTS)
        if what == "grade":
            self.grade(task, probe, self.answers[key])
        else:
            from actors.solver import SolverWorker

            self.solvers.submit(SolverWorker.run, task, "baseline", probe, key=(task, probe))
        return True

    def write(self, row: dict, cause: str = "") -> None:
        if row["infra_failure"] and cause:
            self.held_infra_rows.append(row)
            self.breaker.observe_failure(row["task_id"], cause)  # raises once the job must trip
            return
        self.sink.write(json.dumps(row, sort_keys=True) + "\n")
        self.sink.flush()
        self.written += 1
        self.passed += int(row["passed"])

    def release_held(self) -> None:
        """The job ended below the breaker's threshold: write the held infra-failure rows."""
        for row in self.held_infra_rows:
            self.write(row)


def run_baseline(config: Any, out: Path, probes: int, limit: int | None,
                 models: Any = None) -> tuple[int, int]:
    """Fill ``out`` up to ``probes`` probes per task; returns (probes run now, probes passed now).

    ``models`` (a ``loop.runtime.Models``) replaces the LLM, as in ``run_loop``.
    """
    from actors.grader import share_precomputed
    from actors.solver import SolverWorker
    from actors.draining import drain
    from ratchet_ray.loop.runtime import Models, make_grader_factory, make_solver_factory
    from ratchet_ray.loop.session import RunRuntime
    from ratchet_ray.loop.signals import watching_signals
    from ratchet_ray.suites import suite_for

    tasks = suite_for(config).load_tasks(config)[:limit]
    done = done_probes(out)
    todo = [(t, p) for t in tasks for p in range(probes) if (t.task_id, p) not in done]
    if not todo:
        return 0, 0
    workdir = out.parent / f"{out.stem}_workdir"
    workdir.mkdir(parents=True, exist_ok=True)
    # The job's model servers and rate limiters are its own (scope), released when it ends, and
    # by themselves if this process is killed (the runtime's lease).
    scope = f"baseline_{uuid.uuid4().hex[:12]}"
    # A stop whose exception Python swallowed (its handler run in an at-fork hook or a
    # ``__del__``) is raised again between waits: the job went on and ended with exit 0.
    with watching_signals() as again, RunRuntime(config, scope, models or Models()) as rt:
        again()
        breaker = rt.breaker("baseline", -1, len(todo), retry="rerun the same command")
        # The job's artifacts (trajectories, grader logs) reach the workdir on this node
        # through a service actor, whichever node the actors run on (or infra.artifact_uri).
        artifacts = rt.artifacts(workdir, config.infra.artifact_uri)
        solvers = rt.pool("solver", make_solver_factory(
            config, workdir, rt.models, solver_cache=False, artifacts=artifacts),
            config.workers.solvers)
        graders = rt.pool("grader", make_grader_factory(config, workdir, artifacts),
                          config.workers.graders)
        # Expected outputs (MBPP+) of every task, computed once and shared with every grader.
        shared = share_precomputed(graders, [task.task_id for task, _probe in todo])
        solvers.heal()  # up before the first task (bounded: a Solver that cannot start says why)
        again()
        with out.open("a") as sink:
            probing = ProbeRun(config.suite, solvers, graders, shared, sink, breaker)
            for task, probe in todo:
                solvers.submit(SolverWorker.run, task, "baseline", probe, key=(task, probe))
            drain([solvers, graders], probing.on_result, tick=again)
            probing.release_held()
    return probing.written, probing.passed


@click.command("baseline", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("suite", type=SUITE)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL output (default results/baselines/<suite>.jsonl).")
@click.option("--probes", type=click.IntRange(min=1), default=5, show_default=True,
              help="Calls (probes) per task; a rerun adds only the missing ones.")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N tasks of the suite.")
@click.option("--temperature", type=NumberRange(0.0, 2.0),
              help="Sampling temperature (probes differ only through sampling); default: the "
                   "loop Solver's (llm.temperature, the Default's 1.0, and the suite's own, "
                   "e.g. the SWE-bench agent's).")
@llm_option("LLM backend (default: the config's, else local).")
@profile_option()
@config_option()
@set_option("Config override, e.g. --set llm.base_url=http://127.0.0.1:8000/v1 (repeatable).")
@dataset_path_option()
@workers_option()
@DRY_RUN
@version_option()
def main(suite: str, out: Path | None, probes: int, limit: int | None, temperature: float | None,
         llm: str | None, profiles: tuple, config_files: tuple, sets: tuple,
         dataset_path: Path | None, workers: int | None, dry_run: bool) -> None:
    """Direct-LLM baseline of SUITE (no skills), resumable."""
    # The baseline probes the whole suite: the subset it will choose (a profile's) is not
    # made yet, so none is checked for.
    overrides = [*build_overrides(suite, llm=llm, dataset_path=dataset_path, workers=workers),
                 "subset=null"]
    if temperature is not None:  # else the loop's own sampling (the config's)
        overrides.append(f"llm.temperature={temperature}")
    config = suite_config(suite, config_files, [*overrides, *sets], profiles)
    if temperature is not None:  # the suite's own sampling too (its plugin is loaded now)
        from ratchet_ray.suites.hooks import sampling_overrides

        own = sampling_overrides(suite, temperature)
        if own:
            config = suite_config(suite, config_files, [*overrides, *own, *sets], profiles)
    check_startable(config)  # before the output file exists or Ray starts
    out = out or Path(config.results_dir) / "baselines" / f"{suite}.jsonl"
    if dry_run:
        click.echo(f"# output: {out}")
        print_config(config)
        return
    from actors.pools import PoolError
    from ratchet_ray.loop.breaker import RunStopped
    from ratchet_ray.loop.runtime import check_ray
    from ratchet_ray.loop.signals import unwind_on_sigterm
    from ratchet_ray.storage.fsutil import disk_full_error, no_room

    # From here SIGTERM is Ctrl-C: the stop is told and the rerun named (until ray.init it was
    # the default action, the process gone with -15 and nothing said).
    unwind_on_sigterm()
    try:
        check_ray()  # an unreachable RAY_ADDRESS or a leftover head: before the output folder
        out.parent.mkdir(parents=True, exist_ok=True)
        ran, passed = run_baseline(config, out, probes, limit)
    except Exception as exc:  # noqa: BLE001 - a full disk anywhere (driver, actor), named
        full = disk_full_error(exc)
        if full is not None:
            raise click.ClickException(
                f"baseline stopped: {no_room(full, out.parent)[1]}: free space on that disk, "
                f"then rerun the same command (it keeps the probes written to {out} and runs "
                "the rest)") from exc
        if isinstance(exc, (RunStopped, PoolError)):  # the cause and its fix; lost probes redone
            raise click.ClickException(f"baseline stopped: {exc}") from exc
        raise
    except KeyboardInterrupt:  # Ctrl-C: every probe written is kept; a rerun runs the rest
        click.echo(f"interrupted: {len(done_probes(out))} probe(s) kept in {out}; rerun the "
                   "same command to run the rest", err=True)
        raise SystemExit(130) from None
    total = len(done_probes(out))
    click.echo(f"{out}: {ran} probe(s) run now ({passed} passed); {total} in the file")
    click.echo(infra_retry_note(out))


def infra_retry_note(out: Path) -> str:
    """One line: how many probes of ``out`` needed an infrastructure retry and how many still
    failed on infrastructure after them."""
    text = out.read_text() if out.is_file() else ""  # nothing run yet: no row, no retry
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    retried = [r for r in rows if r.get("infra_retries")]
    still = sum(1 for r in retried if r["infra_failure"])
    return (f"{len(retried)} probe(s) retried after an infrastructure failure "
            f"(at most {INFRA_ATTEMPTS} attempts each), {still} of them still failed on "
            f"infrastructure")


COMMANDS = [main]
