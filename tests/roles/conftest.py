"""Fixtures for the role tests: skills, tasks, capsules and verdicts built from the real types."""

from __future__ import annotations

import json

import pytest

from ratchet_ray.types import Capsule, Guidance, Skill, Task, Verdict, capsule_id

TOPICS = {
    "sliding_window": ("Sum every fixed-length window of a list", "subarray window span"),
    "prime_check": ("Decide whether a number is prime", "prime divisor sqrt"),
    "string_reverse": ("Reverse the words of a sentence", "reverse words string split"),
    "dict_count": ("Count occurrences of items with a dictionary", "count frequency dict"),
    "sort_tuples": ("Sort a list of tuples by a key", "sort tuple key order"),
}


def _skill(skill_id: str, intent: str, signals: str = "") -> Skill:
    return Skill(id=skill_id, name=skill_id, description=f"Tasks that {intent.lower()}",
                 intent=intent, signals_match=signals.split(),
                 guidance=Guidance(applies_when=f"the task asks to {intent.lower()}",
                                   key_insight=f"insight for {skill_id}",
                                   common_pitfalls=[f"pitfall of {skill_id}"],
                                   verify_before_returning=f"check {skill_id}"))


@pytest.fixture
def make_skill():
    return _skill


@pytest.fixture
def small_bank() -> list[Skill]:
    return [_skill(i, intent, sig) for i, (intent, sig) in TOPICS.items()]


@pytest.fixture
def large_bank(small_bank) -> list[Skill]:
    """25 skills: the five topical ones among 20 fillers about unrelated chores."""
    fillers = [_skill(f"filler_{n:02d}", f"Format calendar report number {n} as html table",
                      f"calendar html report{n}") for n in range(20)]
    return fillers[:10] + small_bank + fillers[10:]


@pytest.fixture
def prime_task() -> Task:
    return Task(task_id="Mbpp/3", suite="mbpp",
                prompt='"""\nWrite a python function to decide whether a number is prime.\n'
                       'assert is_prime(7) == True\n"""\n',
                payload={"entry_point": "is_prime"})


def make_capsule(task_id: str, *, skill_id: str = "NONE", passed: bool = False,
                 infra: bool = False, round_: int = 1, split: str = "train") -> Capsule:
    return Capsule(capsule_id=capsule_id("run1", round_, split, task_id), run_id="run1",
                   round=round_, split=split, task_id=task_id, skill_id=skill_id, passed=passed,
                   infra_failure=infra, exit_status="TimeoutError" if infra else "failed",
                   output="def is_prime(n):\n    return n % 2 == 1",
                   grader_trace="AssertionError: is_prime(9) returned True")


@pytest.fixture
def capsule_factory():
    return make_capsule


@pytest.fixture
def verdict_factory():
    def build(task_id: str, pattern: str, *, round_: int = 1, confidence: float = 0.6) -> Verdict:
        capsule = make_capsule(task_id, round_=round_)
        return Verdict(capsule_id=capsule.capsule_id, run_id="run1", round=round_,
                       task_id=task_id, attribution="inapplicable", pattern=pattern,
                       confidence=confidence, rationale=f"failed because of {pattern}")
    return build


def skill_json(skill_id: str, intent: str = "Check edge cases of numeric input") -> str:
    """A SkillDraft reply as an LLM would write it."""
    return json.dumps({
        "id": skill_id, "name": skill_id, "description": "numeric tasks with edge cases",
        "intent": intent, "signals_match": ["edge", "numeric"], "tags": ["auto"],
        "guidance": {"applies_when": "the input may be 0, 1 or negative",
                     "key_insight": "handle the smallest inputs before the general loop",
                     "common_pitfalls": ["treating 1 as prime"],
                     "verify_before_returning": "try 0, 1 and 2 mentally"}})


@pytest.fixture
def skill_reply():
    return skill_json
