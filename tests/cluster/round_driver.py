"""One scripted MBPP+ round as a driver process of its own, joined to the cluster at RAY_ADDRESS.

    python tests/cluster/round_driver.py OUT_DIR DELAY_S

The governance scenario of ``tests/loop_helpers.py`` (real graders with the sandbox), each
LLM answer ``DELAY_S`` late so a test can kill a node while tasks are in flight. Prints the run
dir on the first line of stdout as soon as it exists.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent)]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import ray.cloudpickle  # noqa: E402

import fakes  # noqa: E402
import loop_helpers  # noqa: E402
from ratchet_ray.loop.driver import run_loop  # noqa: E402
from ratchet_ray.loop.runtime import Models  # noqa: E402

ray.cloudpickle.register_pickle_by_value(fakes)
ray.cloudpickle.register_pickle_by_value(loop_helpers)


class Late:
    """The scenario's answers, ``delay`` seconds late."""

    def __init__(self, inner, delay: float):
        self.inner, self.delay = inner, delay

    def __call__(self, messages, json_schema=None) -> str:
        time.sleep(self.delay)
        return self.inner(messages, json_schema)


if __name__ == "__main__":
    out, delay = Path(sys.argv[1]), float(sys.argv[2])
    models = loop_helpers.scenario_models()
    llm = fakes.ScriptedLLM(Late(models.llm.responder, delay))
    run_loop(loop_helpers.scenario_config(out, 1), models=Models(llm=llm, embedder=models.embedder),
             show_progress=False, announce=lambda path: print(path, flush=True))
