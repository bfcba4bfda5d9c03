"""The SWE-bench suite's readings of every Docker node, taken by tiny Ray tasks pinned to each: the
loop's per-round report (the suite's ``round_report`` hook) and what ``ratchet swe validate``
records of the nodes. It uses Ray, so it lives in the loop's layer (the registration names it
by string); the plain data it merges is ``suites.swebench.cache_report``.

Contracts:
- ``image_reports(settings)``: every alive node offering ``docker`` reads its image-cache report
  (``image_cache.node_report``), merged to one entry per index; only informative: any failure
  is one entry ``{"node": "?", "error": why}``.
- ``round_report(config, start)``: at a round's start (``start`` None) the readings; at its end
  ``{"image_cache": cache_report.round_delta}``, with ``"quarantine"`` when the run has one.
- ``image_digests(settings, names)``: (node id, image name) -> image id on every alive Docker
  node; a node that cannot say is left out.
"""

from __future__ import annotations

from typing import Any


def _reading(settings: Any) -> dict[str, Any]:
    """This node's image-cache report with the index it came from (its ``lock_dir``)."""
    from ratchet_ray.suites.swebench.docker.image_cache import node_report
    from ratchet_ray.suites.swebench.settings import on_this_node

    return {**node_report(settings), "lock_dir": on_this_node(settings).lock_dir}


def _docker_nodes() -> list[str]:
    """The ids of the alive Ray nodes offering ``docker``."""
    import ray

    return [n["NodeID"] for n in ray.nodes()
            if n.get("Alive") and n.get("Resources", {}).get("docker")]


def image_reports(settings: Any) -> list[dict]:
    """The image-cache report of every alive node offering ``docker`` (one tiny task pinned to
    each), one entry per index (``cache_report.merge_readings``); only informative: a failure
    is one entry ``{"node": "?", "error": why}``."""
    import ray

    from actors.placement import on_node
    from ratchet_ray.suites.swebench.cache_report import merge_readings

    task = ray.remote(_reading)
    refs = [on_node(task, node).remote(settings) for node in _docker_nodes()]
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


def _digests(settings: Any, names: list[str]) -> dict[str, str]:
    """On one node: image name -> id of the images of ``names`` its daemon holds."""
    from ratchet_ray.suites.swebench.docker.container import docker_client
    from ratchet_ray.suites.swebench.docker.image_cache import find_image

    client = docker_client(settings)
    return {name: image.id for name in names if (image := find_image(client, name)) is not None}


def image_digests(settings: Any, names: list[str]) -> dict[tuple[str, str], str]:
    """(node id, image name) -> image id, read on every alive node offering ``docker``; a node
    that cannot say is left out (its rows get a null digest)."""
    import ray

    from actors.placement import on_node

    task = ray.remote(_digests)
    refs = {node: on_node(task, node).remote(settings, names) for node in _docker_nodes()}
    found: dict[tuple[str, str], str] = {}
    for node, ref in refs.items():
        try:
            held = ray.get(ref, timeout=60)
            found.update({(node, name): digest for name, digest in held.items()})
        except Exception:  # noqa: BLE001 - only informative: those rows carry no digest
            continue
    return found
