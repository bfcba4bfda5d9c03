"""A run dir this user may not read in part (a copy made by another user, a ``chmod`` gone
wrong), met by the read-side commands: one ``Error:`` line naming what may not be read and the
access it needs, never a traceback, a round missing without a word, or a read blamed on a
write; and nothing is set aside (the parts are not damaged).

Root reads whatever the mode bits say, so as root each command runs without the capabilities
that let it (``setpriv``); as another user ``chmod`` alone does it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from skill_builders import TOPICS, make_skill, routed_capsules
from fakes import HashEmbedder

from one_line import process_error_line
from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.run_config.files import dump_config
from ratchet_ray.settings.schema import LoopConfig

ROOT = Path(__file__).resolve().parents[2]
_AS_OWNER_ONLY = (["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
                  if os.geteuid() == 0 else [])


def ratchet_denied(*args: str) -> subprocess.CompletedProcess:
    """``ratchet ARGS`` in a process the mode bits bind (see the module docstring)."""
    return subprocess.run([*_AS_OWNER_ONLY, sys.executable, "-m", "ratchet_ray.cli", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.fixture
def run(run_dir) -> Path:
    """A two-round run: config.yaml, a skill, capsules of rounds 0 and 1."""
    run_dir.mkdir(parents=True)
    config = LoopConfig()
    dump_config(config, run_dir / "config.yaml")
    SkillBank(run_dir, embedder=HashEmbedder(), config=config,
              run_id=run_dir.name).add(make_skill("one", TOPICS[0]), round_=0)
    store = EvidenceStore(run_dir)
    for round_ in (0, 1):
        store.append("capsule", round_, routed_capsules(run_dir.name, "one", round_, 2, 1))
    return run_dir


@pytest.fixture
def deny():
    """``deny(path)`` takes every permission from ``path`` until the test ends."""
    denied: list[Path] = []
    yield lambda path: (denied.append(path), path.chmod(0))
    for path in denied:
        if path.exists():
            path.chmod(0o755)


@pytest.mark.parametrize("what", ["round folder", "evidence folder"])
def test_evidence_this_user_may_not_read_is_named_not_skipped(run, deny, what):
    """A round folder it may not list was skipped by the glob (the round's capsules missing from
    every answer, `evidence verify` finding nothing wrong); the evidence folder was a
    traceback."""
    folder = (run / "evidence" / "capsule" / "round=1" if what == "round folder"
              else run / "evidence")
    deny(folder)
    for args in (["query", "select count(*) from capsule"], ["evidence", "verify"]):
        done = ratchet_denied("--db", str(run), *args)
        process_error_line(done, f"{folder} may not be read by this user", "read access",
                           "`evidence repair` would not help")


def test_repair_sets_no_part_aside_that_only_this_user_may_not_read(run, deny):
    """`evidence repair` moved a good part this user may not read into quarantine/, so its
    capsules left every view."""
    part = next((run / "evidence" / "capsule" / "round=1").glob("*.parquet"))
    deny(part)
    done = ratchet_denied("--db", str(run), "evidence", "repair")
    process_error_line(done, f"{part} may not be read by this user")
    assert part.exists() and not (run / "quarantine").exists()
