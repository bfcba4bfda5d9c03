"""``ratchet swe validate``'s run: the gold and no-op grades of a dataset's instances on a
Grader pool of its own (``suites.swebench.validate`` judges the outcomes; ``cli.swebench`` is
the command). It is the SWE-bench code that uses Ray, so it lives in the loop's layer.

Contracts of ``validate_dataset``:
- It checks the Docker daemon (starting a local Ray) or a ``HOST:PORT`` address first, joins
  ``address`` (else ``RAY_ADDRESS``, else a loopback-only local Ray), grades, and leaves in
  ``out_dir`` the graders' logs, ``swebench_validation.json`` and
  ``evidence/validation/round=0/part-*.parquet`` (``ratchet --db OUT query`` reads it). A daemon
  that does not answer, a cluster that cannot be joined or graders that cannot start raise
  ``ValidateError`` (one line: what failed and the fix); a failing instance is in the
  ``Validation``, never an error.
- Pool size: ``workers`` when given; else ``workers.graders`` capped by the grades and by the
  ``docker`` units (and CPUs) free now, so no grader waits unplaceable until the start timeout
  (a 2-core local Ray offers 2 units; 4 graders made every validation wait 300 s and fail).
- Image digests: one zero-CPU task per Docker node reads each graded instance's image id there
  (``validation.image_digest``; null where the node no longer holds it).
- Gold records: for each instance whose gold patch resolved on every repeat, the record is
  ensured on a grader and its mutants validated to fail under gold counted
  (``Validation.mutants``); with ``cheat_probe.enabled`` its twin record too (``twin``).
- Ctrl-C or SIGTERM (one whose exception Python swallowed too: ``loop.signals.watching_signals``,
  asked between waits) leaves by ``KeyboardInterrupt`` with nothing recorded (the evidence and
  the report are written once every grade is in), the graders released and, on a local Ray,
  the containers of this validation removed (a killed grader leaves its container running).
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

from ratchet_ray.loop.swebench_nodes import image_digests, image_reports


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


def _remove_containers(settings: Any, run_label: str) -> None:
    """Remove this machine's containers of ``run_label`` (``container.reap_containers``), with
    a warning, never an error, when the daemon refuses: the next grader's start reaps them."""
    from ratchet_ray.suites.swebench.docker.container import docker_client, reap_containers

    try:
        client = docker_client(settings)
        try:
            reap_containers(client, run_label)
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - on the way out of an interrupt: said, not raised
        logging.getLogger(__name__).warning(
            "the containers of %s were not removed (%s); the next grader on this machine "
            "removes them", run_label, exc)


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


def _gold_record(worker: Any, instance: dict, twins: bool = False) -> int:
    """Run in a grader actor (``__ray_call__``): the mutants of the instance's gold record;
    with ``twins``, its twin record is ensured too (``twin.TwinGrading.twin_record``)."""
    kept = len(worker.grader.proof.gold_record(instance).kept)
    if twins:
        worker.grader.twins.twin_record(instance)
    return kept


def gold_mutants(pool: Any, instances: list[dict], twins: bool = False) -> dict[str, Any]:
    """Instance id -> mutants validated to fail under gold, or why none is known; ``twins``:
    each instance's twin record is made too (the cheat probe's, one session of the base code)."""
    from actors.draining import map_unordered

    return {r.item["instance_id"]: r.value if r.ok
            else f"unknown ({r.exit_status}: {r.error})"[:300]
            for r in map_unordered(pool, _gold_record, instances, twins)}


def validate_dataset(config: Any, ids: Sequence[str] | None, out_dir: Path,
                     workers: int | None = None, repeat: int = 1, address: str | None = None,
                     note: Callable[[str], None] = lambda _text: None) -> Validation:
    """See the module contract; ``note`` receives progress lines for the terminal."""
    import ray

    from actors.pool_errors import PoolError
    from ratchet_ray.evidence.store import EvidenceStore
    from ratchet_ray.loop.grade_pool import grade_all
    from ratchet_ray.loop.runtime import check_ray, make_grader_factory
    from ratchet_ray.loop.session import RunRuntime, ray_session
    from ratchet_ray.loop.signals import watching_signals
    from ratchet_ray.suites.swebench.dataset import load_instances
    from ratchet_ray.suites.swebench.docker.images import image_name
    from ratchet_ray.suites.swebench.settings import settings_from_config
    from ratchet_ray.suites.swebench.validate import (REPORT_FILE, evidence_rows, gold_pairs,
                                                      validate)

    settings = settings_from_config(config)
    pairs = gold_pairs(settings, ids)
    given, address = address, address or os.environ.get("RAY_ADDRESS") or None
    if not address:
        check_docker(settings)  # a local Ray grades with this machine's daemon
    else:
        check_ray(given)  # before anything is written: one line naming the fix (and where from)
    out_dir.mkdir(parents=True, exist_ok=True)
    scope = f"swe_validate_{uuid.uuid4().hex[:12]}"
    run_label: list[str] = []  # the graders' containers' label (``RUN_KEY``), on a local Ray
    try:
        with watching_signals() as again, ray_session(address), \
                RunRuntime(config, scope, checks=False) as rt:
            size, capped = grader_count(workers, config.workers.graders, 2 * len(pairs) * repeat)
            if capped:
                note(capped)
            artifacts = rt.artifacts(out_dir, config.infra.artifact_uri)
            if not address:
                run_label.append(artifacts.locate())
            pool = rt.pool("grader", make_grader_factory(config, out_dir, artifacts), size)
            nodes: list[str] = []
            again()
            result = validate(partial(grade_all, pool, nodes=nodes, tick=again), pairs, repeat)
            again()
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
                here = ray.get_runtime_context().get_node_id()  # no placement: one node
                for outcome in result.outcomes:
                    outcome.node = here
            result.nodes = image_reports(settings)
    except KeyboardInterrupt:
        for label in run_label:  # the graders were killed mid-grade: their containers go too
            _remove_containers(settings, label)
        raise
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

    with EvidenceStore(out_dir).connect() as con:
        return fetch_dicts(con, "validation_flake_rates")
