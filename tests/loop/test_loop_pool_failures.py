"""Pools that fail loudly (issues 9 and 15), on a real local Ray: a constructor's own exception,
bounded waits naming the missing resource, a healed Synthesizer-style pool of one, lost attempts
in ``llm_call``, the router's failure in the evidence, the sweep's failed-arm cause, and the
baseline's circuit breaker."""

from __future__ import annotations

import json
import sys
import time
from types import SimpleNamespace

import pytest
import ray
from ray.exceptions import RayActorError

from actors.pools import (ActorStartError, ActorStartTimeout, ResilientPool, call_one,
                          map_unordered)
from actors.solver import SolverActor
from fakes import HashEmbedder, ScriptedLLM
from loop_helpers import BadBaseUrl, FailingRouterLLM, SlowCanonical, Worker
from ratchet_ray.config import LoopConfig
from ratchet_ray.config_files import load_config
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.loop.breaker import InfraBreaker, InfraFailureStop, RunStopped
from ratchet_ray.loop.execute import SplitRunner, call_rows
from ratchet_ray.loop.phases import record_lost_attempts
from ratchet_ray.loop.sweep import Job
from ratchet_ray.roles.workers import SolverWorker
from ratchet_ray.suites import get_suite
from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus
from ratchet_ray.types import Capsule

RemoteWorker = ray.remote(num_cpus=0)(Worker)


def _tasks(ids):
    by_id = {t.task_id: t for t in get_suite("mbpp").load_tasks(LoopConfig())}
    return [by_id[t] for t in ids]


