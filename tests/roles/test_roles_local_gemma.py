"""The roles against the REAL local model (Gemma 3 270M on llama.cpp): the grammar-constrained
router choice must validate, a critic review must keep its contract, and the solver must return
code-shaped text.

What a 270M base model writes changes with the CPU's kernels, the build and the llama.cpp
version, so these tests assert contracts that hold for any output it may give, never its words:
a review is a valid verdict, or it is refused with the reason and both replies (the draft and
its one repair) recorded; the JSON-schema grammar holds on every reply either way."""

from __future__ import annotations

import pytest

from ratchet_ray.settings.schema import LLMSettings, RouterSettings
from ratchet_ray.roles.critic import critique
from ratchet_ray.roles.router import Router
from ratchet_ray.roles.solver import solve

pytestmark = [pytest.mark.slow, pytest.mark.model]


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


def assert_review_contract(result, capsule, *, entry_point: str) -> None:
    """A review is either a verdict that passes every rule the validator applies, or a refusal
    (never a backend failure) that names why, with the draft and its one repair kept for the
    evidence. Every reply obeys the grammar: a JSON object with the verdict's fields."""
    import json

    from ratchet_ray.roles.critic_prompt import GENERIC_PATTERN_WORDS

    assert result.replies and all(r.backend == "local" for r in result.replies)
    for reply in result.replies:
        fields = json.loads(reply.text)  # the JSON-schema grammar held on this CPU and build
        assert {"pattern", "rationale", "confidence"} <= set(fields), reply.text
    if result.ok:
        verdict = result.verdict
        assert verdict.attribution in {"helped", "hurt", "neutral", "inapplicable"}
        assert 0.0 <= verdict.confidence <= 1.0 and verdict.capsule_id == capsule.capsule_id
        words = verdict.pattern.split()
        assert 2 <= len(words) <= 10 and not set(words) <= GENERIC_PATTERN_WORDS, words
        assert entry_point.lower() not in verdict.pattern.replace(" ", "_").lower()
    else:
        assert not result.retryable and result.error.startswith("StructuredOutputError: "), \
            result.error
        assert "after one repair attempt" in result.error and len(result.replies) == 2, \
            result.error


def test_gemma_verdict_keeps_the_review_contract(gemma, prime_task, small_bank,
                                                 capsule_factory):
    skill = next(s for s in small_bank if s.id == "prime_check")
    capsule = capsule_factory(prime_task.task_id, skill_id="prime_check")
    result = critique(gemma, prime_task, capsule, skill)
    assert_review_contract(result, capsule,
                           entry_point=prime_task.payload.get("entry_point", "is_prime"))


def test_gemma_solver_writes_code(gemma, prime_task, small_bank):
    skill = next(s for s in small_bank if s.id == "prime_check")
    result = solve(gemma, prime_task, skill, output_kind="code", max_tokens=160, temperature=0.0)
    assert result.exit_status == "ok" and result.output.strip()
    assert result.replies[0].output_tokens > 0


def test_gemma_critic_names_a_concrete_pattern_or_refuses_with_the_reason(gemma,
                                                                         capsule_factory):
    """A real MBPP+ failure (Mbpp/808 from a quickstart run): a verdict's pattern is a concrete
    label (not an attribution, not the entry point); a pattern that is not gets its repair and,
    failing that, a recorded refusal."""
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
    assert_review_contract(result, capsule, entry_point="check_K")
    if result.ok:  # with no skill injected the attribution is fixed
        assert result.verdict.attribution == "inapplicable"


