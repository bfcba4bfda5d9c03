"""SWE-bench work placed by locality, as a driver process of its own joined to the cluster at
RAY_ADDRESS: the run's real Solver pool (the scripted patch agent in each instance's container)
and then its real Grader pool, each made by ``loop.runtime.make_pool`` (so with the suite's
placement), and where each job ran.

    python tests/cluster/locality_driver.py DATASET OUT_DIR SIZE ID [ID ...]

Solves the instances ``ID...`` in that order on SIZE Solvers, stops them (each holds a
``docker`` unit), grades each patch on SIZE Graders, and prints one JSON line: per instance its
solve and grade node ids and whether each ended ok, and the surveys each pool made.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent), str(HERE.parent / "suites" / "swebench")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import ray  # noqa: E402
import ray.cloudpickle  # noqa: E402

import fakes  # noqa: E402
import test_swebench_loop  # noqa: E402  (ships itself to the workers by value)
from actors.artifacts import run_artifacts_access  # noqa: E402
from actors.draining import drain  # noqa: E402
from actors.grader import GraderWorker  # noqa: E402
from actors.solver import SolverWorker  # noqa: E402
from ratchet_ray.run_config.files import load_config  # noqa: E402
from ratchet_ray.loop.runtime import (Models, make_grader_factory, make_pool,  # noqa: E402
                                      make_solver_factory)
from ratchet_ray.suites import suite_for  # noqa: E402

ray.cloudpickle.register_pickle_by_value(fakes)  # the workers cannot import tests/ by name


def run_pool(pool, method, jobs: list[tuple]) -> dict[str, dict]:
    """Queue ``jobs`` (item, *args) in order, drain, and return per task id its result."""
    out: dict[str, dict] = {}

    def handle(_pool, result):
        out[result.item.task_id] = {"node": result.node, "ok": result.ok,
                                    "value": result.value, "error": repr(result.error)}
    with pool.held():  # as the loop queues a round's solves: placed knowing the whole burst
        for item, *args in jobs:
            pool.submit(method, item, *args)
    drain([pool], handle)
    return out


def main(dataset: Path, out: Path, size: int, ids: list[str]) -> dict:
    config = load_config([], [
        "suite=swebench", f"dataset_path={json.dumps(str(dataset))}",
        "swebench.namespace=null", "swebench.cache_level=instance", "swebench.memory_mb=512",
        f"results_dir={json.dumps(str(out))}", "swebench.grade_command_timeout_s=60",
        "swebench.instance_deadline_s=300"])
    tasks = {t.task_id: t for t in suite_for(config).load_tasks(config)}
    models = Models(llm=fakes.ScriptedLLM(test_swebench_loop.AgentScript()),
                    embedder=fakes.HashEmbedder())
    ray.init(configure_logging=False, log_to_driver=False)
    artifacts, service = run_artifacts_access(out)
    solvers = make_pool("solver", config, make_solver_factory(
        config, out, models, solver_cache=False, artifacts=artifacts), size)
    solved = run_pool(solvers, SolverWorker.run, [(tasks[i], "train", 0) for i in ids])
    surveys = {"solver": solvers.locality.surveys}
    solvers.shutdown()  # frees the docker units the graders need
    graders = make_pool("grader", config, make_grader_factory(config, out, artifacts), size)
    graded = run_pool(graders, GraderWorker.grade, [(tasks[i], solved[i]["value"].output) for i in ids])
    surveys["grader"] = graders.locality.surveys
    graders.shutdown()
    ray.kill(service)
    return {"surveys": surveys, "instances": {i: {
        "solve_node": solved[i]["node"], "solve_ok": solved[i]["ok"],
        "grade_node": graded[i]["node"], "grade_ok": graded[i]["ok"],
        "infra_failure": bool(graded[i]["ok"] and graded[i]["value"].infra_failure),
        "error": graded[i]["error"] if not graded[i]["ok"] else solved[i]["error"]}
        for i in ids}}


if __name__ == "__main__":
    result = main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
    print(json.dumps(result), flush=True)
