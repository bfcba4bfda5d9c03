"""``ratchet swe ...``: SWE-bench tools, and the suite's per-round report.

``ratchet swe validate`` grades every gold patch (must resolve) and a no-op patch (must not) of
a dataset's instances, ``--repeat`` times each, on a Grader pool of its own
(``ratchet_ray.suites.swebench.validate``), prints each failure and every Docker node's
image-cache report (``image_cache.node_report``, one tiny Ray task per node), records every
grade as ``validation`` evidence in its output folder and updates the dataset's quarantine file
(``quarantine``). ``round_report`` is the suite's hook that puts the same image-cache reports,
and the run's quarantine, into each round's summary.

Contracts of the validation's run (``validate_dataset``):
- It checks the Docker daemon first when it starts a local Ray (this machine's daemon; one line
  when it does not answer), or that something answers at a ``HOST:PORT`` address, joins
  ``address`` (else ``RAY_ADDRESS``, else starts a loopback-only local Ray), starts the
  graders, grades, and leaves in ``out_dir`` the graders' logs, ``swebench_validation.json``
  and ``evidence/validation/round=0/part-*.parquet`` (so ``ratchet --db OUT query`` reads
  it). It raises ``ValidateError`` (one line: what failed and the fix) for a daemon that does
  not answer, a cluster that cannot be joined and graders that cannot start; a failing
  instance is never an error (it is in the ``Validation``).
- Pool size: ``workers`` when given (graders a cluster cannot host fail after
  ``infra.actor_start_timeout_s``, naming the resources); else ``workers.graders`` capped by the
  grades and by the ``docker`` units (and CPUs) the cluster has free now: each grader holds one
  unit, and a pool with actors that can never be placed holds its first dispatch until the
  start timeout (a local Ray offers one unit per core: 2 on a 2-core machine, where the suite
  file's 4 graders made every validation wait 300 s and fail).
- Image digests: after grading, one zero-CPU task pinned to each Docker node reads the id of
  every graded instance's image there (``validation.image_digest``; null where the node no
  longer holds it, e.g. ``swebench.cache_level`` below ``instance``).
- Gold records (``gold.ensure_gold_record``): for every instance whose gold patch resolved on
  every repeat, the record is ensured on a grader (grading the gold patch fills it) and the
  number of mutants validated to fail under gold is reported (``Validation.mutants``); with
  ``cheat_probe.enabled`` its twin record too (``twin``: one session of the base code), so the
  run's impossible twins find both stored.

A module of the CLI layer (it imports the loop and actors): the suite's registration names it
(``commands=``) and ``ratchet`` adds its ``COMMANDS``; nothing in the library imports it."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Sequence

import click


def _reading(settings: Any) -> dict[str, Any]:
    """This node's image-cache report with the index it came from (its ``lock_dir``)."""
    from ratchet_ray.suites.swebench.docker.image_cache import node_report
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
    for the round's ``summary.json``, with ``"quarantine"`` (how many instances the run's
    ``swebench.quarantine`` leaves out, and why) when the run has one."""
    from ratchet_ray.suites.swebench.cache_report import round_delta
    from ratchet_ray.suites.swebench.quarantine import quarantine_report
    from ratchet_ray.suites.swebench.settings import settings_from_config

    settings = settings_from_config(config)
    readings = image_reports(settings)
    if start is not None:
        report = {"image_cache": round_delta(start, readings)}
        if settings.quarantine:
            report["quarantine"] = quarantine_report(settings)
        return report
    return readings


GRADER_CPUS = 0.5


class ValidateError(RuntimeError):
    """The validation could not run at all; the message is one line with the fix."""


def check_docker(settings: Any) -> None:
    """Raise ``ValidateError`` when this machine's Docker daemon does not answer."""
    from ratchet_ray.suites.swebench.docker.container import docker_client
    from ratchet_ray.suites.swebench.docker.infra import InfraFailure

    try:
        docker_client(settings).close()
    except InfraFailure as exc:
        raise ValidateError(str(exc)) from exc


