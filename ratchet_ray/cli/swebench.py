"""``ratchet swe ...``: the SWE-bench suite's commands (click only; the suite's registration
names this module, ``commands=``, and nothing in the library imports it).

``ratchet swe validate`` grades every gold patch (must resolve) and a no-op patch (must not),
``--repeat`` times each, on its own Grader pool (``loop.swebench_validation``), prints each
failure and every Docker node's image-cache report, records every grade as ``validation``
evidence in its output folder and updates the dataset's quarantine file."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import click

from ratchet_ray.cli.options import exit_on_signal, one_line, suite_config
from ratchet_ray.run_config.options import config_option, set_option, subset_option, workers_option
from ratchet_ray.loop.swebench_validation import (ValidateError, flake_rates,
                                                                validate_dataset)


@click.group("swe")
def swe() -> None:
    """SWE-bench tools: validate a dataset's instances and images, build sets from real projects."""


@swe.command("validate")
@click.option("--dataset", required=True, metavar="PATH_OR_ID",
              help="Local JSON/JSONL/Parquet file of instances, or a Hugging Face dataset id.")
@subset_option("Hard-subset file (train_ids, eval_ids): only the instances a run of it uses.")
@click.option("--instance", "instances", multiple=True, metavar="ID",
              help="Only this instance (repeatable; with --subset: added to it).")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Grades of each gold and no-op patch (5 for a quarantine: an instance "
                   "whose gold fails any of them is quarantined).")
@workers_option("Grader actors (default: the config's workers.graders, capped by the "
                "cluster's free `docker` slots).")
@click.option("--address", metavar="HOST:PORT",
              help="Ray cluster to grade on (default: RAY_ADDRESS, else a local Ray).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder of the grader logs, swebench_validation.json and the validation "
                   "evidence (default results/swebench_validate/<time>).")
@click.option("--quarantine", "quarantine_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Quarantine file to update (default: <dataset>.quarantine.json next to a "
                   "local dataset, else <out>/quarantine.json).")
@config_option()
@set_option("Config override, e.g. --set swebench.namespace=null (repeatable).")
def validate(dataset: str, subset: Path | None, instances: tuple, repeat: int,
             workers: int | None, address: str | None, out: Path | None,
             quarantine_file: Path | None, config_files: tuple, sets: tuple) -> None:
    """Grade every gold patch (must resolve) and a no-op patch (must not), --repeat times each,
    on the images a run will use, in parallel over a Grader pool (the cluster's with --address
    or RAY_ADDRESS); print each failure with its reason, record every grade as evidence
    (`ratchet --db OUT query "select * from validation"`) and list the failing instances in the
    quarantine file. Keeps the images it grades (swebench.cache_level=instance unless set).
    Exit status 1 when any instance fails."""
    from ratchet_ray.suites.base import read_subset
    from ratchet_ray.suites.swebench.dataset import LOCAL_SUFFIXES
    from ratchet_ray.suites.swebench.docker.image_cache import format_report
    from ratchet_ray.suites.swebench.quarantine import (default_path, load_quarantine,
                                                        update_quarantine)

    where = Path(dataset).expanduser()
    if not where.exists() and (where.suffix in LOCAL_SUFFIXES or os.sep in dataset):
        raise click.UsageError(f"--dataset {dataset}: no such file; pass an existing .json, "
                               ".jsonl or .parquet file, or a Hugging Face dataset id such as "
                               "SWE-bench/SWE-bench_Verified")
    source = (f"dataset_path={json.dumps(str(where.resolve()))}" if where.exists()
              else f"swebench.dataset_name={json.dumps(dataset)}")
    # Every repeat grades the same image, and a run after it finds them: keep them.
    config = suite_config("swebench", config_files,
                          ["suite=swebench", source, "swebench.cache_level=instance", *sets])
    ids: list[str] | None = None
    if subset is not None:
        with one_line(ValueError, error=click.UsageError):
            train, held_out = read_subset(subset)
        ids = [*train, *held_out]
    if instances:
        ids = [*(ids or []), *instances]
    out = out or Path(config.results_dir) / "swebench_validate" / time.strftime("%Y%m%d-%H%M%S")
    target = quarantine_file or default_path(dataset) or out / "quarantine.json"
    if target.exists():  # refused before any grade, not after them all
        try:
            load_quarantine(target)
        except ValueError as exc:
            raise click.UsageError(f"{exc}; or pass --quarantine NEW_FILE") from exc
    from ratchet_ray.loop.signals import unwind_on_sigterm

    # SIGTERM is Ctrl-C from here: the stop is told and the rerun named (it was the default
    # action until ray.init, then click's "Aborted!" with exit 1; nothing said either way).
    unwind_on_sigterm()
    try:
        # Unknown ids, an unreadable dataset, no graders:
        with one_line(ValueError, ValidateError):
            result = validate_dataset(config, ids, out, workers, repeat, address,
                                      note=click.echo)
    except KeyboardInterrupt:
        click.echo(f"interrupted: nothing recorded in {out} (its evidence, report and the "
                   "quarantine file are written once every grade is in); rerun the same "
                   "command to validate again", err=True)
        raise SystemExit(130) from None
    for line in result.lines():
        click.echo(line)
    for instance_id, mutants in sorted(result.mutants.items()):
        click.echo(f"gold record {instance_id}: {mutants} mutants validated to fail under gold"
                   if isinstance(mutants, int) else f"gold record {instance_id}: {mutants}")
    for node in result.nodes:
        click.echo(f"images {format_report(node)}")
    if repeat > 1:  # read back from the evidence, as `ratchet query` would
        for row in flake_rates(out):
            click.echo(f"gold {row['instance_id']}: resolved {row['gold_resolved']} of "
                       f"{row['gold_runs']} (flake rate {row['gold_flake_rate']:.2f}); no-op "
                       f"wrong {row['noop_bad']} of {row['noop_runs']}")
    try:
        listed = update_quarantine(
            target, {o.instance_id for o in result.outcomes}, result.quarantine(),
            dataset=str(where.resolve()) if where.exists() else dataset, repeats=repeat,
            gold_resolved=result.gold_resolved(), source=str(out))
    except (ValueError, OSError) as exc:  # the grades are kept: only the file is refused
        raise click.ClickException(f"{exc}; this validation's outcomes are in {out} (evidence "
                                   "and swebench_validation.json); pass --quarantine NEW_FILE "
                                   "to write the quarantine elsewhere") from exc
    click.echo(f"quarantine {target}: {len(listed)} instances listed "
               f"({len(result.failed_instances)} from this validation)")
    click.echo(f"{result.summary()}; logs, report and evidence in {out}")
    if not result.ok:
        raise SystemExit(1)


