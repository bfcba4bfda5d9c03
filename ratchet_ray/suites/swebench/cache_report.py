"""The image cache of every Docker node, read from the cluster: for ``ratchet swe validate`` and
for each round's summary (what each node's cache did during the round).

Contracts:
- ``image_reports(settings)``: ``image_cache.node_report`` of every alive Ray node offering
  ``docker`` (one tiny task pinned to each), one entry per index: Ray nodes of one host share
  ``swebench.lock_dir`` and so one index, reported once with ``ray_nodes`` counting them. Only
  informative: a failure is one entry ``{"node": "?", "error": why}``.
- ``round_delta(start, end)``: per node of ``end``, the change of each counter
  (``image_cache.COUNTERS``: hits, builds, pulls, strips, evictions, refusals) since ``start``
  and the cache use at the end (``owned_images``, ``owned_gb``, ``budget_gb``); a node absent
  from ``start`` counts from its index's totals (``"since": "index start"``).
- ``round_report(config, start)`` is the suite's ``round_report`` hook: at a round's start
  (``start`` None) the readings to keep; at its end ``{"image_cache": round_delta(...)}`` for
  ``RoundSummary.suite_report``. The counters are the node's, so another run that uses the same
  node during the round counts in them too.
"""

from __future__ import annotations

from typing import Any

from ratchet_ray.suites.swebench.image_cache import COUNTERS, node_report
from ratchet_ray.suites.swebench.settings import settings_from_config

USE_KEYS = ("owned_images", "owned_gb", "budget_gb")


def _reading(settings: Any) -> dict[str, Any]:
    """This node's report, with the index it came from (host and lock dir)."""
    import ray

    return {**node_report(settings), "lock_dir": settings.lock_dir,
            "ray_node": ray.get_runtime_context().get_node_id()}


def image_reports(settings: Any) -> list[dict]:
    """The image-cache report of every alive node offering ``docker`` (module contract)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("docker")]
    task = ray.remote(_reading)
    refs = [task.options(num_cpus=0, max_retries=0, scheduling_strategy=(
        NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))).remote(settings) for n in nodes]
    try:
        readings = ray.get(refs, timeout=60)
    except Exception as exc:  # noqa: BLE001 - only informative: never fails a run or a validation
        return [{"node": "?", "error": f"{type(exc).__name__}: {exc}"[:300]}]
    by_index: dict[tuple[str, str], dict] = {}
    for reading in readings:
        key = (reading["node"], reading.pop("lock_dir"))
        reading.pop("ray_node", None)
        if key in by_index:
            by_index[key]["ray_nodes"] += 1
        else:
            by_index[key] = {**reading, "ray_nodes": 1}
    return sorted(by_index.values(), key=lambda r: r["node"])


def round_delta(start: list[dict], end: list[dict]) -> list[dict]:
    """What each node's cache did between two readings (module contract)."""
    before = {r.get("node"): r for r in start if "error" not in r}
    out = []
    for now in end:
        if "error" in now:
            out.append(dict(now))
            continue
        then = before.get(now.get("node"))
        row: dict[str, Any] = {"node": now.get("node"), "ray_nodes": now.get("ray_nodes", 1)}
        row.update({k: int(now.get(k, 0)) - int((then or {}).get(k, 0)) for k in COUNTERS})
        row.update({k: now.get(k) for k in USE_KEYS})
        if then is None:
            row["since"] = "index start"
        out.append(row)
    return out


def round_report(config: Any, start: Any) -> Any:
    """The suite's ``round_report`` hook (module contract)."""
    readings = image_reports(settings_from_config(config))
    if start is None:
        return readings
    return {"image_cache": round_delta(start, readings)}
