"""The roles against the REAL local model (Gemma 3 270M on llama.cpp): the grammar-constrained
router choice and critic verdict must validate, and the solver must return code-shaped text."""

from __future__ import annotations

import pytest

from ratchet_ray.config import LLMSettings, RouterSettings
from ratchet_ray.roles.critic import critique
from ratchet_ray.roles.router import Router
from ratchet_ray.roles.solver import solve

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gemma():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: "
                                            "pip install 'ratchet-ray[local]'")
    from ratchet_ray.llm.local import LocalConfig, LocalLLM

    # The in-process backend (not the per-node Ray server): this test is about the prompts.
    return LocalLLM(LocalConfig.from_settings(LLMSettings()))


def test_gemma_router_choice_validates(gemma, prime_task, small_bank):
    decision = Router(gemma, None, RouterSettings()).route(prime_task, small_bank)
    assert decision.reason.startswith("llm pick"), decision.reason
    assert decision.skill_id in {s.id for s in small_bank} | {"NONE"}
    assert decision.replies and decision.replies[0].backend == "local"


def test_gemma_verdict_validates(gemma, prime_task, small_bank, capsule_factory):
    skill = next(s for s in small_bank if s.id == "prime_check")
    capsule = capsule_factory(prime_task.task_id, skill_id="prime_check")
    result = critique(gemma, prime_task, capsule, skill)
    assert result.ok, result.error
    verdict = result.verdict
    assert verdict.attribution in {"helped", "hurt", "neutral", "inapplicable"}
    assert verdict.pattern.strip() and 0.0 <= verdict.confidence <= 1.0
    assert verdict.capsule_id == capsule.capsule_id


def test_gemma_solver_writes_code(gemma, prime_task, small_bank):
    skill = next(s for s in small_bank if s.id == "prime_check")
    result = solve(gemma, prime_task, skill, output_kind="code", max_tokens=160, temperature=0.0)
    assert result.exit_status == "ok" and result.output.strip()
    assert result.replies[0].output_tokens > 0


def test_gemma_critic_names_a_concrete_pattern_not_an_attribution(gemma, capsule_factory):
    """A real MBPP+ failure (Mbpp/808 from a quickstart run): the pattern must be a real label."""
    from ratchet_ray.roles.prompts import GENERIC_PATTERN_WORDS
    from ratchet_ray.types import Task

    task = Task(task_id="Mbpp/808", suite="mbpp",
                prompt='"""\nWrite a function to check if the given tuples contain the k or not.\n'
                       'assert check_K((10, 4, 5, 6, 8), 6) == True\n"""\n',
                payload={"entry_point": "check_K"})
    capsule = capsule_factory(task.task_id).model_copy(update={
        "exit_status": "TypeError",
        "output": "def check_K(tuple1, tuple2):\n    if tuple1 in tuple2:\n        return True\n"
                  "    else:\n        return False",
        "grader_trace": "[sandbox namespaces]\nbase: fail at test 1/3\ncheck_K((10, 4, 5, 6, 8), "
                        "6) raised TypeError: argument of type 'int' is not iterable"})
    result = critique(gemma, task, capsule, None)
    assert result.ok, result.error
    words = result.verdict.pattern.split()
    assert 2 <= len(words) <= 10 and not set(words) <= GENERIC_PATTERN_WORDS, words
    assert "check_k" not in result.verdict.pattern.replace(" ", "_")
