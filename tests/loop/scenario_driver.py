"""Run the scripted governance scenario as a driver process of its own (the resume test kills it).

    python tests/loop/scenario_driver.py CONFIG_YAML        # joins the Ray cluster at RAY_ADDRESS

Prints the run dir on the first line of stdout, as soon as it exists.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent), str(HERE)]

import ray.cloudpickle  # noqa: E402

import fakes  # noqa: E402
import loop_helpers  # noqa: E402
from ratchet_ray.run_config.files import load_config
from ratchet_ray.loop.driver import run_loop  # noqa: E402

ray.cloudpickle.register_pickle_by_value(fakes)
ray.cloudpickle.register_pickle_by_value(loop_helpers)

if __name__ == "__main__":
    run_loop(load_config([sys.argv[1]]), models=loop_helpers.scenario_models(),
             show_progress=False, announce=lambda path: print(path, flush=True))
