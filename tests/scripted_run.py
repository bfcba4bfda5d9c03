"""A short skill-loop run on MBPP+ with the scripted LLM, in a process of its own.

    python tests/scripted_run.py OUT_DIR ROUNDS

Runs the governance scenario of ``tests/loop_helpers.py`` (``ScriptedLLM`` + ``HashEmbedder``,
real Ray, real graders, real evidence) for ROUNDS rounds under ``OUT_DIR`` and prints the run
dir as the last line of stdout. ``ratchet_ray`` comes from whatever the running interpreter has
installed (the repo root is not put on the path), so the wheel test runs it against the
installed wheel. Needs ``MBPP_OVERRIDE_PATH`` or the evalplus cache, like every MBPP+ test.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

import ray.cloudpickle  # noqa: E402

import fakes  # noqa: E402
import loop_helpers  # noqa: E402
from ratchet_ray.loop.driver import run_loop  # noqa: E402

ray.cloudpickle.register_pickle_by_value(fakes)
ray.cloudpickle.register_pickle_by_value(loop_helpers)


def main(out_dir: Path, rounds: int) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    config = loop_helpers.scenario_config(out_dir, rounds)
    return run_loop(config, models=loop_helpers.scenario_models(), show_progress=False)


if __name__ == "__main__":
    print(main(Path(sys.argv[1]), int(sys.argv[2])), flush=True)
