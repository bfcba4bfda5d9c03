"""The paper's ablation sweep: ``python -m jobs.ablations SUITE --arms default,A1,...,A8
--seeds 42,7,13 --rounds R [--n-train N --n-eval M | --subset FILE] [--parallel N] [--set k=v]``.

Each run resolves the paper's Default, then the suite's file (``configs/swebench.yaml``), then
the arm's file (``configs/ablations/<arm>.yaml``), then the flags and ``--set``.
Every (arm, seed) runs as its own ``python -m jobs.skill_loop`` driver, all on ONE Ray cluster:
``RAY_ADDRESS`` when set, else a head this job starts on 127.0.0.1 and stops at the end. At most
``--parallel`` drivers run at once. Rerunning the same command resumes the sweep: finished
arm-seeds are skipped, unfinished ones continue with ``--resume``. A failing arm-seed does not
stop the others; it is listed at the end (and in ``ablations.md``) and the exit status is 1.
The report — ``ablations.md`` and ``ablations.json`` in ``--out`` — is written after the runs
(``--report-only`` writes it without running anything). Layout: ``ratchet_ray/loop/sweep.py``;
metrics: ``ratchet_ray/ablations.py``.
"""

from __future__ import annotations

import math
import os
import signal
from pathlib import Path

import click

from ratchet_ray.ablations import write_report
from ratchet_ray.loop.ray_head import RayHeadError, ray_cluster
from ratchet_ray.loop.sweep import (ARMS, JobOutcome, SweepError, SweepSpec, check_sweep_file,
                                    child_config, cpus_per_run, lock_sweep, plan_jobs, run_jobs,
                                    write_status)


def _csv(kind: type):
    def parse(ctx: click.Context, param: click.Parameter, value: str) -> list:
        try:
            items = [kind(v.strip()) for v in value.split(",") if v.strip()]
        except ValueError as exc:
            raise click.BadParameter(f"{value!r}: comma-separated {kind.__name__}s") from exc
        if not items or len(set(items)) != len(items):
            raise click.BadParameter(f"{value!r}: give distinct values, e.g. 42,7,13")
        return items
    return parse


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("suite", type=click.Choice(["mbpp", "swebench", "sim"]))
@click.option("--arms", default=",".join(ARMS), show_default=True, callback=_csv(str),
              help="Arms to run: default and/or A1..A8 (configs/ablations/<arm>.yaml).")
@click.option("--seeds", default="42,7,13", show_default=True, callback=_csv(int))
@click.option("--rounds", type=click.IntRange(min=1),
              help="Rounds per run (default: the suite's paper value, 100 MBPP+ / 20 SWE-bench).")
@click.option("--n-train", type=click.IntRange(min=0), help="Random train slice size.")
@click.option("--n-eval", type=click.IntRange(min=0), help="Random eval slice size.")
@click.option("--subset", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Hard-subset file from jobs.select_subset (overrides --n-train/--n-eval).")
@click.option("--llm", type=click.Choice(["local", "bedrock", "openai"]), help="LLM backend.")
@click.option("--dataset-path", type=click.Path(exists=True, path_type=Path))
@click.option("--workers", type=click.IntRange(min=1), help="Solver and grader actors per run.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Config override for every run, e.g. --set llm.base_url=http://...")
@click.option("--parallel", type=click.IntRange(min=1), default=1, show_default=True,
              help="Drivers running at once.")
@click.option("--tag", default="main", show_default=True,
              help="Names the default --out: results/<suite>/ablations_<tag>.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Sweep folder (default results/<suite>/ablations_<tag>).")
@click.option("--report-only", is_flag=True, help="Only (re)write ablations.md / .json.")
def main(suite: str, arms: list[str], seeds: list[int], parallel: int, tag: str,
         out_dir: Path | None, report_only: bool, sets: tuple[str, ...], **flags) -> None:
    """Run the ablation arms x seeds of SUITE and report mean ± std per arm."""
    out_dir = (out_dir or Path("results") / suite / f"ablations_{tag}").resolve()
    spec = SweepSpec(suite=suite, out_dir=out_dir, sets=tuple(sets), **flags)
    outcomes: list[JobOutcome] = []
    if report_only and not out_dir.is_dir():
        raise click.UsageError(f"--report-only: {out_dir} does not exist; pass the --out (or "
                               "--tag) of a sweep that has run")
    if not report_only:
        try:
            held = lock_sweep(out_dir)  # noqa: F841 (one sweep per --out until this exits)
            jobs, skipped = plan_jobs(spec, arms, seeds)
            check_sweep_file(spec)
        except SweepError as exc:
            raise click.UsageError(str(exc)) from exc
        outcomes += skipped
        for outcome in skipped:
            click.echo(f"skip   {outcome.name}: {outcome.message}", err=True)
        if jobs:
            outcomes += _run(spec, jobs, parallel, arms, seeds)
        write_status(out_dir, outcomes)
    failures = {o.name: o.cause or o.message for o in outcomes if not o.ok}
    md, js, summaries = write_report(out_dir, failures=failures)
    for s in summaries:
        gain = s.rolling_gain
        click.echo(f"{s.arm:>8}: rolling gain {gain.mean:+.3f}" if gain.mean is not None
                   else f"{s.arm:>8}: no eval rounds", err=True)
    click.echo(f"{md}\n{js}")
    if failures:
        click.echo(f"{len(failures)} arm-seed(s) failed: {', '.join(sorted(failures))}; fix the "
                   "cause and rerun the same command to resume them", err=True)
        raise SystemExit(1)


def _stop_on_sigterm(signum: int, frame) -> None:
    # Unwind like Ctrl-C, so the running drivers and the local Ray head are stopped on the way.
    raise SystemExit(128 + signum)


def _run(spec: SweepSpec, jobs, parallel: int, arms: list[str], seeds: list[int]):
    # A local head gets enough logical CPUs for `parallel` drivers (their actors mostly wait on
    # the LLM), else the later drivers would queue for CPUs the machine has to spare.
    need = cpus_per_run(child_config(spec, arms[0], seeds[0])) * min(parallel, len(jobs))
    num_cpus = max(os.cpu_count() or 1, math.ceil(need))
    parallel = min(parallel, len(jobs))

    def report(outcome: JobOutcome) -> None:
        state = "done  " if outcome.ok else "FAILED"
        click.echo(f"{state} {outcome.name} ({outcome.action}, {outcome.wall_s:.0f}s) "
                   f"{outcome.cause or outcome.message}", err=True)

    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        with ray_cluster(num_cpus, spec.out_dir / "logs" / "ray_head.log") as cluster_env:
            click.echo(f"ray cluster {cluster_env['RAY_ADDRESS']}; {len(jobs)} run(s), "
                       f"{parallel} at a time; logs in {spec.out_dir / 'logs'}", err=True)
            return run_jobs(jobs, parallel, {**os.environ, **cluster_env}, on_done=report)
    except RayHeadError as exc:
        raise click.ClickException(str(exc)) from exc


if __name__ == "__main__":
    main(prog_name="python -m jobs.ablations")
