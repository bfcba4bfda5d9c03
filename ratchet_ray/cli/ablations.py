"""The paper's ablation sweep: ``python -m jobs.ablations SUITE --arms default,A1,...,A8 --seeds
42,7,13 --rounds R [...]`` (the whole workflow: docs/ablations.md). SUITE: any registered
suite, plugins included (``--set suite_plugins=[path.py]`` reaches every run, or
``$RATCHET_SUITES``).

Each run's config layers: Default -> suite file -> ``--profile`` files -> the arm's
``configs/ablations/<arm>.yaml`` -> flags and ``--set``. Every (arm, seed) is its own Ray job
(``python -m jobs.skill_loop`` with this Python, from this folder) on the cluster at
``--address`` / ``RAY_ADDRESS`` (dashboard ``http://HOST:8265`` or GCS ``HOST:6379`` / ``auto``),
else (``local`` too) on a head this command starts on 127.0.0.1 and stops at the end; at most
``--parallel`` at once, followed until they end (logs copied to
``<out>/logs/<arm>_s<seed>.log``). Ctrl-C or SIGTERM stops them all; ``--stop`` / ``--status``
act from another shell. Rerunning resumes: finished arm-seeds are skipped, unfinished ones
``--resume``, running ones followed again.
``budget.max_tokens`` / ``budget.max_cost_usd`` bound the whole sweep; all jobs share one rate
limiter. A failing arm-seed does not stop the others: it is listed at the end and the exit
status is 1. ``ablations.md`` / ``ablations.json`` in ``--out`` are written after the runs
(``--report-only``: without running); ``--dry-run`` checks and prints each plan, starting
nothing.
"""

from __future__ import annotations

import math
import os
import shlex
import signal
import time
from pathlib import Path

import click

from ratchet_ray.report.ablation_report import write_report
from ratchet_ray.storage import fsutil
from ratchet_ray.cli.options import cannot_write, exit_on_signal, one_line
from ratchet_ray.run_config.options import (bank_option, csv_list, dataset_path_option,
                                            llm_option, profile_option, seeds_option, set_option,
                                            slice_options, workers_option)
from ratchet_ray.loop.entry import DRY_RUN, SUITE, print_config, version_option
from ratchet_ray.loop.ray_address import LOCAL
from ratchet_ray.sweep.ray_head import RayHeadError, ray_cluster
from ratchet_ray.sweep.folder import (STOP_FILE, SWEEP_FILE, check_sweep_file, lock_sweep,
                                      recorded_spend, with_recorded_budget, write_status)
from ratchet_ray.sweep.spec import (ARMS, JobOutcome, SweepError, SweepSpec, child_config,
                                    cpus_per_run, job_name, plan_jobs, split_sets, sweep_command)


def _check_runs(spec: SweepSpec, arms: list[str], seeds: list[int]) -> None:
    """Every arm's config (backend, subset), the runs' size, the skill pack a new run imports
    (read as the import reads it: manifest, hashes, every skill parsed) and the tracking store,
    before anything is written or started (``SweepError`` / ``click.UsageError`` naming the
    fix); ``--dry-run`` runs the same checks."""
    from ratchet_ray.loop.entry import pack_problems
    from ratchet_ray.run_config.flags import loop_size_problems
    from ratchet_ray.report.tracking import tracking_problems

    configs = [child_config(spec, arm, seeds[0]) for arm in arms]
    problems = list(dict.fromkeys(p for c in configs for p in loop_size_problems(c)))
    problems += dict.fromkeys(p for c in configs for p in pack_problems(c))
    problems += tracking_problems(configs[0])  # one store for the sweep: checked once
    if problems:
        raise click.UsageError("; ".join(problems))  # one line


