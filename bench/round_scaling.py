"""How one round scales with Solver actors and Ray nodes when the LLM is the bottleneck, and what
the loop's machinery costs per task over a bare ``ray.util.ActorPool`` on the same actors.

    python bench/round_scaling.py [--nodes 1,2,3] [--actors 16,64] [--tasks 128] [--delay 0.5]

Starts ``bench/delay_server.py`` in a process of its own (an OpenAI-compatible server on
127.0.0.1 that answers after a fixed delay, with Nagle's algorithm off as real servers have it)
and a real multi-node Ray cluster on this machine: a head without CPUs and
``max(--nodes)`` worker nodes, each its own ``ray start`` process on loopback
(``tests/cluster/local_cluster.py``, the launcher of the multi-node tests). For every node
count K and actor count N, N real ``SolverActor``s (router + solver over the ``openai``
backend) are spread evenly over K worker nodes and one train split of ``--tasks`` tasks runs
twice on those same actors:

- ``bare``: ``ray.util.ActorPool.map_unordered`` calling ``run`` on each task, nothing else;
- ``ratchet``: ``SplitRunner`` (``ResilientPool`` -> grader pool -> capsules and llm_call rows in
  a real ``EvidenceStore``), as a round runs it. Grading is an instant stand-in (4 actors) so
  the numbers isolate LLM-bound fan-out.

The bank holds three skills, so every task costs two LLM calls (router pick + solve); the ideal
wall time is ceil(tasks / N) x 2 x delay. Prints per (K, N): both wall times, the efficiency
ideal / wall of each (target >= 0.9 for ``ratchet`` at 16 actors), and the per-task overhead
of ``ratchet`` over ``bare``: (wall_ratchet - wall_bare) / ceil(tasks / N), the extra time
each task adds to an actor's queue. Actor start-up and one warm-up call per actor are outside
the timed region, and so is one warm-up split through ``SplitRunner`` (the driver's first
imports and files); actors are reused across node counts where they sit on a node still in use.
All nodes share this machine's cores: more nodes add Ray's cross-node hops, not CPUs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "cluster")]
# Before Ray is imported: the local cluster's nodes use token auth and stay on loopback.
os.environ.setdefault("RAY_AUTH_MODE", "token")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.pop("RAY_ADDRESS", None)

import ray  # noqa: E402
from ray.util import ActorPool  # noqa: E402

from actors.pools import ResilientPool  # noqa: E402
from actors.solver import SolverActor  # noqa: E402
from bench.delay_server import serve_in_process  # noqa: E402
from local_cluster import LocalCluster, NodeSpec  # noqa: E402
from ratchet_ray.settings.schema import LLMSettings, LoopConfig  # noqa: E402
from ratchet_ray.evidence.store import EvidenceStore  # noqa: E402
from ratchet_ray.loop.execute import SplitRunner  # noqa: E402
from ratchet_ray.types import GradeResult, Guidance, Skill, Task  # noqa: E402

GRADERS = 4


@ray.remote(num_cpus=0)
class InstantGrader:
    """Grading is not what this bench measures: every output fails at once."""

    def ping(self) -> bool:
        return True

    def grade(self, task: Task, output: str) -> GradeResult:
        return GradeResult(passed=False, trace="not graded (bench)", exit_status="not_graded")


def _tasks(n: int, prefix: str = "bench") -> list[Task]:
    return [Task(task_id=f"{prefix}/{i}", suite="mbpp",
                 prompt=f"Write a function that returns the {i}-th triangular number.",
                 payload={"entry_point": f"triangular_{i}"}) for i in range(n)]


def _skills() -> list[Skill]:
    names = ("sliding_window", "edge_cases_first", "integer_math")
    return [Skill(id=n, name=n, description=f"when {n} applies", intent=f"Use {n}",
                  guidance=Guidance(applies_when=f"tasks needing {n}", key_insight="think first"))
            for n in names]


def _handed_out(handles: list) -> ResilientPool:
    """A pool over existing actors (the factory hands them out in order)."""
    given = iter(handles)
    return ResilientPool(lambda: next(given), len(handles), name="bench")


class Placement:
    """Solver actors per worker node, started on demand and kept while their node is in use."""

    def __init__(self, config: LoopConfig, nodes: list[str]):
        self.config, self.nodes = config, nodes
        self.live: dict[str, list] = {name: [] for name in nodes}

    def actors(self, k: int, n: int) -> list:
        """``n`` warm solvers spread evenly over the first ``k`` worker nodes; the actors of
        the other nodes are released."""
        for name in self.nodes[k:]:
            for handle in self.live[name]:
                ray.kill(handle)
            self.live[name] = []
        chosen, fresh = [], []
        for i, name in enumerate(self.nodes[:k]):
            want = n // k + (1 if i < n % k else 0)
            while len(self.live[name]) < want:
                handle = SolverActor.options(num_cpus=0, resources={f"node_{name}": 0.001}
                                             ).remote(self.config, output_kind="code")
                self.live[name].append(handle)
                fresh.append(handle)
            chosen += self.live[name][:want]
        if fresh:  # set the bank, and one untimed call each: HTTP connection, lazy imports
            ray.get([h.set_bank.remote(_skills()) for h in fresh])
            ray.get([h.run.remote(t, "train", 0) for h, t in zip(fresh, _tasks(len(fresh), "w"))])
        return chosen


def _runner(solvers: list, graders: list, store: Path, label: str) -> SplitRunner:
    return SplitRunner(run_id=label, arm="bench", seed=0, store=EvidenceStore(store),
                       solvers=_handed_out(solvers), graders=_handed_out(graders))


def warm_up(placement: Placement, graders: list, k: int, n: int, workdir: Path) -> None:
    """One untimed split through the loop's path on the first actors: the driver's one-time
    costs (imports of the evidence store's Parquet and DuckDB code, its first files) are not a
    per-task overhead, as actor start-up is not."""
    solvers = placement.actors(k, n)
    _runner(solvers, graders, workdir / "warm_up", "warmup").run(
        _tasks(len(solvers), "warm"), "train", 0)


def one_round(placement: Placement, graders: list, tasks: list[Task], k: int, n: int,
              workdir: Path) -> tuple[float, float]:
    """(bare, ratchet) seconds for one split of ``tasks`` on ``n`` solvers over ``k`` nodes."""
    solvers = placement.actors(k, n)
    started = time.perf_counter()
    outcomes = list(ActorPool(solvers).map_unordered(
        lambda actor, task: actor.run.remote(task, "train", 0), tasks))
    bare = time.perf_counter() - started
    if len(outcomes) != len(tasks):
        raise RuntimeError(f"bare pool: {len(outcomes)} outcomes for {len(tasks)} tasks")
    runner = _runner(solvers, graders, workdir / f"nodes{k}_actors{n}", f"bench{k}x{n}")
    started = time.perf_counter()
    result = runner.run(tasks, "train", 0)
    ours = time.perf_counter() - started
    if result.total != len(tasks):
        raise RuntimeError(f"{result.total} capsules for {len(tasks)} tasks")
    return bare, ours


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1,2,3", help="Worker node counts to compare.")
    parser.add_argument("--actors", default="16,64", help="Solver actor counts.")
    parser.add_argument("--tasks", type=int, default=128)
    parser.add_argument("--delay", type=float, default=0.5, help="Server delay per request (s).")
    args = parser.parse_args()
    node_counts, actor_counts = _ints(args.nodes), _ints(args.actors)
    workers = [f"w{i + 1}" for i in range(max(node_counts))]
    began = time.perf_counter()
    with serve_in_process(args.delay) as url, tempfile.TemporaryDirectory() as tmp:
        cluster = LocalCluster([NodeSpec("head", 0), *(NodeSpec(w, 2) for w in workers)],
                               Path(tmp) / "logs")
        try:
            cluster.start()
            ray.init(address=cluster.address, configure_logging=False, log_to_driver=False)
            config = LoopConfig(llm=LLMSettings(backend="openai", base_url=url, model="delay"))
            graders = [InstantGrader.options(resources={"node_head": 0.001}).remote()
                       for _ in range(GRADERS)]
            placement = Placement(config, workers)
            tasks = _tasks(args.tasks)
            print(f"one round: {args.tasks} tasks x 2 LLM calls, server delay {args.delay}s, "
                  f"{len(workers)} worker nodes + head on {os.cpu_count()} cores "
                  f"(cluster up in {time.perf_counter() - began:.0f}s), Ray {ray.__version__}")
            print(f"{'nodes':>5} {'actors':>6} {'ideal_s':>8} {'bare_s':>7} {'ours_s':>7} "
                  f"{'eff_bare':>8} {'eff_ours':>8} {'overhead/task_ms':>16}")
            warm_up(placement, graders, max(node_counts), actor_counts[0], Path(tmp))
            for k in sorted(node_counts, reverse=True):  # fewer nodes later: reuse their actors
                for n in actor_counts:
                    bare, ours = one_round(placement, graders, tasks, k, n, Path(tmp))
                    per_actor = -(-args.tasks // n)
                    ideal = per_actor * 2 * args.delay
                    print(f"{k:>5} {n:>6} {ideal:>8.2f} {bare:>7.2f} {ours:>7.2f} "
                          f"{ideal / bare:>8.2f} {ideal / ours:>8.2f} "
                          f"{(ours - bare) / per_actor * 1000:>16.1f}", flush=True)
            print(f"total {time.perf_counter() - began:.0f}s")
        finally:
            if ray.is_initialized():
                ray.shutdown()
            cluster.stop()


if __name__ == "__main__":
    main()
