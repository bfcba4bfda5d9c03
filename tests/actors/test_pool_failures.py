"""Pools that fail loudly, on a real local Ray: a constructor's own exception, bounded waits
naming the missing resource, a healed Synthesizer-style pool of one, and attempts lost with their
actor recorded in ``llm_call``."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import ray
from ray.exceptions import RayActorError

from actors.draining import call_one, drain, map_unordered
from actors.pools import (NEVER_STARTED_RETRIES, ActorStartError, ActorStartTimeout,
                          LostAttempt, ResilientPool)
from actors.solver import SolverActor, SolverWorker
from fakes import HashEmbedder, ScriptedLLM
from loop_helpers import (BadBaseUrl, DiesWhileStarting, Made, SlowCanonical, SlowToStart,
                          Worker, actor_pid, running_actors)
from waiting import actor_gone, process_gone, wait_for
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.loop import phases
from ratchet_ray.loop.phases import record_lost_attempts
from ratchet_ray.suites import get_suite
from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus

RemoteWorker = ray.remote(num_cpus=0)(Worker)


def _tasks(ids):
    by_id = {t.task_id: t for t in get_suite("mbpp").load_tasks(LoopConfig())}
    return [by_id[t] for t in ids]


def test_a_constructor_error_surfaces_as_itself_and_is_not_retried(ray_local):
    broken = ray.remote(num_cpus=0)(BadBaseUrl)
    made = Made(lambda: broken.remote())
    pool = ResilientPool(made, 2, name="solver")
    for x in range(4):
        pool.submit(Worker.work, x)
    results: list = []
    with pytest.raises(ActorStartError) as caught:
        drain([pool], lambda _pool, result: results.append(result))
    assert isinstance(caught.value.cause, ConnectionError)
    assert "pool 'solver': an actor cannot start: ConnectionError: http://127.0.0.1:9/v1: " \
           "connection refused (constructor)" in str(caught.value)
    assert made.count == 2 and results == [], \
        "no replacement loop, no per-task ActorDiedError results"
    pool.shutdown()


def test_an_actor_no_node_can_place_fails_with_the_missing_resource(ray_local):
    needy = ray.remote(Worker).options(num_cpus=0, resources={"gpu_h200": 1})
    pool = ResilientPool(lambda: needy.remote(), 1, name="grader",
                         resources={"num_cpus": 0, "resources": {"gpu_h200": 1}},
                         start_timeout_s=2.0)
    with pytest.raises(ActorStartTimeout, match=r"pool 'grader': 1 actor\(s\) did not start "
                                                r"within 2s; each asks for .*gpu_h200"):
        pool.heal()
    pool.submit(Worker.work, 3)
    with pytest.raises(ActorStartTimeout, match="gpu_h200"):
        map_unordered(pool, Worker.work, [])
    pool.shutdown()


def test_a_pool_of_one_heals_between_calls_and_reports_a_death_mid_call(ray_local):
    made = Made(lambda: RemoteWorker.remote())
    pool = ResilientPool(made, 1, name="synthesizer", max_attempts=1)
    assert call_one(pool, Worker.work, 3, 0.0)[0] == 9
    dead = pool.actors[0]
    ray.kill(dead)  # dies idle, between two synth phases
    # ray.kill is asynchronous: a call sent at once may still reach it alive
    wait_for(lambda: actor_gone(dead), 30, "the killed actor to be dead")
    assert call_one(pool, Worker.work, 4, 0.0)[0] == 16, "replaced, state rebuilt by the constructor"
    assert made.count == 2, "one actor replaced"
    pool.submit(Worker.work, 5, 5.0)
    ray.kill(pool.actors[0])  # dies mid-call: one attempt only (synthesis is not idempotent)
    (result,) = map_unordered(pool, Worker.work, [])
    assert isinstance(result.error, RayActorError) and result.attempts == 1
    assert call_one(pool, Worker.work, 7, 0.0)[0] == 49, "the next phase gets a live actor"
    pool.shutdown()


def test_an_attempt_lost_with_its_actor_is_recorded_in_llm_call(ray_local, tmp_path):
    config = LoopConfig()
    tasks = _tasks(["Mbpp/2", "Mbpp/3"])
    dataset = load_mbpp_plus(None)
    solutions = {t.payload["entry_point"]: dataset.problem(t.task_id)["canonical_solution"]
                 for t in tasks}
    gate = tmp_path / "open"  # each attempt waits here: the kill lands mid-attempt, not after
    solvers = ResilientPool(lambda: SolverActor.options(num_cpus=0).remote(
        config, llm=ScriptedLLM(SlowCanonical(solutions, delay=2.0, gate=str(gate))),
        embedder=HashEmbedder(), output_kind="code"), 2, name="solver")
    solvers.heal()  # every actor up: a kill now lands on an attempt, not on a constructor
    pids = {actor: actor_pid(actor) for actor in solvers.actors}
    for task in tasks:
        solvers.submit(SolverWorker.run, task, "eval", 0)
    victim = running_actors(solvers)[0]
    try:
        ray.kill(victim)  # dies mid-attempt: its spend is lost with the process
        # ray.kill returns before the actor's process hears of it (up to 1.4 s later on a loaded
        # machine, measured): the gate opens once the process is gone, never before.
        wait_for(lambda: process_gone(pids[victim]), 60, "the killed solver's process to end")
    finally:
        gate.touch()
    results = map_unordered(solvers, SolverWorker.run, [])
    assert all(r.ok for r in results) and sorted(r.attempts for r in results) == [1, 2], \
        "the killed attempt's job was resubmitted once"
    store = EvidenceStore(tmp_path / "run")
    ctx = SimpleNamespace(config=config, run=SimpleNamespace(run_id="lost"), store=store)
    record_lost_attempts(ctx, 0, solvers)
    rows = store.connect().execute("SELECT role, ok, error FROM llm_call").fetchall()
    assert len(rows) == 1 and rows[0][:2] == ("solver", False)
    assert rows[0][2].startswith("lost: the solver actor died running Mbpp/")
    assert solvers.take_lost() == [], "each lost attempt is recorded once"
    solvers.shutdown()


@ray.remote(num_cpus=0)
class EmptyBank:
    def all(self):
        return []


class CriticsThatLostABatch:
    """A critic pool, idle, whose actor died under a batch (``ResilientPool``'s lost record)."""

    name, busy = "critic", False

    def __init__(self, capsule):
        self.lost = [LostAttempt("critique_batch", [(None, capsule, None)], None, 1, "killed")]

    def take_lost(self):
        lost, self.lost = self.lost, []
        return lost


def test_the_critic_phase_records_the_attempts_its_pool_lost(ray_local, tmp_path):
    critics = CriticsThatLostABatch(SimpleNamespace(task_id="Mbpp/2"))
    store = EvidenceStore(tmp_path / "run")
    ctx = SimpleNamespace(config=LoopConfig(), run=SimpleNamespace(run_id="lost"), store=store,
                          actors=SimpleNamespace(bank=EmptyBank.remote(), critics=critics),
                          progress=SimpleNamespace(set_total=lambda total: None))
    phases.critic(ctx, 0, SimpleNamespace(verdicts=0))
    rows = store.connect().execute("SELECT role, ok, error FROM llm_call").fetchall()
    assert rows == [("critic", False, "lost: the critic actor died running Mbpp/2 (attempt 1); "
                                      "tokens unknown: killed")]
    assert critics.lost == [], "collected, so the pool's list does not grow run-long"


def test_an_actor_killed_before_it_started_costs_its_job_no_attempt(ray_local):
    slow = ray.remote(num_cpus=0)(SlowToStart)
    made = Made(lambda: slow.remote(1.5))
    pool = ResilientPool(made, 1, name="solver", max_attempts=1)
    pool.submit(Worker.work, 6)
    ray.kill(pool.actors[0])  # still in its constructor: the job has not run anywhere
    (result,) = map_unordered(pool, Worker.work, [])
    assert result.ok and result.value[0] == 36 and result.attempts == 1, result
    assert made.count == 2, "its actor replaced once"
    assert pool.take_lost() == [], "nothing ran, so nothing was lost: the job was sent back"
    pool.shutdown()


def test_actors_that_never_start_hold_a_job_a_bounded_number_of_times(ray_local):
    doomed = ray.remote(num_cpus=0)(DiesWhileStarting)
    made = Made(lambda: doomed.remote())
    pool = ResilientPool(made, 1, name="solver", max_attempts=2)
    pool.submit(Worker.work, 6)
    (result,) = map_unordered(pool, Worker.work, [])
    assert isinstance(result.error, RayActorError) and result.attempts == 2, result
    # Each death replaced its actor: NEVER_STARTED_RETRIES sent the job back with no attempt
    # spent, the two after them are the attempts lost.
    assert made.count == 1 + NEVER_STARTED_RETRIES + 2
    assert [lost.attempt for lost in pool.take_lost()] == [1, 2]
    pool.shutdown()


def test_the_start_timeout_names_a_resource_in_full_use_as_zero_free(monkeypatch):
    """Ray leaves a resource in full use out of ``available_resources``: the text read "the
    cluster has {'CPU': 2.0, 'docker': 2.0} ({'docker': 2.0} free)", hiding that no CPU was
    free, the one thing the actors waited for."""
    from actors import pool_errors

    monkeypatch.setattr(pool_errors.ray, "cluster_resources",
                        lambda: {"CPU": 2.0, "docker": 2.0, "memory": 1e9, "node:127.0.0.1": 1.0})
    monkeypatch.setattr(pool_errors.ray, "available_resources",
                        lambda: {"docker": 2.0, "memory": 1e9})
    text = pool_errors.not_started_text("grader", 17, 15, {"num_cpus": 0.5})
    assert ("pool 'grader': 17 actor(s) did not start within 15s; each asks for "
            "{'num_cpus': 0.5}, the cluster has {'CPU': 2.0, 'docker': 2.0} "
            "({'CPU': 0.0, 'docker': 2.0} free)") in text, text
