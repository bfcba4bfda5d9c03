"""Chaos: real runs through seeded faults end exactly like an uninterrupted run.

Each scenario (``scenarios.SCENARIOS``) drives the scripted governance scenario in driver
processes of its own on the test's Ray, injects faults at points drawn from ``Random(seed)``
and then checks every invariant of ``chaos_lib.INVARIANTS`` against the reference run.
``node_death`` runs on a multi-node cluster of its own (``tests/cluster/local_cluster.py``).
"""

from __future__ import annotations

import os
import random

import pytest

import chaos_lib
from scenarios import SCENARIOS

NAMES = [n for n in os.environ.get("CHAOS_SCENARIOS", ",".join(SCENARIOS)).split(",") if n]


@pytest.mark.chaos
@pytest.mark.timeout(2400)  # a scenario is several driver processes, each starting its actors
@pytest.mark.parametrize("seed", chaos_lib.seeds())
@pytest.mark.parametrize("name", NAMES)
def test_run_survives(name, seed, scenario_reference, tmp_path):
    reference = scenario_reference(chaos_lib.ROUNDS)
    rng = random.Random(f"{name}-{seed}")
    drivers: list[chaos_lib.Driver] = []
    chaos_lib.scenario_starts()
    try:
        run_dir = SCENARIOS[name](rng, tmp_path, drivers)
    finally:
        for driver in drivers:
            driver.kill()
    chaos_lib.REPORT.scenarios += 1
    label = f"{name} seed {seed}"
    bad = chaos_lib.check_invariants(run_dir, reference, label)
    bad += chaos_lib.check_no_orphans(drivers, label)
    assert not bad, f"{label}: " + "; ".join(bad)
