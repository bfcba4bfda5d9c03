"""Builders shared by the bank, evidence and governance tests (skills with distinct vocabularies, routed capsules)."""

from __future__ import annotations

from pathlib import Path

from fakes import HashEmbedder

from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.run_config.files import dump_config
from ratchet_ray.types import Capsule, Guidance, Skill, capsule_id

TOPICS = [
    "sliding window subarray span", "prime divisor sqrt factor", "reverse words sentence split",
    "dictionary frequency counter tally", "sort tuples key order", "binary search sorted midpoint",
    "regex pattern match substring", "matrix transpose rows columns", "recursion base case depth",
    "integer overflow modulo arithmetic", "date parsing iso calendar", "heap priority queue smallest",
]


def make_skill(skill_id: str, topic: str, **update) -> Skill:
    skill = Skill(id=skill_id, name=skill_id, description=f"tasks about {topic}",
                  intent=f"Solve {topic}", signals_match=topic.split()[:2],
                  guidance=Guidance(applies_when=f"the task mentions {topic}",
                                    key_insight=f"think about {topic} {topic}",
                                    common_pitfalls=[f"forgetting {topic}"],
                                    verify_before_returning=f"check {topic}"))
    return Skill.model_validate({**skill.model_dump(), **update})  # validated, unlike model_copy


def routed_capsules(run_id: str, skill_id: str, round_: int, passed: int, failed: int,
                    split: str = "train") -> list[Capsule]:
    """``passed + failed`` capsules of one round routed to ``skill_id``."""
    outcomes = [True] * passed + [False] * failed
    return [Capsule(capsule_id=capsule_id(run_id, round_, split, f"{skill_id}/{i}"), run_id=run_id,
                    round=round_, split=split, task_id=f"{skill_id}/{i}", skill_id=skill_id,
                    passed=ok) for i, ok in enumerate(outcomes)]


def new_run(root: Path, name: str, **settings) -> SkillBank:
    """An empty MBPP+ run dir under ``root/results`` with its config.yaml (``settings`` are
    LoopConfig fields) and its bank (the plain library, no Ray)."""
    run_dir = root / "results" / "mbpp" / name
    config = LoopConfig(**settings)
    run_dir.mkdir(parents=True)
    dump_config(config, run_dir / "config.yaml")
    return SkillBank(run_dir, embedder=HashEmbedder(), config=config, run_id=name)
