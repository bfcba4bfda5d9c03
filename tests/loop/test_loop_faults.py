"""Fault tolerance on a real local Ray: Solver and Grader actors killed mid-round."""

from __future__ import annotations

import ray

from actors.pools import ResilientPool
from actors.solver import SolverActor
from fakes import HashEmbedder, ScriptedLLM
from loop_helpers import DiesUnderTheFirstGrade, Made, SlowCanonical, running_actors
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.loop.execute import SplitRunner
from ratchet_ray.loop.runtime import make_grader_factory
from ratchet_ray.seeding import seeded_order
from ratchet_ray.suites import get_suite
from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus

TASK_IDS = ["Mbpp/2", "Mbpp/3", "Mbpp/4", "Mbpp/6", "Mbpp/7", "Mbpp/8", "Mbpp/9", "Mbpp/11"]


def slowed_down(solution: str, entry_point: str, seconds: float) -> str:
    """``solution`` with each call of ``entry_point`` taking ``seconds`` longer (same answers)."""
    return (f"{solution}\n\n_unslowed = {entry_point}\n\n"
            f"def {entry_point}(*args):\n    import time\n    time.sleep({seconds})\n"
            f"    return _unslowed(*args)\n")


def test_killing_a_solver_and_a_grader_mid_round_loses_nothing(ray_local, tmp_path):
    config = LoopConfig()
    by_id = {t.task_id: t for t in get_suite("mbpp").load_tasks(config)}
    tasks = [by_id[t] for t in TASK_IDS]
    dataset = load_mbpp_plus(None)
    solutions = {t.payload["entry_point"]: dataset.problem(t.task_id)["canonical_solution"]
                 for t in tasks}
    # The split submits its tasks in the seed's order: the first two are solved at once, every
    # later one waits at a gate the first recorded capsule opens (after the kills), so Solvers
    # are mid-job then on any machine (a fixed delay lost that race on a loaded one). A grade
    # is much shorter than a solve: the first task's grade is slowed (~3 s over its inputs,
    # well inside evalplus's 1 s per-input limit) so a grader is busy at the first capsule.
    first, second = seeded_order(tasks, lambda t: t.task_id, 42, 0, "eval", "tasks")[:2]
    slow = first.payload["entry_point"]
    problem = dataset.problem(first.task_id)
    inputs = len(problem["base_input"]) + len(problem["plus_input"])
    solutions[slow] = slowed_down(solutions[slow], slow, min(0.1, 3.0 / inputs))
    gate = tmp_path / "first-capsule-recorded"
    llm = ScriptedLLM(SlowCanonical(solutions, delay=1.5, gate=str(gate), ungated=frozenset(
        {slow, second.payload["entry_point"]})))
    made_solvers = Made(lambda: SolverActor.options(num_cpus=0).remote(
        config, llm=llm, embedder=HashEmbedder(), output_kind="code"))
    made_graders = Made(make_grader_factory(config, tmp_path))
    solvers = ResilientPool(made_solvers, 2, name="solver")
    graders = ResilientPool(made_graders, 2, name="grader")
    killed: dict[str, object] = {}

    def kill_once(capsule) -> None:
        # Kill one actor of each pool while it works on a task, at the first recorded capsule
        # that finds that pool busy (the first grade may outlast a fast solve: the grader's
        # start-up probes the sandbox), so each kill lands mid-job.
        for name, pool in (("solver", solvers), ("grader", graders)):
            if name not in killed and running_actors(pool):
                killed[name] = running_actors(pool)[0]
                ray.kill(killed[name])
        gate.touch()

    store = EvidenceStore(tmp_path / "run")
    runner = SplitRunner(run_id="faults", arm="default", seed=42, store=store, solvers=solvers,
                         graders=graders, on_capsule=kill_once)
    bench = runner.run(tasks, "eval", 0)

    assert set(killed) == {"solver", "grader"}
    # A killed actor is replaced when its lost job comes back; one whose job had just finished
    # when the kill landed is found by heal() before the next phase. Either way: once, and gone.
    solvers.heal()
    graders.heal()
    assert killed["solver"] not in solvers.actors and killed["grader"] not in graders.actors
    assert made_solvers.count == 3 and made_graders.count == 3, "one actor replaced in each"
    # Each lost attempt was resubmitted (every task below is graded once, correctly).
    assert len(solvers.take_lost()) == 1 and len(graders.take_lost()) <= 1
    # The round completed and every task was graded exactly once, correctly.
    assert (bench.total, bench.resolved, bench.infra_failures) == (8, 8, 0)
    rows = store.connect().execute(
        "SELECT task_id, count(*), bool_and(passed) FROM capsule GROUP BY task_id").fetchall()
    assert sorted(rows) == sorted((t, 1, True) for t in TASK_IDS)
    solvers.shutdown()
    graders.shutdown()


def test_a_grade_lost_with_its_grader_says_so_in_its_capsule_and_counts_once(ray_local, tmp_path):
    """A lost grade was only in run.log (graders book no llm_call row, as a lost Solver attempt
    is booked): the capsules and the report showed nothing of it."""
    config = LoopConfig()
    by_id = {t.task_id: t for t in get_suite("mbpp").load_tasks(config)}
    tasks = [by_id[t] for t in TASK_IDS[:2]]
    dataset = load_mbpp_plus(None)
    solutions = {t.payload["entry_point"]: dataset.problem(t.task_id)["canonical_solution"]
                 for t in tasks}
    solvers = ResilientPool(lambda: SolverActor.options(num_cpus=0).remote(
        config, llm=ScriptedLLM(SlowCanonical(solutions, delay=0.0)), embedder=HashEmbedder(),
        output_kind="code"), 1, name="solver")
    dies = ray.remote(num_cpus=0)(DiesUnderTheFirstGrade)
    graders = ResilientPool(lambda: dies.remote(str(tmp_path / "died")), 1, name="grader")
    graders.heal()  # started: the death costs its job an attempt
    store = EvidenceStore(tmp_path / "run")
    runner = SplitRunner(run_id="lost-grade", arm="default", seed=42, store=store,
                         solvers=solvers, graders=graders)
    bench = runner.run(tasks, "eval", 0)
    assert (bench.total, bench.resolved, bench.infra_failures) == (2, 2, 0)
    con = store.connect()
    traces = dict(con.execute("SELECT task_id, grader_trace FROM capsule").fetchall())
    first = seeded_order(tasks, lambda t: t.task_id, 42, 0, "eval", "tasks")[0].task_id
    assert traces.pop(first) == ("[grade lost: its grader actor died under 1 earlier "
                                 "attempt(s) (run.log names each death); graded again]\ngraded")
    assert list(traces.values()) == ["graded"]
    assert con.execute("SELECT count(*) FROM llm_call WHERE role = 'grader'").fetchone() == (0,)
    assert [lost.attempt for lost in graders.take_lost()] == [1]
    solvers.shutdown()
    graders.shutdown()
