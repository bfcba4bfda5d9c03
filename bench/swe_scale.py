"""The scaled parts of ``bench/swe_throughput.py``: a round replayed through the real agent loop,
and grading or rounds on a multi-node local Ray cluster.

- ``GoldReplayLLM``: a scripted model for the real patch agent (``swebench.agent``): at an
  instance's first step it answers one shell action that applies the instance's gold patch
  (``git apply`` of a here-document), at the next it submits. Everything else of the agent runs
  for real: a container of the instance image per step, the untrusted user, the ``git diff``
  that becomes the patch.
- ``run_round(config, instances, workers, out)``: one round's work for every instance on W
  Solvers and W Graders (the loop's pools, ``loop.runtime.make_pool``): solves queued as one
  burst (``held``), each patch graded as soon as its solve ends (one ``drain``, as the loop's
  split does), actors started before the clock starts. Returns the wall, the resolved count,
  the mean solve and grade times.
- ``run_on_nodes(dataset, out, nodes, round_, timeout_s)``: a ``LocalCluster``
  (``tests/cluster``: a head without CPUs and ``nodes`` worker nodes on this machine, each
  offering ``docker`` units for one Grader, and one Solver with ``round_``) and, from a driver
  process of its own joined to it (``python bench/swe_scale.py drive ...``), one grading pass of
  the gold patches (``swe_common.run_ours``) on one Grader per node, or a round
  (``run_round``) on one Solver and one Grader per node. Returns the driver's JSON.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests" / "cluster")]


class GoldReplayLLM:
    """The agent's model replaying each instance's gold patch (module contract); picklable."""

    backend = "gold-replay"
    model = "gold-replay"

    def __init__(self, instances: list[dict]):
        self.patches = {i["problem_statement"]: i["patch"] for i in instances}

    def complete(self, messages, *, max_tokens=512, temperature=0.0, stop=None,
                 json_schema=None):
        from ratchet_ray.llm.base import Reply

        text = "\n".join(m.content for m in messages)
        patch = next((p for statement, p in self.patches.items() if statement in text), None)
        if patch is None:
            raise ValueError(f"no instance's problem statement in the prompt: {text[:120]!r}")
        if "(none yet)" in text:
            action = {"thought": "apply the fix", "done": False,
                      "command": f"git apply - <<'EOF_GOLD'\n{patch}EOF_GOLD"}
        else:
            action = {"thought": "fixed", "command": "", "done": True}
        reply = json.dumps(action)
        return Reply(text=reply, input_tokens=len(text.split()), output_tokens=len(reply.split()),
                     latency_s=0.0, model=self.model, backend=self.backend)


class NoEmbedder:
    """The Solver's embedder: never called (the round's bank is empty, so nothing is routed)."""

    name = "none"

    def embed(self, texts, input_type="search_document"):
        raise RuntimeError("the bench's round routes nothing; no embedding expected")


def run_round(config: Any, instances: list[dict], workers: int, out: Path) -> dict:
    """One round's solve + grade of every instance on W Solvers and W Graders (module
    contract)."""
    import ray

    from actors.artifacts import run_artifacts_access
    from actors.draining import drain
    from actors.grader import GraderWorker
    from actors.solver import SolverWorker
    from ratchet_ray.loop.runtime import (Models, make_grader_factory, make_pool,
                                          make_solver_factory)
    from ratchet_ray.suites.swebench.dataset import normalize_all, to_task

    if __name__ != "__main__":  # the actors cannot import this bench module by name
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    tasks = [to_task(i) for i in normalize_all(instances, "bench")]
    models = Models(llm=GoldReplayLLM(instances), embedder=NoEmbedder())
    artifacts, service = run_artifacts_access(out)
    solvers = make_pool("solver", config, make_solver_factory(
        config, out, models, solver_cache=False, artifacts=artifacts), workers)
    graders = make_pool("grader", config, make_grader_factory(config, out, artifacts), workers)
    solved: dict[str, float] = {}
    grades: list = []
    try:
        solvers.heal()
        graders.heal()  # every actor up: the clock measures the round's work, not start-up
        ray.get([actor.warm.remote([]) for actor in graders.actors])  # (swe_common.run_ours)
        ready = time.monotonic()

        def handle(pool, result) -> None:
            if pool is solvers:
                outcome = result.value
                solved[result.item.task_id] = outcome.latency_s if result.ok else 0.0
                graders.submit(GraderWorker.grade, result.item, outcome.output if result.ok else "")
            else:
                grades.append(result)
        with solvers.held():
            for task in tasks:
                solvers.submit(SolverWorker.run, task, "train", 0)
        drain([solvers, graders], handle)
        wall = time.monotonic() - ready
    finally:
        solvers.shutdown()
        graders.shutdown()
        ray.kill(service)
    values = [r.value for r in grades if r.ok]
    return {"wall_s": wall, "resolved": sum(v.passed for v in values),
            "statuses": sorted(v.exit_status for v in values),
            "mean_solve_s": statistics.mean(solved.values()) if solved else None,
            "mean_grade_s": statistics.mean(v.duration_s for v in values) if values else None}


def _drive(dataset: Path, out: Path, workers: int, round_: bool, timeout_s: float) -> dict:
    """In a driver joined to the cluster (``RAY_ADDRESS``): grading or a round on W actors."""
    import ray

    from swe_common import bench_config, run_ours

    instances = [json.loads(line) for line in dataset.read_text().splitlines() if line]
    config = bench_config(dataset, out, timeout_s)
    ray.init(address=os.environ["RAY_ADDRESS"], configure_logging=False, log_to_driver=False)
    try:
        nodes = len([n for n in ray.nodes() if n["Alive"] and n["Resources"].get("docker")])
        result = (run_round(config, instances, workers, out / "round") if round_
                  else run_ours(config, instances, workers, out / "grade"))
        return {**result, "docker_nodes": nodes}
    finally:
        ray.shutdown()


def run_on_nodes(dataset: Path, out: Path, nodes: int, round_: bool, timeout_s: float) -> dict:
    """Grading (or a round) on a fresh local cluster of ``nodes`` Docker nodes (module
    contract)."""
    from local_cluster import LocalCluster, NodeSpec

    per_node = 2 if round_ else 1  # a Grader per node, and a Solver with a round
    specs = [NodeSpec("head", 0)] + [NodeSpec(f"dock{k}", 2, {"docker": per_node})
                                     for k in range(nodes)]
    logs = Path(tempfile.mkdtemp(prefix="swe-nodes-", dir=out))
    cluster = LocalCluster(specs, logs).start()
    try:
        proc = subprocess.run(
            [sys.executable, str(Path(__file__)), "drive", str(dataset), str(logs), str(nodes),
             "round" if round_ else "grade", f"{timeout_s:g}"],
            env=cluster.driver_env(), cwd=ROOT, capture_output=True, text=True, timeout=3600)
    finally:
        cluster.stop()
    if proc.returncode != 0:
        raise RuntimeError(f"the {nodes}-node driver failed ({proc.returncode}):\n"
                           f"{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__" and sys.argv[1:2] == ["drive"]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    _, _, data, where, count, kind, timeout = sys.argv
    print(json.dumps(_drive(Path(data), Path(where), int(count), kind == "round",
                            float(timeout))), flush=True)
