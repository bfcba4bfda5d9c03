"""Infrastructure failures seen by the loop: a failed router call in the evidence, the circuit
breaker's message (first cause, commonest cause with its count), and the baseline stopping on
infrastructure failures without writing them."""

from __future__ import annotations

import pytest

from fakes import HashEmbedder, ScriptedLLM
from loop_helpers import FailingRouterLLM
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.run_config.files import load_config
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.loop.breaker import InfraBreaker, InfraFailureStop, RunStopped
from ratchet_ray.loop.execute import SplitRunner, call_rows
from ratchet_ray.roles.solver import SolverWorker
from ratchet_ray.suites import get_suite
from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus
from ratchet_ray.types import Capsule


def _tasks(ids):
    by_id = {t.task_id: t for t in get_suite("mbpp").load_tasks(LoopConfig())}
    return [by_id[t] for t in ids]


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


def test_the_breaker_names_no_cause_from_a_lost_grades_note():
    from actors.pools import PoolResult
    from ratchet_ray.loop.execute import lost_grade_note

    note = lost_grade_note(PoolResult(item=None, attempts=2))
    breaker = InfraBreaker("eval", 0, total=1, max_rate=0.0)
    with pytest.raises(InfraFailureStop, match=r"Root cause \(first, on Mbpp/2\): "
                                               r"SandboxError: bwrap: no user namespaces\."):
        breaker.observe(Capsule(capsule_id="c", run_id="r", round=0, split="eval",
                                task_id="Mbpp/2", passed=False, exit_status="SandboxError",
                                infra_failure=True,
                                grader_trace=f"{note}bwrap: no user namespaces."))
    assert lost_grade_note(PoolResult(item=None, attempts=1)) == ""


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
