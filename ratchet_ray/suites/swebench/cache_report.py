"""Every Docker node's image cache, as the cluster reports it, for ``ratchet swe validate`` and
each round's summary (the Ray tasks that read the nodes are ``loop.swebench_nodes``'s).

Contracts:
- ``merge_readings(readings)``: ``image_cache.node_report`` readings as one entry per index,
  sorted by node: Ray nodes of one host sharing an index are one (``ray_nodes`` counts them); a
  host with several indexes names each ``host:lock_dir``.
- ``round_delta(start, end)``: per node of ``end``, each counter's change since ``start``
  (``image_cache.COUNTERS``) and the cache use at the end (``USE_KEYS``); a node absent from
  ``start`` counts from its index's totals (``"since": "index start"``); an entry with an
  ``error`` is passed on. The counters are the node's: another run using it counts too.
"""

from __future__ import annotations

from typing import Any

from ratchet_ray.suites.swebench.docker.image_cache import COUNTERS

USE_KEYS = ("owned_images", "owned_gb", "budget_gb")


def merge_readings(readings: list[dict]) -> list[dict]:
    """One entry per index (module contract)."""
    by_index: dict[tuple[str, str], dict] = {}
    for reading in readings:
        reading = dict(reading)
        key = (reading.get("node", "?"), reading.pop("lock_dir", ""))
        if key in by_index:
            by_index[key]["ray_nodes"] += 1
        else:
            by_index[key] = {**reading, "ray_nodes": 1}
    hosts = [host for host, _ in by_index]
    for (host, lock_dir), entry in by_index.items():
        if hosts.count(host) > 1:  # nodes of one host with indexes of their own
            entry["node"] = f"{host}:{lock_dir}"
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
