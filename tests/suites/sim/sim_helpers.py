"""Helpers of the sim tests: a sim config under a tmp results dir, a run, its evidence rows."""

from __future__ import annotations

from pathlib import Path

from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.run_config.files import layered_files, load_config

ROOT = Path(__file__).resolve().parents[3]


def sim_config(results_dir: Path, *sets: str, arm: str | None = None) -> LoopConfig:
    """``configs/sim.yaml`` (+ the arm's file) with ``sets`` on top, under ``results_dir``."""
    files = layered_files("sim", [ROOT / "configs" / "ablations" / f"{arm}.yaml"] if arm else [])
    return load_config(files, [f"results_dir={results_dir}", *sets])


def run_sim(config: LoopConfig) -> Path:
    from ratchet_ray.loop.driver import run_loop

    return run_loop(config, show_progress=False)


def rows(run_dir: Path, sql: str) -> list[tuple]:
    from ratchet_ray.evidence.store import EvidenceStore

    with EvidenceStore(run_dir).connect() as con:
        return con.execute(sql).fetchall()


def legacy_config(results_dir: Path, *sets: str, arm: str | None = None) -> LoopConfig:
    """``sim_config`` in the world before its calibration (``sim.world: legacy``): the tests
    whose numbers were derived for that world (its prior, routing and phrases) use it."""
    return sim_config(results_dir, "sim.world=legacy", *sets, arm=arm)
