"""The swebench registration's hooks named by ``"module:attr"`` strings resolve to the callables
the loop and ``ratchet`` call (a module that moves without its string updated fails here, not
in a run's round), and the per-round report keeps its shape (no Ray, no Docker: the node
readings are stood in)."""

from __future__ import annotations

from dataclasses import fields

from ratchet_ray.suites import registry
from ratchet_ray.suites.contract import is_target
from ratchet_ray.loop import swebench_nodes as reports


def test_every_hook_named_by_string_resolves():
    plugin = registry.registration("swebench")
    named = {f.name: getattr(owner, f.name) for owner in (plugin, plugin.cluster)
             for f in fields(owner) if is_target(getattr(owner, f.name))}
    assert {"round_report", "commands", "placement", "impossible_twin",
            "before_rounds"} <= set(named)
    for name, target in named.items():
        assert callable(registry.resolve(target)) or name == "commands", (name, target)
    assert registry.resolve(plugin.cluster.round_report) is reports.round_report
    assert registry.resolve(plugin.commands)[0].name == "swe"


def test_round_report_reads_at_the_start_and_reports_the_delta_at_the_end(monkeypatch):
    from ratchet_ray.settings.schema import LoopConfig

    reading = {"node": "n1", "lock_dir": "/tmp/x", "hits": 1, "builds": 0, "pulls": 0,
               "strips": 0, "evictions": 0, "refusals": 0, "images": 1, "used_gb": 1.0,
               "budget_gb": 10.0}
    later = {**reading, "hits": 4}
    readings = iter([[reading], [later]])
    monkeypatch.setattr(reports, "image_reports", lambda settings: next(readings))
    config = LoopConfig(suite="swebench")
    start = reports.round_report(config, None)
    assert start == [reading]
    end = reports.round_report(config, start)
    assert set(end) == {"image_cache"}  # no quarantine file in this config
    assert end["image_cache"] and end["image_cache"][0].get("hits") == 3
