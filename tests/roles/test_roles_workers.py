"""Solver / Critic / Synthesizer workers: plain-class behaviour, then the same classes as real
Ray actors (``actors/*.py``) with injected scripted clients."""

from __future__ import annotations

import json
import sys

import pytest
from fakes import HashEmbedder, ScriptedLLM

from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.roles.critic import CriticWorker
from ratchet_ray.roles.solver import SolverWorker

CODE = "```python\ndef is_prime(n):\n    return n > 1\n```"


def router_then_code(messages, schema):
    """Routes to prime_check when offered, then writes code."""
    if schema is None:
        return CODE
    offered = schema["properties"]["skill_id"]["enum"]
    return json.dumps({"skill_id": "prime_check" if "prime_check" in offered else "NONE"})


def test_solver_worker_routes_then_solves(prime_task, small_bank, large_bank):
    llm = ScriptedLLM(router_then_code)
    worker = SolverWorker(LoopConfig(), llm=llm, embedder=HashEmbedder(), output_kind="code")
    assert worker.set_bank(small_bank) == 5 and worker.index is None  # small: no shortlist needed
    outcome = worker.run(prime_task, "train", 3)
    assert (outcome.task_id, outcome.split, outcome.round) == ("Mbpp/3", "train", 3)
    assert outcome.skill_id == "prime_check" and outcome.exit_status == "ok"
    assert outcome.output.startswith("def is_prime") and len(outcome.router_replies) == 1
    assert "insight for prime_check" in llm.calls[-1][0][-1].content
    assert worker.set_bank(large_bank) == 25 and worker.index is not None
    assert worker.run(prime_task, "train", 3).skill_id == "prime_check"


def test_solver_worker_a1_never_calls_the_router(prime_task, small_bank):
    llm = ScriptedLLM(router_then_code)
    worker = SolverWorker(LoopConfig(router={"inject": False}), llm=llm,
                          embedder=HashEmbedder(), output_kind="code")
    worker.set_bank(small_bank)
    outcome = worker.run(prime_task, "eval", 0)
    assert outcome.skill_id == "NONE" and outcome.router_replies == [] and len(llm.calls) == 1
    assert "Guidance" not in llm.calls[0][0][-1].content


def test_eval_generations_are_cached_within_a_round_train_are_fresh(prime_task, tmp_path):
    llm = ScriptedLLM(router_then_code)
    worker = SolverWorker(LoopConfig(), llm=llm, embedder=HashEmbedder(), output_kind="code",
                          solver_cache_dir=tmp_path / "solver_cache")
    worker.set_bank([])
    first, again = worker.run(prime_task, "eval", 0), worker.run(prime_task, "eval", 0)
    assert again.solver_replies[0].cached and first.output == again.output
    later = worker.run(prime_task, "eval", 1)  # a later round is a new draw (T=1.0)
    assert not later.solver_replies[0].cached
    worker.run(prime_task, "train", 1)
    worker.run(prime_task, "train", 1)
    assert len(llm.calls) == 4  # round 0's miss, round 1's, two train calls; the hit paid nothing


def test_critic_batch_returns_one_result_per_item(prime_task, capsule_factory):
    answer = {"rationale": "parity only", "attribution": "inapplicable",
              "pattern": "incomplete primality check", "confidence": "medium"}
    worker = CriticWorker(LoopConfig(), llm=ScriptedLLM(lambda m, s: json.dumps(answer)))
    results = worker.critique_batch([
        (prime_task, capsule_factory("Mbpp/3"), None),
        (prime_task, capsule_factory("Mbpp/3", infra=True), None),
    ])
    assert results[0].verdict.confidence == 0.6 and results[0].verdict.skill_id == "NONE"
    assert results[1].verdict is None and results[1].error.startswith("NotCritiquable")


@pytest.fixture
def ray_with_fakes(ray_local):
    # Actors unpickle the injected test doubles and responders: ship those modules by value
    # (Ray workers do not have tests/ on their import path).
    ray_local.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield ray_local
    ray_local.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def test_actors_run_the_workers_under_ray(ray_with_fakes, tmp_path, prime_task, small_bank,
                                          capsule_factory, verdict_factory):
    ray = ray_with_fakes
    from actors.critic import CriticActor
    from actors.solver import SolverActor
    from actors.synthesizer import SynthesizerActor
    from ratchet_ray.bank.skill_bank import SkillBank

    config = LoopConfig()
    solvers = [SolverActor.options(num_cpus=0.5).remote(
        config, llm=ScriptedLLM(router_then_code), embedder=HashEmbedder(), output_kind="code")
        for _ in range(2)]
    ray.get([s.set_bank.remote(small_bank) for s in solvers])
    outcomes = ray.get([s.run.remote(prime_task, "train", 1) for s in solvers])
    assert [o.skill_id for o in outcomes] == ["prime_check", "prime_check"]

    verdict = {"rationale": "r", "attribution": "inapplicable", "pattern": "skips zero input",
               "confidence": "low"}
    critic = CriticActor.options(num_cpus=0.5).remote(
        config, llm=ScriptedLLM(lambda m, s: json.dumps(verdict)))
    results = ray.get(critic.critique_batch.remote([(prime_task, capsule_factory("Mbpp/3"), None)]))
    assert results[0].verdict.pattern == "skips zero input"

    draft = {"id": "one_is_not_prime", "name": "x", "description": "primality tasks",
             "intent": "Decide primality", "signals_match": [], "tags": [],
             "guidance": {"applies_when": "prime checks", "key_insight": "1 is not prime",
                          "common_pitfalls": ["2 is prime"], "verify_before_returning": "n=1"}}
    bank = ray.remote(SkillBank).options(num_cpus=0.1).remote(
        tmp_path / "run", embedder=HashEmbedder(), config=config, run_id="run1")
    synth = SynthesizerActor.options(num_cpus=0.1).remote(
        config, llm=ScriptedLLM(lambda m, s: json.dumps(draft)), embedder=HashEmbedder())
    verdicts = [verdict_factory(f"Mbpp/{n}", "treats one as prime") for n in range(3)]
    outcome = ray.get(synth.run.remote(verdicts, [], None, bank, 1))
    assert outcome.created == ["one_is_not_prime"]
    assert [s.id for s in ray.get(bank.active.remote())] == ["one_is_not_prime"]
    for actor in [*solvers, critic, bank, synth]:
        ray.kill(actor)


def test_cached_eval_client_keeps_the_prefill_capability(prime_task, tmp_path):
    class PrefillLLM(ScriptedLLM):
        supports_prefill = True

    llm = PrefillLLM(lambda messages, schema: "n):\n    return n > 1\n```")
    worker = SolverWorker(LoopConfig(), llm=llm, embedder=HashEmbedder(), output_kind="code",
                          solver_cache_dir=tmp_path / "cache")
    worker.set_bank([])
    eval_out, train_out = worker.run(prime_task, "eval", 0), worker.run(prime_task, "train", 0)
    assert eval_out.output == train_out.output == "def is_prime(n):\n    return n > 1"