def wait_dead(actor, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            ray.get(actor.__ray_ready__.remote(), timeout=timeout_s)
        except RayActorError:
            return
        time.sleep(0.05)
    raise AssertionError(f"actor still answers {timeout_s}s after ray.kill")


def test_a_constructor_error_surfaces_as_itself_and_is_not_retried(ray_local):
    broken = ray.remote(num_cpus=0)(BadBaseUrl)
    pool = ResilientPool(lambda: broken.remote(), 2, name="solver")
    for x in range(4):
        pool.submit("work", x)
    with pytest.raises(ActorStartError) as caught:
        map_unordered(pool, "work", [])  # drains the four jobs submitted above
    assert isinstance(caught.value.cause, ConnectionError)
    assert "pool 'solver': an actor cannot start: ConnectionError: http://127.0.0.1:9/v1: " \
           "connection refused (constructor)" in str(caught.value)
    assert pool.stats.actors_replaced == 0 and pool.stats.completed == 0, \
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
    pool.submit("work", 3)
    with pytest.raises(ActorStartTimeout, match="gpu_h200"):
        map_unordered(pool, "work", [])
    pool.shutdown()


def test_a_pool_of_one_heals_between_calls_and_reports_a_death_mid_call(ray_local):
    pool = ResilientPool(lambda: RemoteWorker.remote(), 1, name="synthesizer", max_attempts=1)
    assert call_one(pool, "work", 3, 0.0)[0] == 9
    dead = pool.actors[0]
    ray.kill(dead)  # dies idle, between two synth phases
    wait_dead(dead)  # ray.kill is asynchronous: a call sent at once may still reach it alive
    assert call_one(pool, "work", 4, 0.0)[0] == 16, "replaced, state rebuilt by the constructor"
    assert pool.stats.actors_replaced == 1
    pool.submit("work", 5, 5.0)
    ray.kill(pool.actors[0])  # dies mid-call: one attempt only (synthesis is not idempotent)
    (result,) = map_unordered(pool, "work", [])
    assert isinstance(result.error, RayActorError) and result.attempts == 1
    assert call_one(pool, "work", 7, 0.0)[0] == 49, "the next phase gets a live actor"
    pool.shutdown()


def test_an_attempt_lost_with_its_actor_is_recorded_in_llm_call(ray_local, tmp_path):
    config = LoopConfig()
    tasks = _tasks(["Mbpp/2", "Mbpp/3"])
    dataset = load_mbpp_plus(None)
    solutions = {t.payload["entry_point"]: dataset.problem(t.task_id)["canonical_solution"]
                 for t in tasks}
    solvers = ResilientPool(lambda: SolverActor.options(num_cpus=0).remote(
        config, llm=ScriptedLLM(SlowCanonical(solutions, delay=2.0)), embedder=HashEmbedder(),
        output_kind="code"), 2, name="solver")
    for task in tasks:
        solvers.submit("run", task, "eval", 0)
    ray.kill(solvers.running()[0])  # dies mid-attempt: its spend is lost with the process
    results = map_unordered(solvers, "run", [])
    assert all(r.ok for r in results) and solvers.stats.resubmitted == 1
    store = EvidenceStore(tmp_path / "run")
    ctx = SimpleNamespace(rt=SimpleNamespace(solvers=solvers, graders=solvers), config=config,
                          run=SimpleNamespace(run_id="lost"), store=store)
    record_lost_attempts(ctx, 0)
    rows = store.connect().execute("SELECT role, ok, error FROM llm_call").fetchall()
    assert len(rows) == 1 and rows[0][:2] == ("solver", False)
    assert rows[0][2].startswith("lost: the solver actor died running Mbpp/")
    assert solvers.take_lost() == [], "each lost attempt is recorded once"
    solvers.shutdown()


def test_a_failed_router_call_is_a_failed_llm_call_row_and_a_note_on_the_capsule(tmp_path):
    from ratchet_ray.types import Guidance, Skill

    (task,) = _tasks(["Mbpp/2"])
    solution = load_mbpp_plus(None).problem("Mbpp/2")["canonical_solution"]
    worker = SolverWorker(LoopConfig(), llm=FailingRouterLLM({task.payload["entry_point"]:
                                                              solution}),
                          embedder=HashEmbedder(), output_kind="code")
    topic = "sliding window subarray span"
    worker.set_bank([Skill(id="some_skill", name="some_skill", description=f"tasks on {topic}",
                           intent=f"Solve {topic}", guidance=Guidance(
                               applies_when=topic, key_insight=topic, common_pitfalls=[topic],
                               verify_before_returning=topic))])
    outcome = worker.run(task, "train", 0)
    assert outcome.skill_id == "NONE" and "router LLM failed" in outcome.route_error
    rows = call_rows(outcome, run_id="r", round_=0)
    assert [(r["role"], r["ok"]) for r in rows] == [("solver", True), ("router", False)]
    assert "Connection error" in rows[1]["error"]
    runner = SplitRunner(run_id="r", arm="default", seed=42, store=EvidenceStore(tmp_path),
                         solvers=None, graders=None)
    from ratchet_ray.types import GradeResult

    capsule = runner.capsule(task, "train", 0, outcome=outcome,
                              grade=GradeResult(passed=True, exit_status="ok", trace="ok"))
    assert capsule.grader_trace.startswith("[router] router LLM failed -> NONE")


def test_the_breaker_names_the_first_cause_and_the_commonest_with_its_count():
    breaker = InfraBreaker("eval", 3, total=6, max_rate=0.5)

    def capsule(task: str, trace: str, status: str = "LLMError") -> Capsule:
        return Capsule(capsule_id=task, run_id="r", round=3, split="eval", task_id=task,
                       skill_id="NONE", passed=False, exit_status=status, infra_failure=True,
                       grader_trace=trace)

    breaker.observe(capsule("Mbpp/2", "[solver] LLMError: http://h:1/v1: Connection error."))
    breaker.observe(capsule("Mbpp/3", "[grader actor] The actor died unexpectedly.\n\tpid: 12\n"
                                      "The actor is dead because its worker process has died.",
                            "ActorDiedError"))
    breaker.observe(capsule("Mbpp/4", "[solver] LLMError: http://h:1/v1: Connection error."))
    with pytest.raises(InfraFailureStop) as caught:
        breaker.observe(capsule("Mbpp/6", "[solver] LLMError: http://h:1/v1: Connection error."))
    text = str(caught.value)
    assert text.startswith("round 3 eval: 4 of 6 tasks failed on infrastructure, above "
                           "infra.max_failure_rate 0.50; the round is not recorded.")
    assert "Root cause (first, on Mbpp/2): LLMError: http://h:1/v1: Connection error." in text
    assert "Most common (3 of 4): LLMError: http://h:1/v1: Connection error." in text
    assert "Fix: check that the model server answers" in text and isinstance(caught.value,
                                                                             RunStopped)


def test_a_failed_arm_is_marked_failed_in_status_with_its_cause(tmp_path):
    from ratchet_ray.loop.sweep import write_status

    results = tmp_path / "runs" / "A1_s42"
    child = ("import json, pathlib, sys; d = pathlib.Path(sys.argv[1]) / 'mbpp' / 'run1'; "
             "d.mkdir(parents=True); (d / 'stopped.json').write_text(json.dumps({'cause': "
             "'round 0 eval: 4 of 4 tasks failed on infrastructure ... Connection error.'})); "
             "print('Error: run stopped'); sys.exit(1)")
    job = Job("A1_s42", "new", [sys.executable, "-c", child, str(results)],
              tmp_path / "logs" / "A1_s42.log", results)
    from fake_jobs import FakeJobClient
    from ratchet_ray.loop.sweep_jobs import run_ray_jobs

    (outcome,) = run_ray_jobs(FakeJobClient(), [job], 1, {}, tmp_path, scope="s", poll_s=0.05)
    status = json.loads(write_status(tmp_path, [outcome]).read_text())["A1_s42"]
    assert status["ok"] is False and status["returncode"] == 1
    assert status["cause"].startswith("round 0 eval: 4 of 4 tasks failed on infrastructure")


def test_the_baseline_stops_on_infra_failures_and_writes_none_of_them(ray_local, tmp_path):
    from ratchet_ray.cli.baseline import done_probes, run_baseline
    from ratchet_ray.loop.runtime import Models

    def down(messages, json_schema=None):
        from ratchet_ray.llm.base import LLMError

        raise LLMError("http://127.0.0.1:9/v1 model m: Connection error.")

    config = load_config([], ["workers.solvers=1", "workers.graders=1"])
    out = tmp_path / "baseline.jsonl"
    models = Models(llm=ScriptedLLM(down), embedder=HashEmbedder())
    with pytest.raises(InfraFailureStop, match=r"baseline: 3 of 4 tasks failed on "
                                               r"infrastructure.*Connection error.*rerun the "
                                               r"same command"):
        run_baseline(config, out, probes=2, limit=2, models=models)
    assert done_probes(out) == set(), "no infra row is written: a rerun retries every probe"