@click.command("ablations", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("suite", type=SUITE)
@click.option("--arms", default=",".join(ARMS), show_default=True,
              callback=csv_list(str, "default,A1,A4"),
              help="Arms to run: default and/or the paper's A1..A8 (the default list) and "
                   "A9, A10 beyond it (configs/ablations/<arm>.yaml), or the path of an arm "
                   "file of yours (my_arm.yaml: its runs are named my_arm).")
@seeds_option("42,7,13", "Seeds to run each arm with, comma-separated (each arm-seed is one run).")
@click.option("--rounds", type=click.IntRange(min=1),
              help="Rounds per run (default: the suite's paper value, 100 MBPP+ / 20 SWE-bench).")
@slice_options()
@llm_option()
@dataset_path_option("Local dataset file for every run (offline use).")
@workers_option("Solver and grader actors per run.")
@bank_option("Skill pack (ratchet skill export) every run's bank starts from, on probation "
             "(bank.pack).")
@profile_option()
@set_option("Config override for every run, e.g. --set llm.base_url=http://...")
@click.option("--parallel", type=click.IntRange(min=1), default=1, show_default=True,
              help="Jobs running at once.")
@click.option("--address", envvar="RAY_ADDRESS",
              help="The cluster: its dashboard URL (http://HOST:8265, as for `ray job submit`)"
                   " or GCS address (HOST:6379, or auto on its head) [env RAY_ADDRESS]; run the"
                   " sweep on the head. Default: a local head started for the sweep.")
@click.option("--tag", default="main", show_default=True,
              help="Names the default --out: results/<suite>/ablations_<tag>.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Sweep folder (default results/<suite>/ablations_<tag>).")
@click.option("--report-only", is_flag=True, help="Only (re)write ablations.md / .json.")
@click.option("--status", "show_status", is_flag=True,
              help="List the sweep's Ray jobs (needs --address) and exit.")
@click.option("--stop", "stop", is_flag=True,
              help="Stop the sweep's running Ray jobs (needs --address) and exit.")
@DRY_RUN
@version_option()
def main(suite: str, arms: list[str], seeds: list[int], parallel: int, tag: str,
         out_dir: Path | None, report_only: bool, sets: tuple[str, ...], address: str | None,
         show_status: bool, stop: bool, dry_run: bool, **flags) -> None:
    """Run the ablation arms x seeds of SUITE as Ray jobs and report mean ± std per arm."""
    out_dir = (out_dir or Path("results") / suite / f"ablations_{tag}").resolve()
    if address == LOCAL:  # a Ray of this command's own (as for a run): the head it starts
        address = None
    if address and address.startswith("ray://"):
        raise click.UsageError(f"--address {address}: Ray Client addresses are not supported; "
                               "give the dashboard URL (http://HOST:8265) or the GCS address "
                               "(HOST:6379, or auto) and run the sweep on the head, next to its "
                               "--out folder and the runs' dirs")
    with one_line(SweepError, error=click.UsageError):
        shared, budget = split_sets(sets)
    spec = SweepSpec(suite=suite, out_dir=out_dir, sets=shared, budget=budget,
                     profiles=flags.pop("profiles"), **flags)
    if show_status or stop:
        return _manage(out_dir, address, stop)
    # What continues this sweep, named wherever an arm-seed did not finish (never the single
    # run's --resume: a run resumed alone leaves the sweep's lock, budget, status and report).
    rerun = sweep_command(click.get_current_context().command_path, spec, arms, seeds, parallel,
                          address)
    outcomes: list[JobOutcome] = []
    if dry_run:
        return _dry_run(spec, arms, seeds)
    if address and not report_only:  # nothing listening there: refused before --out is made
        _refuse_unreachable(address)
    if report_only:
        if not out_dir.is_dir():
            raise click.UsageError(f"--report-only: {out_dir} does not exist; pass the --out (or "
                                   "--tag) of a sweep that has run")
        if not (out_dir / SWEEP_FILE).is_file() and next(out_dir.rglob("loop.json"), None) is None:
            raise click.UsageError(f"--report-only: {out_dir} is not a sweep folder (no "
                                   f"{SWEEP_FILE}, no run dir below it); pass the --out (or "
                                   "--tag) of a sweep that has run")
        _refuse_while_running(out_dir)
    else:
        from ratchet_ray.loop.signals import hold_sigterm

        # SIGTERM unwinds as Ctrl-C does, held while --out is made and raised in the try below,
        # where the stop is told (it was the default action until _run: exit -15, not a word)
        signal.signal(signal.SIGTERM, exit_on_signal)
        release_sigterm = hold_sigterm()
        with one_line(SweepError, error=click.UsageError):
            _check_runs(spec, arms, seeds)  # before --out is written
            held = lock_sweep(out_dir)  # noqa: F841 (one sweep per --out until this exits)
            spec = with_recorded_budget(spec)
            jobs, skipped = plan_jobs(spec, arms, seeds)
            with cannot_write(f"the sweep's files into {out_dir}", "free space there (or pass "
                              "another --out), then rerun the same command", out_dir):
                check_sweep_file(spec, rerun)
        outcomes += skipped
        for outcome in skipped:
            click.echo(f"skip   {outcome.name}: {outcome.message}", err=True)
        interrupted = None
        try:
            release_sigterm()
            if jobs:
                _run(spec, jobs, parallel, arms, seeds, address, outcomes, rerun)
        except (KeyboardInterrupt, SystemExit) as exc:  # its jobs are stopped by now
            interrupted = exc.code if isinstance(exc, SystemExit) else 130
        except BaseException:
            _save_status(out_dir, outcomes)  # the error on its way says what went wrong
            raise
        unsaved = _save_status(out_dir, outcomes)
        if interrupted is not None:
            where = f"status in {out_dir / 'status.json'}" if unsaved is None else unsaved
            what = "the sweep's jobs were stopped" if any(o.action != "skipped" for o in outcomes) \
                else "no job of the sweep had started"
            click.echo(f"interrupted: {what} ({where}); rerun the same command to resume them: "
                       f"`{rerun}`", err=True)
            raise SystemExit(interrupted)
        if unsaved is not None:
            raise click.ClickException(f"{unsaved}; make {out_dir} writable, then rerun the "
                                       f"same command (the runs finished are kept): `{rerun}`")
    failures = {o.name: o.cause or o.message for o in outcomes if not o.ok}
    from ratchet_ray.evidence.store import UnreadableEvidence

    with one_line(UnreadableEvidence), cannot_write(  # `python -m jobs.ablations`: no `ratchet`
            "the sweep's report", "free space there, then rerun the same command (the runs "
            "finished are kept)", out_dir):
        md, js, summaries = write_report(out_dir, failures=failures)
    for s in summaries:
        gain = s.rolling_gain
        click.echo(f"{s.arm:>8}: rolling gain {gain.mean:+.3f}" if gain.mean is not None
                   else f"{s.arm:>8}: no eval rounds", err=True)
    click.echo(f"{md}\n{js}")
    if failures:
        spent = sorted(o.name for o in outcomes if o.budget)
        if spent:
            click.echo(f"the sweep's budget ({', '.join(spec.budget)}, over all arm-seeds) is "
                       f"spent; {', '.join(spent)} stopped cleanly. Rerun the same command with "
                       "a higher --set budget.<limit>=... to continue them", err=True)
        click.echo(f"{len(failures)} arm-seed(s) did not finish: {', '.join(sorted(failures))}; "
                   f"fix the cause and rerun the same command to resume them: `{rerun}`",
                   err=True)
        raise SystemExit(1)


def _refuse_while_running(out_dir: Path) -> None:
    """``--report-only`` while the sweep in ``out_dir`` runs (its writer lock held): refused in
    one line naming ``--status``. Its runs are mid-round and it rewrites the report when it ends,
    so a report now would be a partial table standing in the folder as if final."""
    from ratchet_ray.storage.runlock import holder

    running = holder(out_dir)
    if running is None:
        return
    who = (f"pid {running.get('pid')} on host {running.get('host')}" if running.get("pid")
           else "its holder unknown")
    raise click.UsageError(f"--report-only: the sweep in {out_dir} still runs ({who}) and writes "
                           "its report when it ends; wait for it, or list its jobs with --status "
                           "(with its --address)")


def outcome_state(outcome: JobOutcome) -> str:
    """The word an arm-seed's line starts with: ``done``, ``BUDGET`` (the sweep's budget ran
    out), ``STOPPED`` (stopped, or never started: Ctrl-C, ``--stop``; no exit code) or
    ``FAILED``."""
    if outcome.ok:
        return "done  "
    return "BUDGET" if outcome.budget else "STOPPED" if outcome.returncode is None else "FAILED"


def _save_status(out_dir: Path, outcomes: list[JobOutcome]) -> str | None:
    """Write ``status.json``; what kept it from being written, or None."""
    try:
        write_status(out_dir, outcomes)
    except OSError as exc:
        return fsutil.cannot_write("the sweep's status", exc, target=out_dir)
    return None


def _dry_run(spec: SweepSpec, arms: list[str], seeds: list[int]) -> None:
    """``--dry-run``: each arm-seed's plan and the config a new one resolves; nothing written."""
    with one_line(SweepError, error=click.UsageError):
        _check_runs(spec, arms, seeds)
        jobs, skipped = plan_jobs(with_recorded_budget(spec), arms, seeds)
    for outcome in skipped:
        click.echo(f"# {outcome.name}: skip ({outcome.message})")
    planned = {job_name(arm, seed): (arm, seed) for arm in arms for seed in seeds}
    for job in jobs:
        click.echo(f"---\n# {job.name}: {job.action}: {shlex.join(job.argv)}")
        if job.action == "new":
            print_config(child_config(spec, *planned[job.name]))


def _manage(out_dir: Path, address: str | None, stop: bool) -> None:
    """``--status`` / ``--stop`` of the sweep in ``out_dir``: each recorded job's state on the
    cluster (an unfinished one with the cause its sweep recorded), or stop the running ones;
    both name the command that continues the sweep."""
    from ratchet_ray.sweep.jobs import job_client, read_jobs, recorded_status, stop_recorded_jobs
    from ratchet_ray.sweep.folder import read_status, read_sweep_file

    with one_line(SweepError, error=click.UsageError):  # checked before any cluster is asked
        rerun = read_sweep_file(out_dir).get("command")
    again = (f"rerun the sweep's command to resume them: `{rerun}`" if rerun else
             "rerun the sweep's command (the flags it was started with) to resume them")
    if not address:
        raise click.UsageError("--status / --stop act on the cluster the sweep runs on: give its "
                               "--address (or RAY_ADDRESS); a sweep on a head it started itself "
                               "is stopped with Ctrl-C in its own shell")
    _refuse_unreachable(address, local=False)  # no local Ray advised: the sweep's is elsewhere
    with one_line(SweepError):
        client = job_client(address)
        if stop:
            # First: the sweep's own process, wherever it runs, then starts no further job.
            try:
                fsutil.atomic_write_json(out_dir / STOP_FILE,
                                         {"at": time.time(), "pid": os.getpid()})
                unasked = ""
            except OSError as exc:
                unasked = (f" (but {out_dir / STOP_FILE} cannot be written, {exc.strerror or exc}:"
                           " the sweep's own process may start its next jobs; Ctrl-C it there)")
            stopped = stop_recorded_jobs(client, out_dir)
            click.echo((f"stopped {', '.join(stopped)}; {again}" if stopped
                        else "no job of this sweep runs") + unasked)
            return
        ended, jobs = read_status(out_dir), read_jobs(out_dir)
        for name, status in recorded_status(client, out_dir).items():
            said = ended.get(name, {})  # what the sweep recorded of this very job, if it ended
            cause = said.get("cause") if status in ("FAILED", "STOPPED") and \
                said.get("job_id") == jobs[name].get("job_id") else ""
            click.echo(f"{status:<10} {name:<14} log {out_dir / 'logs' / (name + '.log')}"
                       + (f": {cause}" if cause else ""))


def _refuse_unreachable(address: str, **how: bool) -> None:
    """Nothing listening at ``address``, or a token it asks for: ``ray_problem``'s one line."""
    from ratchet_ray.loop.ray_address import ray_problem

    problem = ray_problem(address, client=False, **how)
    if problem is not None:
        raise click.ClickException(problem)


def _run(spec: SweepSpec, jobs, parallel: int, arms: list[str], seeds: list[int],
         address: str | None, outcomes: list[JobOutcome], rerun: str) -> None:
    """Run ``jobs`` on the cluster, appending each outcome to ``outcomes`` as it ends; ``rerun``:
    the command that continues the sweep."""
    if not address:
        # The head started below uses token auth (ray_head); this process's Ray keeps the auth
        # mode it first sees, so the mode must be set before Ray is imported here.
        os.environ.setdefault("RAY_AUTH_MODE", "token")
    # A local head gets enough logical CPUs for `parallel` drivers (their actors mostly wait on
    # the LLM), else the later drivers would queue for CPUs the machine has to spare.
    need = cpus_per_run(child_config(spec, arms[0], seeds[0])) * min(parallel, len(jobs))
    num_cpus = max(os.cpu_count() or 1, math.ceil(need))
    parallel = min(parallel, len(jobs))

    def report(outcome: JobOutcome) -> None:
        outcomes.append(outcome)
        click.echo(f"{outcome_state(outcome)} {outcome.name} ({outcome.action}, {outcome.wall_s:.0f}s) "
                   f"{outcome.cause or outcome.message}", err=True)

    from actors.budget_ledger import SharedBudget, release_budget_ledger
    from actors.llm_server import release_llm_actors
    import ray

    from ratchet_ray.loop.ray_address import gcs_answers
    from ratchet_ray.loop.session import ray_session
    from ratchet_ray.sweep.jobs import (gcs_address, is_dashboard_url, job_client,
                                        live_jobs, run_ray_jobs)

    # Unwind like Ctrl-C, so the running jobs and the local Ray head are stopped on the way;
    # until ray.init (installed again after).
    signal.signal(signal.SIGTERM, exit_on_signal)
    env = {**os.environ, **({"RAY_ADDRESS": address} if address else {})}
    with one_line(RayHeadError, SweepError):
        with ray_cluster(num_cpus, spec.out_dir / "logs" / "ray_head.log", env) as cluster_env:
            os.environ.update(cluster_env)  # this process's Ray client and job client
            given = cluster_env["RAY_ADDRESS"]
            client = job_client(given)
            # A driver joins by the GCS address; a dashboard URL (`ray job submit`'s form) is
            # only the job server's, so the cluster is asked for its GCS address.
            driver_address = gcs_address(client, given, os.environ) \
                if is_dashboard_url(given) else given
            os.environ["RAY_ADDRESS"] = driver_address
            with ray_session(driver_address):
                # Ray's driver installs a SIGTERM handler that aborts the process, which would
                # leave the jobs and the local head running: ours again, so SIGTERM stops them.
                signal.signal(signal.SIGTERM, exit_on_signal)
                try:
                    if spec.budget:  # the spend of arm-seeds no job of this invocation reports
                        SharedBudget(spec.scope).seed(recorded_spend(spec, arms, seeds))
                    where = driver_address if driver_address == given else \
                        f"{driver_address} (job server {given})"
                    click.echo(f"ray cluster {where}; {len(jobs)} job(s), "
                               f"{parallel} at a time; logs in {spec.out_dir / 'logs'}", err=True)
                    run_ray_jobs(client, jobs, parallel, os.environ, spec.out_dir, scope=spec.scope,
                                 rerun=rerun, attach=live_jobs(client, spec.out_dir),
                                 on_done=report,
                                 on_start=lambda line: click.echo(line, err=True))
                finally:
                    # A head that died took these actors with it, and asking its GCS for them
                    # blocked until Ray ended this process, the sweep's last line unsaid.
                    if gcs_answers(ray.get_runtime_context().gcs_address):
                        release_llm_actors(spec.scope)  # the rate limiter every arm shared
                        release_budget_ledger(spec.scope)


COMMANDS = [main]