# Three train failures recorded in a quickstart run (seed 42, round 0): the Solver called its own
# function, and the Critic's verdicts on them cluster (canonicalised 'maximum recursion depth').
RECORDED_FAILURES = (
    ("Mbpp/441", "surfacearea_cube",
     "Write a function to find the surface area of a cube of a given size.\n"
     "assert surfacearea_cube(5)==150",
     "def surfacearea_cube(a):\n    assert surfacearea_cube(a) == 150\n    \n    return a",
     "surfacearea_cube(5) raised RecursionError: maximum recursion depth exceeded",
     "maximum recursion depth over 5"),
    ("Mbpp/600", "is_Even",
     "Write a python function to check whether the given number is even or not.\n"
     "assert is_Even(1) == False",
     "def is_Even(num):\n    if is_Even(num):\n        return True\n    else:\n        return False",
     "is_Even(1) raised RecursionError: maximum recursion depth exceeded",
     "maximum recursion depth over 1"),
    ("Mbpp/624", "is_upper",
     'Write a python function to convert a given string to uppercase.\n'
     'assert is_upper("person") =="PERSON"',
     'def is_upper(s):\n    if is_upper(s) == "person":\n        print(s)\n    else:\n'
     '        print(s)',
     "is_upper('person') raised RecursionError: maximum recursion depth exceeded",
     "maximum recursion depth exceeded"),
)


def test_gemma_synthesizer_writes_a_skill_the_bank_accepts_from_a_recorded_cluster(gemma,
                                                                                  tmp_path):
    """The real Synthesizer on the local base model (fieldwise drafting, no worked example to
    copy) turns a recorded cluster into an ACTIVE skill that the real bank accepts: schema,
    length cap and dedup, and not a copy of the schema lock's placeholders."""
    from ratchet_ray.bank.metaskills import default_metaskill
    from ratchet_ray.bank.skill_bank import SkillBank
    from ratchet_ray.settings.schema import LoopConfig
    from ratchet_ray.llm.local import MiniLMEmbedder
    from ratchet_ray.roles.synthesizer_prompt import TEMPLATE_VALUES
    from ratchet_ray.roles.synthesizer import Synthesizer
    from ratchet_ray.types import Capsule, Task, Verdict, capsule_id

    config = LoopConfig()
    embedder = MiniLMEmbedder(gemma.config)
    tasks, capsules, verdicts = {}, {}, []
    for task_id, entry, prompt, output, finding, pattern in RECORDED_FAILURES:
        tasks[task_id] = Task(task_id=task_id, suite="mbpp", prompt=f'"""\n{prompt}\n"""\n',
                              payload={"entry_point": entry})
        cid = capsule_id("run1", 0, "train", task_id)
        capsules[cid] = Capsule(capsule_id=cid, run_id="run1", round=0, split="train",
                                task_id=task_id, skill_id="NONE", passed=False,
                                exit_status="RecursionError", output=output,
                                grader_trace=f"[sandbox bwrap]\nbase: fail at test 1/3\n{finding}")
        verdicts.append(Verdict(capsule_id=cid, run_id="run1", round=0, task_id=task_id,
                                skill_id="NONE", attribution="inapplicable", pattern=pattern,
                                confidence=0.9, rationale=finding.replace(entry, "f")))
    bank = SkillBank(tmp_path / "run", embedder=embedder, config=config, run_id="run1")
    synth = Synthesizer(gemma, embedder, config.synth, "mbpp", tasks=tasks, seed=42,
                        limits=config.llm.roles.synth)
    assert synth.fieldwise  # a base-model backend drafts field by field
    outcome = synth.run(verdicts, [], default_metaskill("mbpp"),
                        lambda skill, sources=None: bank.add(skill, round_=0, sources=sources), 0,
                        capsules=capsules)
    assert len(outcome.created) == 1, (outcome.failed, outcome.duplicates)
    skill = bank.get(outcome.created[0])
    assert skill.is_active and skill.author == "synthesized" and "auto" in skill.tags
    g = skill.guidance
    for text in (skill.intent, skill.description, g.applies_when, g.key_insight,
                 g.verify_before_returning):
        assert len(text) >= 8 and text.strip().lower() not in TEMPLATE_VALUES, text
    assert g.key_insight.startswith("To avoid maximum recursion depth")  # its own pattern
    # One generation per field at least; the id is not asked of a prefill backend (the
    # cluster's pattern names it), and a field may take more than one attempt.
    from ratchet_ray.roles.synthesizer_prompt import FIELD_ORDER
    assert len(outcome.replies) >= len(FIELD_ORDER) - 1
    assert {r.backend for r in outcome.replies} == {"local"}