def check_address(address: str, timeout_s: float = 10.0) -> None:
    """Raise ``ValidateError`` when nothing accepts a connection at a ``HOST:PORT`` cluster
    address (Ray itself retries an address that does not answer for minutes); other forms
    (``auto``, ``ray://...``) are left to Ray."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "/" in address:
        return
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise ValidateError(f"nothing answers at the Ray cluster address {address} "
                            f"({exc.strerror or exc}); pass the head's GCS address (HOST:6379, "
                            "`ray status` on the head prints it) as --address / RAY_ADDRESS, or "
                            "drop both for a local Ray") from exc


def grader_count(wanted: int | None, default: int, jobs: int) -> tuple[int, str]:
    """(graders to start, a note when the default was capped) on the connected cluster."""
    import ray

    if wanted is not None:
        return max(1, min(wanted, jobs)), ""
    free = ray.available_resources()
    room = min(int(free.get("docker", 0)), int(free.get("CPU", 0) / GRADER_CPUS))
    size = max(1, min(default, jobs, room if room > 0 else default))
    note = (f"{size} graders (workers.graders is {default}; the cluster has {room} free "
            f"`docker` slots now, each grader takes one; --workers N to ask for more)"
            if size < min(default, jobs) else "")
    return size, note


def _digests(settings: Any, names: list[str]) -> dict[str, str]:
    """On one node: image name -> id of the images of ``names`` its daemon holds."""
    from ratchet_ray.suites.swebench.docker.container import docker_client
    from ratchet_ray.suites.swebench.imports import serial_imports

    with serial_imports:
        import docker.errors

    client = docker_client(settings)
    found: dict[str, str] = {}
    for name in names:
        try:
            found[name] = client.images.get(name).id
        except docker.errors.ImageNotFound:
            continue
    return found


def image_digests(settings: Any, names: list[str]) -> dict[tuple[str, str], str]:
    """(node id, image name) -> image id, read on every alive node offering ``docker``; a node
    that cannot say is left out (its rows get a null digest)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = [n["NodeID"] for n in ray.nodes()
             if n.get("Alive") and n.get("Resources", {}).get("docker")]
    task = ray.remote(_digests)
    refs = {node: task.options(num_cpus=0, max_retries=0, scheduling_strategy=(
        NodeAffinitySchedulingStrategy(node, soft=False))).remote(settings, names)
        for node in nodes}
    found: dict[tuple[str, str], str] = {}
    for node, ref in refs.items():
        try:
            held = ray.get(ref, timeout=60)
            found.update({(node, name): digest for name, digest in held.items()})
        except Exception:  # noqa: BLE001 - only informative: those rows carry no digest
            continue
    return found


def _gold_record(worker: Any, instance: dict, twins: bool = False) -> int:
    """Run in a grader actor (``__ray_call__``): the mutants of the instance's gold record;
    with ``twins``, its twin record is ensured too (``twin.TwinGrading.twin_record``)."""
    from ratchet_ray.suites.swebench.proof.gold import ensure_gold_record

    kept = len(ensure_gold_record(worker.grader, instance).kept)
    if twins:
        worker.grader.twin_record(instance)
    return kept


def gold_mutants(pool: Any, instances: list[dict], twins: bool = False) -> dict[str, Any]:
    """Instance id -> mutants validated to fail under gold, or why none is known; ``twins``:
    each instance's twin record is made too (the cheat probe's, one session of the base code)."""
    from actors.draining import drain

    found: dict[str, Any] = {}
    for instance in instances:
        pool.submit("__ray_call__", _gold_record, instance, twins, key=instance["instance_id"])

    def handle(_pool: Any, result: Any) -> None:
        found[result.key] = (result.value if result.ok
                             else f"unknown ({result.exit_status}: {result.error})"[:300])

    drain([pool], handle)
    return found


def _grade_on(pool: Any, nodes: list[str]) -> Callable[[list], list]:
    """A grading callable for ``validate.validate`` over ``pool`` that also keeps, per item,
    the node that graded it (in ``nodes``): every item queued in one burst, so the pool places
    them knowing all of them."""
    from actors.draining import drain

    def grade(items: Sequence[tuple[Any, str]]) -> list:
        results: list[Any] = [""] * len(items)
        nodes[:] = [""] * len(items)
        with pool.held():
            for index, (task, patch) in enumerate(items):
                pool.submit("grade", task, patch, key=index)

        def handle(_pool: Any, result: Any) -> None:
            results[result.key] = (result.value if result.ok
                                   else f"{result.exit_status}: {result.error}"[:500])
            nodes[result.key] = result.node or ""

        drain([pool], handle)
        return results

    return grade


def _one_node() -> str:
    import ray

    return ray.get_runtime_context().get_node_id()


