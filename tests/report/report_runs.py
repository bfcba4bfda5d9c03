"""The scripted governance scenario (``tests/loop_helpers.py``) with tracking settings."""

from __future__ import annotations

from pathlib import Path

import loop_helpers

SCENARIO_ROUNDS = 4


def run_scenario(root: Path, rounds: int, **tracking) -> Path:
    """The scripted governance scenario (``loop_helpers``) for ``rounds`` rounds under ``root``,
    with ``tracking.<key>=value`` settings."""
    from ratchet_ray.loop.driver import run_loop

    config = loop_helpers.scenario_config(root, rounds)
    for key, value in tracking.items():
        setattr(config.tracking, key, value)
    return run_loop(config, models=loop_helpers.scenario_models(), show_progress=False)
