"""Fixtures of the plain-library tests (bank, evidence, governance, cli, core): a Default config,
a run dir, a SkillBank and an EvidenceStore on it, ``deny`` (a path's permissions taken until the
test ends). A folder's ``conftest.py`` imports them. ``two_round_run`` writes a small finished
run for the read-side commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import HashEmbedder
from skill_builders import TOPICS, make_skill, routed_capsules

from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.run_config.files import dump_config
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.evidence.store import EvidenceStore


@pytest.fixture
def config() -> LoopConfig:
    return LoopConfig()


@pytest.fixture
def run_dir(tmp_path):
    return tmp_path / "results" / "mbpp" / "run1"


@pytest.fixture
def bank(run_dir, config) -> SkillBank:
    return SkillBank(run_dir, embedder=HashEmbedder(), config=config, run_id="run1")


@pytest.fixture
def store(run_dir) -> EvidenceStore:
    return EvidenceStore(run_dir)


@pytest.fixture
def deny():
    """``deny(path)`` takes every permission from ``path`` until the test ends."""
    denied: list[Path] = []
    yield lambda path: (denied.append(path), path.chmod(0))
    for path in denied:
        if path.exists():
            path.chmod(0o755)


def two_round_run(run_dir: Path, skill_ids: tuple[str, ...]) -> Path:
    """A two-round MBPP+ run at ``run_dir``: config.yaml, the skills ``skill_ids`` added in
    round 0, capsules of rounds 0 and 1 routed to the first, and its loop.json."""
    run_dir.mkdir(parents=True)
    config = LoopConfig()
    dump_config(config, run_dir / "config.yaml")
    bank = SkillBank(run_dir, embedder=HashEmbedder(), config=config, run_id=run_dir.name)
    for i, skill_id in enumerate(skill_ids):
        bank.add(make_skill(skill_id, TOPICS[i]), round_=0)
    store = EvidenceStore(run_dir)
    for round_ in (0, 1):
        store.append("capsule", round_, routed_capsules(run_dir.name, skill_ids[0], round_, 2, 1))
    (run_dir / "loop.json").write_text(json.dumps({
        "run_id": run_dir.name, "suite": "mbpp", "seed": 42, "rounds_planned": 2,
        "rounds": [{"round": r, "eval_pass_at_1": 0.5, "active_skills": len(skill_ids)}
                   for r in (0, 1)]}))
    return run_dir
