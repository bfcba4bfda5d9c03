"""Suite registry: a short name maps to an import path, imported lazily."""

from __future__ import annotations

import importlib

from ratchet_ray.suites.base import Grader, Suite, split_tasks

SUITES = {
    "mbpp": "ratchet_ray.suites.mbpp:MbppSuite",
    "swebench": "ratchet_ray.suites.swebench:SwebenchSuite",
    "sim": "ratchet_ray.suites.sim:SimSuite",
}


def get_suite(name: str) -> Suite:
    """Instantiate the suite called ``name``; unknown names list the valid ones."""
    if name not in SUITES:
        raise KeyError(f"unknown suite {name!r}; valid suites: {', '.join(sorted(SUITES))}")
    module, _, attr = SUITES[name].partition(":")
    return getattr(importlib.import_module(module), attr)()


__all__ = ["Grader", "Suite", "SUITES", "get_suite", "split_tasks"]
