"""How one round scales with the number of Solver actors when the LLM is the bottleneck.

    python bench/round_scaling.py [--tasks 100] [--delay 0.5] [--actors 1,2,4,8,16]

Starts ``bench/delay_server.py`` (an OpenAI-compatible server on 127.0.0.1 that answers after a
fixed delay) and runs one train split of ``--tasks`` tasks through the real loop machinery —
``SplitRunner``: Solver pool (real ``SolverActor``: router + solver over the ``openai`` backend)
-> grader pool -> capsules and llm_call rows in a real ``EvidenceStore`` — once per actor count.
The bank holds three skills, so every task costs two LLM calls (router pick + solve). Grading is
excluded (an instant stand-in grader) so the numbers isolate LLM-bound fan-out. Prints the wall
time, the speedup over one actor and the efficiency = speedup / actors (target >= 0.8 at 16).
Actor start-up and one warm-up call per actor are outside the timed region.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import ray

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actors.pools import ResilientPool, map_unordered  # noqa: E402
from actors.solver import SolverActor  # noqa: E402
from bench.delay_server import serve  # noqa: E402
from ratchet_ray.config import LLMSettings, LoopConfig  # noqa: E402
from ratchet_ray.evidence.store import EvidenceStore  # noqa: E402
from ratchet_ray.loop.execute import SplitRunner  # noqa: E402
from ratchet_ray.types import GradeResult, Guidance, Skill, Task  # noqa: E402


@ray.remote(num_cpus=0)
class InstantGrader:
    """Grading is not what this bench measures: every output fails at once."""

    def ping(self) -> bool:
        return True

    def grade(self, task: Task, output: str) -> GradeResult:
        return GradeResult(passed=False, trace="not graded (bench)", exit_status="not_graded")


def _tasks(n: int) -> list[Task]:
    return [Task(task_id=f"bench/{i}", suite="mbpp",
                 prompt=f"Write a function that returns the {i}-th triangular number.",
                 payload={"entry_point": f"triangular_{i}"}) for i in range(n)]


def _skills() -> list[Skill]:
    names = ("sliding_window", "edge_cases_first", "integer_math")
    return [Skill(id=n, name=n, description=f"when {n} applies", intent=f"Use {n}",
                  guidance=Guidance(applies_when=f"tasks needing {n}", key_insight="think first"))
            for n in names]


def one_round(config: LoopConfig, tasks: list[Task], actors: int, workdir: Path) -> float:
    """Seconds for one split of ``tasks`` with ``actors`` solvers (and as many graders)."""
    solvers = ResilientPool(lambda: SolverActor.options(num_cpus=0).remote(
        config, output_kind="code"), actors, name="solver")
    graders = ResilientPool(lambda: InstantGrader.remote(), actors, name="grader")
    solvers.broadcast("set_bank", _skills())  # waits until every solver is up
    graders.broadcast("ping")
    # One untimed call per actor opens its HTTP connection and imports what the first call needs.
    map_unordered(solvers, "run", _tasks(actors), "train", 0)
    runner = SplitRunner(run_id=f"bench{actors}", arm="bench", seed=0,
                         store=EvidenceStore(workdir / f"actors{actors}"), solvers=solvers,
                         graders=graders)
    started = time.perf_counter()
    bench = runner.run(tasks, "train", 0)
    elapsed = time.perf_counter() - started
    if bench.total != len(tasks):
        raise RuntimeError(f"{bench.total} capsules for {len(tasks)} tasks")
    solvers.shutdown()
    graders.shutdown()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--delay", type=float, default=0.5, help="Server delay per request (s).")
    parser.add_argument("--actors", default="1,2,4,8,16")
    args = parser.parse_args()
    counts = [int(x) for x in args.actors.split(",")]
    server, url = serve(args.delay)
    ray.init(num_cpus=max(counts) * 2, _node_ip_address="127.0.0.1", include_dashboard=False,
             configure_logging=False, log_to_driver=False)
    config = LoopConfig(llm=LLMSettings(backend="openai", base_url=url, model="delay"))
    tasks = _tasks(args.tasks)
    print(f"one round: {args.tasks} tasks x 2 LLM calls, server delay {args.delay}s, "
          f"{sys.platform}, Ray {ray.__version__}")
    print(f"{'actors':>6} {'wall_s':>8} {'ideal_s':>8} {'speedup':>8} {'efficiency':>10}")
    base = None
    with tempfile.TemporaryDirectory() as tmp:
        for n in counts:
            wall = one_round(config, tasks, n, Path(tmp))
            base = base if base is not None else wall * counts[0]
            ideal = -(-args.tasks // n) * 2 * args.delay
            speedup = base / wall
            print(f"{n:>6} {wall:>8.2f} {ideal:>8.2f} {speedup:>8.2f} {speedup / n:>10.2f}",
                  flush=True)
    ray.shutdown()
    server.shutdown()


if __name__ == "__main__":
    main()