def validate_dataset(config: Any, ids: Sequence[str] | None, out_dir: Path,
                     workers: int | None = None, repeat: int = 1, address: str | None = None,
                     note: Callable[[str], None] = lambda _text: None) -> Validation:
    """See the module contract; ``note`` receives progress lines for the terminal."""
    import ray

    from actors.pool_errors import PoolError
    from ratchet_ray.evidence.store import EvidenceStore
    from ratchet_ray.loop.runtime import make_grader_factory
    from ratchet_ray.loop.session import RunRuntime, ray_session
    from ratchet_ray.suites.swebench.dataset import load_instances
    from ratchet_ray.suites.swebench.docker.images import image_name
    from ratchet_ray.suites.swebench.settings import settings_from_config
    from ratchet_ray.suites.swebench.validate import (REPORT_FILE, evidence_rows, gold_pairs,
                                                      validate)

    settings = settings_from_config(config)
    pairs = gold_pairs(settings, ids)
    address = address or os.environ.get("RAY_ADDRESS") or None
    if not address:
        check_docker(settings)  # a local Ray grades with this machine's daemon
    elif not ray.is_initialized():
        check_address(address)
    out_dir.mkdir(parents=True, exist_ok=True)
    scope = f"swe_validate_{uuid.uuid4().hex[:12]}"
    try:
        with ray_session(address), RunRuntime(config, scope, checks=False) as rt:
            size, capped = grader_count(workers, config.workers.graders, 2 * len(pairs) * repeat)
            if capped:
                note(capped)
            pool = rt.pool("grader", make_grader_factory(config, out_dir, rt.artifacts(out_dir)),
                           size)
            nodes: list[str] = []
            result = validate(_grade_on(pool, nodes), pairs, repeat)
            for outcome, node in zip(result.outcomes, nodes):
                outcome.node = node
            stable = {task.task_id for task, _gold in pairs} - set(result.failed_instances)
            if stable:
                raw = {i["instance_id"]: i for i in load_instances(settings)}
                result.mutants = gold_mutants(pool, [raw[i] for i in sorted(stable)],
                                              twins=config.cheat_probe.enabled)
            images = {task.task_id: image_name(task.task_id, settings) for task, _ in pairs}
            digests = image_digests(settings, sorted(set(images.values())))
            if not any(outcome.node for outcome in result.outcomes):
                here = _one_node()  # a pool without placement does not say: one node
                for outcome in result.outcomes:
                    outcome.node = here
            result.nodes = image_reports(settings)
    except PoolError as exc:
        raise ValidateError(" ".join(str(exc).split())) from exc
    except (ConnectionError, TimeoutError, ray.exceptions.RaySystemError) as exc:
        why = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        raise ValidateError(f"cannot join the Ray cluster at {address} ({why}); check "
                            "--address / RAY_ADDRESS, or drop both for a local Ray") from exc
    EvidenceStore(out_dir).append("validation", 0, evidence_rows(result, scope, images, digests))
    (out_dir / REPORT_FILE).write_text(json.dumps(result.to_json(), indent=1) + "\n")
    return result


def flake_rates(out_dir: Path) -> list[dict[str, Any]]:
    """Per instance of the validation in ``out_dir``: its gold and no-op runs, from the
    ``validation`` evidence (the named query ``validation_flake_rates``)."""
    from ratchet_ray.evidence.named_queries import fetch_dicts
    from ratchet_ray.evidence.store import EvidenceStore

    con = EvidenceStore(out_dir).connect()
    try:
        return fetch_dicts(con, "validation_flake_rates")
    finally:
        con.close()


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
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Grades of each gold and no-op patch (5 for a quarantine: an instance "
                   "whose gold fails any of them is quarantined).")
@click.option("--workers", type=click.IntRange(min=1),
              help="Grader actors (default: the config's workers.graders, capped by the "
                   "cluster's free `docker` slots).")
@click.option("--address", metavar="HOST:PORT",
              help="Ray cluster to grade on (default: RAY_ADDRESS, else a local Ray).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder of the grader logs, swebench_validation.json and the validation "
                   "evidence (default results/swebench_validate/<time>).")
@click.option("--quarantine", "quarantine_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Quarantine file to update (default: <dataset>.quarantine.json next to a "
                   "local dataset, else <out>/quarantine.json).")
@click.option("--config", "config_files", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="YAML config file(s), applied in order over the suite's file.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Config override, e.g. --set swebench.namespace=null (repeatable).")
def validate(dataset: str, subset: Path | None, instances: tuple, repeat: int,
             workers: int | None, address: str | None, out: Path | None,
             quarantine_file: Path | None, config_files: tuple, sets: tuple) -> None:
    """Grade every gold patch (must resolve) and a no-op patch (must not), --repeat times each,
    on the images a run will use, in parallel over a Grader pool (the cluster's with --address
    or RAY_ADDRESS); print each failure with its reason, record every grade as evidence
    (`ratchet --db OUT query "select * from validation"`) and list the failing instances in the
    quarantine file. Keeps the images it grades (swebench.cache_level=instance unless set).
    Exit status 1 when any instance fails."""
    from ratchet_ray.run_config.files import ConfigError, layered_files, load_config
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
    try:  # every repeat grades the same image, and a run after it finds them: keep them
        config = load_config(layered_files("swebench", config_files),
                             ["suite=swebench", source, "swebench.cache_level=instance", *sets])
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
    target = quarantine_file or default_path(dataset) or out / "quarantine.json"
    if target.exists():  # refused before any grade, not after them all
        try:
            load_quarantine(target)
        except ValueError as exc:
            raise click.UsageError(f"{exc}; or pass --quarantine NEW_FILE") from exc
    try:
        result = validate_dataset(config, ids, out, workers, repeat, address, note=click.echo)
    except (ValueError, ValidateError) as exc:  # unknown ids, an unreadable dataset, no graders
        raise click.ClickException(str(exc)) from exc
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


COMMANDS = [swe]
