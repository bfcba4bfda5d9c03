"""``ratchet run`` (the skill loop; the same command as ``python -m jobs.skill_loop``) and
``ratchet plot RUN``.

Before a run dir or Ray exists, the config is checked on this machine
(``loop.entry.check_startable``), a new run's size (``run_config.flags.loop_size_problems``)
and the MLflow store when tracking is on (``report.tracking.tracking_problems``): one line per
problem naming the setting and the fix. A new run's results folder is checked too, and
``--dry-run`` then checks what the run refuses once it has its tasks (``_check_new_run``: the
split, the ``--tag``; a resumed run's dir: ``_check_resume``), in the run's words, and prints
the config.

Config precedence, lowest first: the Default, the suite's file, ``--profile`` files,
``--config`` files in order, this command's flags, ``--set`` overrides. ``--resume RUN_DIR``
takes the run's ``config.yaml`` and accepts no other config flag but ``--set budget.*=...`` (a
higher limit for a run that stopped at its budget).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ratchet_ray.cli.options import cannot_write, one_line, suite_config
from ratchet_ray.run_config.options import (bank_option, config_option, dataset_path_option,
                                            llm_option, profile_option, seed_option, set_option,
                                            slice_options, workers_option)
from ratchet_ray.loop.entry import (DRY_RUN, SUITE, check_startable, pack_problems,
                                    print_config, version_option)
from ratchet_ray.run_config.flags import build_overrides, loop_size_problems

_CONFIG_FLAGS = ("rounds", "n_train", "n_eval", "subset", "seed", "tag", "profiles",
                 "config_files", "sets", "llm", "no_synth", "meta_every", "dataset_path",
                 "workers", "bank")


@click.command("run", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("suite", type=SUITE, required=False)  # the config checks it against the registry
@click.option("--rounds", type=click.IntRange(min=0),
              help="Rounds to run (the suite's paper value: 100 MBPP+, 20 SWE-bench).")
@slice_options()
@seed_option("Seed of the split, task and verdict order and LLM sampling (42).")
@click.option("--tag", help="Suffix of the run dir name.")
@profile_option()
@config_option("YAML config file(s), applied in order (e.g. configs/ablations/A4.yaml).")
@set_option()
@llm_option()
@click.option("--no-synth", is_flag=True,
              help="No new skills; capsules, critic and curator still run.")
@click.option("--meta-every", type=click.IntRange(min=1), help="Meta-synth every N rounds.")
@click.option("--resume", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Continue this run dir (its config.yaml is used as is; only --set "
                   "budget.*=... may raise its budget).")
@dataset_path_option()
@workers_option()
@bank_option("Skill pack (ratchet skill export) the new run's bank starts from, its skills on "
             "probation (bank.pack).")
@click.option("--quiet", is_flag=True, help="No progress display.")
@DRY_RUN
@version_option()
def run(suite: str | None, resume: Path | None, quiet: bool, dry_run: bool, **flags) -> None:
    """Run the Ratchet skill loop on SUITE (mbpp, swebench, sim, or a plugin suite named with
    --set suite_plugins=[path.py] or $RATCHET_SUITES), or --resume a run."""
    from ratchet_ray.loop.breaker import RunStopped
    from ratchet_ray.loop.driver import RunSetupError, run_loop
    from ratchet_ray.loop.stops import RunInterrupted
    from ratchet_ray.run_config.files import ConfigError

    given = [k for k in _CONFIG_FLAGS if flags.get(k) not in (None, False, ())]
    resume_sets: tuple[str, ...] = ()
    edits: list[str] = []  # a resume's warnings: config.yaml's operational keys edited
    if resume is not None:
        if given == ["sets"] and all(s.strip().startswith("budget.") for s in flags["sets"]):
            resume_sets, given = flags["sets"], []  # a higher budget for a stopped run
        if given:
            raise click.UsageError(f"--resume continues {resume} with its own config.yaml; drop "
                                   f"{', '.join('--' + k.replace('_', '-') for k in given)}"
                                   " (only --set budget.*=... may change)")
        from ratchet_ray.loop.budget import resume_settings
        from ratchet_ray.loop.rundir import CONFIG_FILE, RunDir

        with one_line(FileNotFoundError, ConfigError, error=click.UsageError):
            checked, edits = resume_settings(RunDir.open(resume).path / CONFIG_FILE, resume_sets)
        config = None
        if suite is not None and checked.suite != suite:
            raise click.UsageError(f"{resume} is a {checked.suite} run, not {suite}; continue "
                                   f"it with --resume alone (or name {checked.suite}), or "
                                   f"start a new {suite} run without --resume")
    else:
        if suite is None:
            raise click.UsageError("give a SUITE (a registered one: mbpp, swebench, sim or a "
                                   "plugin's) or --resume RUN_DIR")
        files, sets, profiles = flags.pop("config_files"), flags.pop("sets"), flags.pop("profiles")
        checked = config = suite_config(suite, files, [*build_overrides(suite, **flags), *sets],
                                        profiles)
    check_startable(checked)  # before a run dir exists or Ray starts
    from ratchet_ray.loop.rundir import results_dir_problem
    from ratchet_ray.report.otel import tracing_problems
    from ratchet_ray.report.tracking import tracking_problems

    # A new run that would measure nothing, and a tracking store that cannot be reached, are
    # refused here (a resumed run was checked when it started; its tracking is checked again).
    problems = [*(loop_size_problems(checked) + pack_problems(checked) if resume is None
                  else []), *tracking_problems(checked),
                *tracing_problems(checked)]
    if resume is None:  # a read-only results folder, before any work (a dry run's too)
        problems += [p for p in [results_dir_problem(checked)] if p]
    if problems:
        raise click.ClickException("; ".join(problems))  # one line
    if dry_run:
        if resume is None:
            _check_new_run(checked)
        else:
            _check_resume(resume)
            for line in edits:  # the run says them itself (run.log too)
                click.echo(f"warning: {line}", err=True)
        print_config(checked)
        return

    def announce(path: Path) -> None:
        click.echo(f"run dir: {path}", err=True)
        if "runtime_resources" in path.parts:
            # `ray job submit --working-dir .` runs in a temporary copy that Ray deletes later.
            click.echo("warning: the run dir is inside this job's temporary working dir; pass "
                       "--set results_dir=/an/absolute/path on the head node to keep it", err=True)

    try:
        path = run_loop(config, resume=resume, show_progress=not quiet, announce=announce,
                        resume_sets=resume_sets)
    except RunSetupError as exc:
        raise click.UsageError(str(exc)) from exc
    except RunStopped as exc:  # the cause and its fix, on one line, and a non-zero exit
        raise click.ClickException(f"run stopped: {exc}") from exc
    except RunInterrupted as exc:  # Ctrl-C: where it stopped and the command that goes on
        from ratchet_ray.loop.rundir import resume_advice

        said = f"interrupted in round {exc.round} of {exc.rounds} ({exc.finished} round(s) finished"
        go_on = resume_advice(exc.run_dir, click.get_current_context().command_path)
        gone = exc.unrecorded or (f"its run dir {exc.run_dir} is gone (deleted while the run "
                                  "ran), so nothing was recorded")
        click.echo(f"{said}); {gone}"
                   if not exc.run_dir.is_dir() else  # deleted or moved: its own words
                   f"{said}; not recorded: {exc.unrecorded}); continue with: {go_on}"
                   if exc.unrecorded else
                   f"{said}; recorded in {exc.run_dir / 'stopped.json'}); continue with: {go_on}",
                   err=True)
        raise SystemExit(130) from exc
    from ratchet_ray.report.learned import story

    # What the run learned, in words (on stderr: stdout's one line stays the run dir).
    for line in story(path):
        click.echo(line, err=True)
    click.echo(str(path))


def _check_new_run(config: Any) -> None:
    """``--dry-run``: what a new run refuses once it has its tasks, by the run's own checks in
    its words (``UsageError``, as ``run_loop``'s ``RunSetupError``): the split (a subset's
    unknown task ids, more tasks asked than the suite holds) and the run dir's name (``--tag``).
    Tasks this machine cannot load (a dataset only the cluster holds) are a warning naming why,
    not a refusal: a dry run is often made away from where the run runs."""
    from ratchet_ray.loop.rundir import run_name
    from ratchet_ray.suites.base import split_tasks
    from ratchet_ray.suites.registry import suite_for

    with one_line(ValueError, error=click.UsageError):
        run_name(config, 0, 0)
    try:
        tasks = suite_for(config).load_tasks(config)
    except (OSError, ValueError, KeyError) as exc:
        click.echo(f"warning: the split was not checked (the suite's tasks did not load here: "
                   f"{' '.join(str(exc).split())}); the run loads them when it starts", err=True)
        return
    with one_line(ValueError, error=click.UsageError):
        split_tasks(tasks, config)


def _check_resume(resume: Path) -> None:
    """``--dry-run --resume``: the run dir's checks the resumed run makes before it starts
    (``RunDir``'s own: writable, its bank, its name, its split files), in its words."""
    from ratchet_ray.loop.rundir import RunDir

    run_dir = RunDir(resume)  # config.yaml was read already
    with one_line(ValueError, error=click.UsageError):
        run_dir.check_writable()
        run_dir.check_bank()
        run_dir.check_name()
        run_dir.train_ids(), run_dir.eval_ids()


@click.command("plot")
@click.argument("run_dir", required=False, type=click.Path(exists=True, path_type=Path))
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Folder to write the two files into (default: the run dir).")
@click.pass_context
def plot(ctx: click.Context, run_dir: Path | None, out_dir: Path | None) -> None:
    """Write loop_curve.png and loop_summary.md for RUN_DIR (or --db)."""
    from ratchet_ray.report.plot import plot_run
    from ratchet_ray.storage.fsutil import cannot_write as fsutil_cannot_write
    from ratchet_ray.storage.fsutil import disk_full, unwritable, write_target

    target = run_dir or (ctx.obj or {}).get("run_dir")
    if target is None:
        raise click.UsageError("give RUN_DIR (a run dir or its loop.json) or --db RUN_DIR")
    folder = out_dir or (Path(target).parent if Path(target).is_file() else Path(target))
    try:
        why = unwritable(write_target(folder))  # through a link to a folder, as the files go
    except OSError as exc:  # a loop of links: no folder to write in, whatever the free space
        why = f"{exc.strerror} ({folder})"
    if why is not None:  # a read-only run dir (a mounted copy): refused before any drawing
        raise click.ClickException(f"cannot write the plot into {folder}: {why}; pass a "
                                   "writable folder with -o DIR")
    try:
        with one_line(FileNotFoundError, ValueError):
            png, md, metrics = plot_run(target, out_dir=out_dir)
    except OSError as exc:  # met while writing (the folder's check above passed): one line
        fix = ("free space there, or pass another folder with -o DIR" if disk_full(exc)
               else "pass another folder with -o DIR")  # a link loop among the files
        raise click.ClickException(fsutil_cannot_write("the plot", exc, fix, folder)) from exc
    click.echo(f"{png}\n{md}")
    if metrics.round0 is not None:
        click.echo(f"round 0 {metrics.round0:.3f}, peak {metrics.peak:.3f} (round "
                   f"{metrics.peak_round}), rolling gain {metrics.rolling_gain:+.3f}")


COMMANDS = [run, plot]
