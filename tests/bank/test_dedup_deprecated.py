"""``synth.dedup_against_deprecated``: whether a retired skill still blocks near-copies of it."""

from __future__ import annotations

import pytest
from fakes import HashEmbedder
from skill_builders import TOPICS, make_skill

from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.settings.schema import LoopConfig


@pytest.mark.parametrize("against_deprecated", [True, False])
def test_a_retired_skill_blocks_near_copies_only_when_deprecated_skills_count(
        run_dir, against_deprecated):
    config = LoopConfig(synth={"dedup_against_deprecated": against_deprecated})
    bank = SkillBank(run_dir, embedder=HashEmbedder(), config=config, run_id="run1")
    assert bank.add(make_skill("window", TOPICS[0]), round_=0).ok
    near = make_skill("window_two", TOPICS[0])
    assert bank.add(near, round_=1).duplicate_of == "window"  # ACTIVE: a duplicate either way
    bank.retire("window", round_=2)
    result = bank.add(near, round_=3)
    if against_deprecated:  # the Default, the paper's reading: the bank keeps deprecated skills
        assert (result.status, result.duplicate_of) == ("duplicate", "window")
    else:
        assert result.ok and [s.id for s in bank.active()] == ["window_two"]


def test_the_default_dedups_against_the_whole_bank():
    assert LoopConfig().synth.dedup_against_deprecated is True
