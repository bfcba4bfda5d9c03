"""One scripted SWE-bench round as a driver process of its own, joined to the cluster at
RAY_ADDRESS (the scenario of ``tests/suites/swebench/test_swebench_loop.py``, without its unbuildable
instance): the real patch agent and the real Docker grader, on whichever node offers ``docker``.

    python tests/cluster/swebench_driver.py INPUTS_DIR RESULTS_DIR

Writes the instances under ``INPUTS_DIR`` (where every node can read them) and the run under
``RESULTS_DIR``; prints the run dir as the last line of stdout.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent), str(HERE.parent / "suites" / "swebench")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import ray.cloudpickle  # noqa: E402

import fakes  # noqa: E402
import swebench_instances  # noqa: E402
import test_swebench_loop  # noqa: E402  (ships itself to the workers by value)
from ratchet_ray.cli.run import build_overrides  # noqa: E402
from ratchet_ray.run_config.files import load_config  # noqa: E402
from ratchet_ray.loop.driver import run_loop  # noqa: E402
from ratchet_ray.loop.runtime import Models  # noqa: E402

ray.cloudpickle.register_pickle_by_value(fakes)  # the workers cannot import tests/ by name
TRAIN, EVAL = ["ratchet__calc-1", "ratchet__calc-2"], ["ratchet__calc-3"]

if __name__ == "__main__":
    inputs, results = Path(sys.argv[1]), Path(sys.argv[2])
    inputs.mkdir(parents=True, exist_ok=True)
    dataset, subset = inputs / "instances.jsonl", inputs / "subset.json"
    swebench_instances.write_dataset(dataset)
    subset.write_text(json.dumps({"train_ids": TRAIN, "eval_ids": EVAL}))
    # One Solver and one Grader: each holds a `docker` unit, and the dock node offers two.
    config = load_config([], [
        *build_overrides("swebench", rounds=1, subset=subset, dataset_path=dataset, tag="cluster"),
        "swebench.namespace=null", "swebench.cache_level=instance", "swebench.memory_mb=512",
        f"results_dir={results}", "swebench.grade_command_timeout_s=60",
        "swebench.instance_deadline_s=300", "workers.solvers=1", "workers.graders=1"])
    models = Models(llm=fakes.ScriptedLLM(test_swebench_loop.AgentScript()),
                    embedder=fakes.HashEmbedder())
    print(run_loop(config, models=models, show_progress=False), flush=True)
