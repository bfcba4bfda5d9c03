"""``ratchet swe ...``: SWE-bench tools. ``ratchet swe validate`` grades every gold patch (must
resolve) and a no-op patch (must not) of a dataset's instances on a Grader pool of its own
(``ratchet_ray.suites.swebench.validate``), then prints each failure and every Docker node's
image-cache report (``image_cache.node_report``, one tiny Ray task per node). ``round_report``
is the suite's hook that puts the same reports, per round, into each round's summary.

A module of the CLI layer (it imports the loop and actors): the suite's registration names it
(``commands=``) and ``ratchet`` adds its ``COMMANDS``; nothing in the library imports it."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any, Sequence

import click


def _reading(settings: Any) -> dict[str, Any]:
    """This node's image-cache report with the index it came from (its ``lock_dir``)."""
    from ratchet_ray.suites.swebench.image_cache import node_report
    from ratchet_ray.suites.swebench.settings import on_this_node

    return {**node_report(settings), "lock_dir": on_this_node(settings).lock_dir}


def image_reports(settings: Any) -> list[dict]:
    """The image-cache report of every alive node offering ``docker`` (one tiny task pinned to
    each), one entry per index (``cache_report.merge_readings``); only informative: a failure
    is one entry ``{"node": "?", "error": why}``."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from ratchet_ray.suites.swebench.cache_report import merge_readings

    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("docker")]
    task = ray.remote(_reading)
    refs = [task.options(num_cpus=0, max_retries=0, scheduling_strategy=(
        NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))).remote(settings) for n in nodes]
    try:
        return merge_readings(ray.get(refs, timeout=60))
    except Exception as exc:  # noqa: BLE001 - only informative: never fails a run or a validation
        return [{"node": "?", "error": f"{type(exc).__name__}: {exc}"[:300]}]


def round_report(config: Any, start: Any) -> Any:
    """The suite's ``round_report`` hook (registry): at a round's start (``start`` None) every
    Docker node's image-cache readings; at its end ``{"image_cache": cache_report.round_delta}``
    for the round's ``summary.json``."""
    from ratchet_ray.suites.swebench.cache_report import round_delta
    from ratchet_ray.suites.swebench.settings import settings_from_config

    readings = image_reports(settings_from_config(config))
    return readings if start is None else {"image_cache": round_delta(start, readings)}


def validate_dataset(config: Any, ids: Sequence[str] | None, out_dir: Path,
                     workers: int | None = None) -> Any:
    """Join the cluster (``RAY_ADDRESS``) or start a local Ray, start ``workers`` graders
    (default ``config.workers.graders``) whose logs reach ``out_dir`` on this node, validate the
    instances ``ids`` (None: all), write ``swebench_validation.json`` there and stop them."""
    from ratchet_ray.loop.grade_pool import grade_all
    from ratchet_ray.loop.runtime import make_grader_factory
    from ratchet_ray.loop.session import RunRuntime
    from ratchet_ray.suites.swebench.settings import settings_from_config
    from ratchet_ray.suites.swebench.validate import REPORT_FILE, gold_pairs, validate

    settings = settings_from_config(config)
    pairs = gold_pairs(settings, ids)
    out_dir.mkdir(parents=True, exist_ok=True)
    # Grading asks no LLM: the runtime skips the model checks (the graders' Docker is theirs).
    with RunRuntime(config, f"swe_validate_{uuid.uuid4().hex[:12]}", checks=False) as rt:
        size = max(1, min(workers or config.workers.graders, 2 * len(pairs)))
        pool = rt.pool("grader", make_grader_factory(config, out_dir, rt.artifacts(out_dir)),
                       size)
        result = validate(lambda items: grade_all(pool, items), pairs)
        result.nodes = image_reports(settings)
        (out_dir / REPORT_FILE).write_text(json.dumps(result.to_json(), indent=1) + "\n")
        return result


@click.group("swe")
def swe() -> None:
    """SWE-bench tools: validate a dataset's instances and images."""


@swe.command("validate")
@click.option("--dataset", required=True, metavar="PATH_OR_ID",
              help="Local JSON/JSONL/Parquet file of instances, or a Hugging Face dataset id.")
@click.option("--subset", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Hard-subset file (train_ids, eval_ids): only the instances a run of it uses.")
@click.option("--instance", "instances", multiple=True, metavar="ID",
              help="Only this instance (repeatable; with --subset: added to it).")
@click.option("--workers", type=click.IntRange(min=1),
              help="Grader actors (default: the config's workers.graders).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder of the grader logs and swebench_validation.json "
                   "(default results/swebench_validate/<time>).")
@click.option("--config", "config_files", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="YAML config file(s), applied in order over the suite's file.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Config override, e.g. --set swebench.namespace=null (repeatable).")
def validate(dataset: str, subset: Path | None, instances: tuple, workers: int | None,
             out: Path | None, config_files: tuple, sets: tuple) -> None:
    """Grade every gold patch (must resolve) and a no-op patch (must not) on the images a run
    will use, in parallel over the Grader pool (the cluster's when RAY_ADDRESS is set); print
    each failure with its reason. Exit status 1 when any instance fails."""
    from ratchet_ray.config_files import ConfigError, layered_files, load_config
    from ratchet_ray.suites.base import read_subset
    from ratchet_ray.suites.swebench.image_cache import format_report

    where = Path(dataset).expanduser()
    source = (f"dataset_path={json.dumps(str(where.resolve()))}" if where.exists()
              else f"swebench.dataset_name={json.dumps(dataset)}")
    try:
        config = load_config(layered_files("swebench", config_files),
                             ["suite=swebench", source, *sets])
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc
    ids: list[str] | None = None
    if subset is not None:
        try:
            train, held_out = read_subset(subset)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from exc
        ids = [*train, *held_out]
    if instances:
        ids = [*(ids or []), *instances]
    out = out or Path(config.results_dir) / "swebench_validate" / time.strftime("%Y%m%d-%H%M%S")
    try:
        result = validate_dataset(config, ids, out, workers)
    except ValueError as exc:  # unknown ids, no gold patches, an unreadable dataset
        raise click.ClickException(str(exc)) from exc
    for line in result.lines():
        click.echo(line)
    for node in result.nodes:
        click.echo(f"images {format_report(node)}")
    click.echo(f"{result.summary()}; logs and report in {out}")
    if not result.ok:
        raise SystemExit(1)


COMMANDS = [swe]