@swe.command("make-instances")
@click.argument("spec", metavar="PROJECT[==VERSION]")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder of the set: instances.jsonl (for --dataset / dataset_path) and "
                   "recipe.json (inputs, digests, tests left out, every candidate).")
@click.option("--source", type=click.Path(path_type=Path),
              help="A local sdist (.tar.gz/.zip) or checkout instead of PyPI's sdist.")
@click.option("--count", type=click.IntRange(min=1), default=10, show_default=True,
              help="Instances to keep.")
@click.option("--max-candidates", type=click.IntRange(min=1), default=40, show_default=True,
              help="Candidate bugs to try at most (one test run each).")
@click.option("--modifier", "modifiers", multiple=True, metavar="NAME",
              help="Only this SWE-smith modifier, e.g. func_pm_op_change (repeatable).")
@click.option("--bug-seed", "seed", type=int, default=0, show_default=True,
              help="Seed of the order candidate bugs are tried in.")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Candidate test runs at once (the set does not depend on it).")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path),
              default=Path("~/.cache/ratchet-ray/realcode"), show_default=True,
              help="Where sdists and wheels are downloaded to (reused when present).")
@click.option("--base-image", default="ratchet-swe-base", show_default=True,
              help="The image every project image starts from (.ci/docker_setup.sh builds it).")
@click.option("--force", is_flag=True, help="Replace an existing --out folder.")
def make_instances(spec: str, out: Path, source: Path | None, count: int, max_candidates: int,
                   modifiers: tuple, seed: int, jobs: int, cache: Path, base_image: str,
                   force: bool) -> None:
    """Build a SWE-bench instance set from a real project's source (a recipe of
    ratchet_ray/suites/swebench/realcode/projects.py): its image built offline from pip's
    downloads, bugs from SWE-smith's modifiers kept when the project's own tests catch them.
    Grade it with `ratchet swe validate --dataset OUT/instances.jsonl`."""
    from ratchet_ray.suites.swebench.realcode import RealcodeError, Request, make_instances as make
    from ratchet_ray.suites.swebench.docker.infra import START_DOCKER
    from ratchet_ray.suites.swebench.imports import serial_imports
    from ratchet_ray.suites.swebench.realcode import resolve_project

    with serial_imports:
        from docker.errors import DockerException

    # A killed build still removes its half-written set and image.
    signal.signal(signal.SIGTERM, exit_on_signal)
    try:
        project = resolve_project(spec)
        make(Request(project=project, out=out, cache=cache.expanduser(), base_image=base_image,
                     source=source, count=count, max_candidates=max_candidates, seed=seed,
                     modifiers=list(modifiers) or None, jobs=jobs,
                     force=force), note=click.echo)
    except RealcodeError as exc:
        raise click.ClickException(str(exc)) from exc
    except DockerException as exc:  # no daemon, or it went away mid-build (the set is removed)
        raise click.ClickException(
            f"Docker: {exc}; {START_DOCKER} or set DOCKER_HOST, check it with "
            "`ratchet doctor --suite swebench`, then run make-instances again") from exc


COMMANDS = [swe]
