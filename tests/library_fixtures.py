"""Fixtures of the plain-library tests (bank, evidence, governance, cli, core): a Default config,
a run dir, a SkillBank and an EvidenceStore on it. A folder's ``conftest.py`` imports them."""

from __future__ import annotations

import pytest
from fakes import HashEmbedder

from ratchet_ray.bank.skill_bank import SkillBank
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
