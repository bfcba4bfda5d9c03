"""Arm A10 (issue 24, beyond the paper): skill refinement, with the scripted LLM against the real
SkillBank and evidence. An ACTIVE skill whose routed failures the Critic blames on it is
revised: the revision is a new version of its lineage, the old version is deprecated with the
event ``refined``, each version's contribution is its own, and the cap and the cover guard
apply as usual."""

from __future__ import annotations

import json

import pytest
from fakes import HashEmbedder, ScriptedLLM
from skill_builders import TOPICS, make_skill, routed_capsules

from ratchet_ray.bank.skill_io import dump_skill, parse_skill
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.evidence.queries import skill_stats
from ratchet_ray.governance.curator import curate
from ratchet_ray.roles.refiner_prompt import REFINE_HEADING
from ratchet_ray.roles.synthesizer import Synthesizer
from ratchet_ray.types import SkillStatus, Verdict

WINDOW = TOPICS[0]  # "sliding window subarray span"


def revision_reply(intent: str = "Solve sliding window subarray span with a shrinking left edge"
                   ) -> str:
    return json.dumps({
        "id": "whatever_the_model_says", "name": "x", "description": f"tasks about {WINDOW}",
        "intent": intent, "signals_match": ["sliding", "window"], "tags": ["auto"],
        "preconditions": [],
        "guidance": {"applies_when": f"the task mentions {WINDOW}",
                     "key_insight": "shrink the left edge while the window breaks the bound",
                     "common_pitfalls": ["growing the window past the bound"],
                     "verify_before_returning": "check a window of length one"}})


def blamed(skill_id: str, n: int, *, attribution: str = "hurt", round_: int = 1,
           pattern: str = "window_left_edge_never_moves") -> list[Verdict]:
    return [Verdict(capsule_id=f"{skill_id}-{attribution}-{i}", run_id="run1", round=round_,
                    task_id=f"Mbpp/{i}", skill_id=skill_id, attribution=attribution,
                    pattern=pattern, confidence=0.9, rationale=f"the skill said {i}")
            for i in range(n)]


def refiner_config(**synth) -> LoopConfig:
    config = LoopConfig()
    config.synth.refine = True
    for key, value in synth.items():
        setattr(config.synth, key, value)
    return config


def synthesize(bank, config, llm, verdicts, round_=1):
    return Synthesizer(llm, HashEmbedder(), config.synth, "mbpp").run(
        verdicts, bank.active(), None,
        lambda s, sources=None: bank.add(s, round_=round_, sources=sources), round_,
        known_ids=[s.id for s in bank.all()],
        refine_skill=lambda s, parent: bank.refine(s, parent, round_=round_))


@pytest.fixture
def refining_bank(run_dir):
    from ratchet_ray.bank.skill_bank import SkillBank

    config = refiner_config()
    bank = SkillBank(run_dir, embedder=HashEmbedder(), config=config, run_id="run1")
    assert bank.add(make_skill("window", WINDOW), round_=0).ok
    assert bank.add(make_skill("primes", TOPICS[1]), round_=0).ok
    return bank, config


def test_a_blamed_skill_is_refined_into_a_new_version_and_the_old_is_deprecated(
        refining_bank, store):
    bank, config = refining_bank
    llm = ScriptedLLM(lambda messages, schema: revision_reply())
    outcome = synthesize(bank, config, llm, blamed("window", 3))
    assert outcome.refined == ["window"] and outcome.created == ["window_v2"]
    assert outcome.failed == [] and outcome.evicted == []
    old, new = bank.get("window"), bank.get("window_v2")
    assert old.status is SkillStatus.DEPRECATED and new.is_active
    assert (new.lineage, new.lineage_version, new.lineage_id) == ("window", 2, "window")
    assert (old.lineage, old.lineage_version, old.lineage_id) == (None, 1, "window")
    assert [s.id for s in bank.all() if s.lineage_id == "window"] == ["window", "window_v2"]
    # the revision prompt: the current skill and the verdicts of its routed failures
    prompt = llm.calls[0][0][-1].content
    assert prompt.startswith(REFINE_HEADING) and "the skill said 0" in prompt
    assert "Current skill (`window`, version 1 of lineage `window`)" in prompt
    assert f"key_insight: think about {WINDOW}" in prompt
    assert "(hurt)" in prompt  # the Critic's attribution travels with each example
    # the verdicts were the revision's: nothing left to cluster, so one LLM call only
    assert len(llm.calls) == 1 and outcome.skipped_clusters == []
    with store.connect() as con:
        events = con.execute("SELECT skill_id, event, status_after, reason FROM skill_event "
                             "WHERE round = 1 ORDER BY created_at").fetchall()
    assert events == [
        ("window", "refined", "deprecated",
         "refined: superseded by window_v2 (lineage window, version 2)"),
        ("window_v2", "added", "active",
         "author=synthesized; refines window (lineage window, version 2)")]
    # the files on disk say the same (a reopened bank reads the lineage back)
    from ratchet_ray.bank.skill_bank import SkillBank

    again = SkillBank(bank.run_dir, embedder=HashEmbedder(), config=config, run_id="run1")
    assert again.get("window_v2").lineage == "window"
    assert again.get("window").status is SkillStatus.DEPRECATED


def test_a_second_refinement_is_version_three_of_the_same_lineage(refining_bank):
    bank, config = refining_bank
    llm = ScriptedLLM(lambda messages, schema: revision_reply())
    synthesize(bank, config, llm, blamed("window", 3))
    outcome = synthesize(bank, config, llm, blamed("window_v2", 4, round_=2), round_=2)
    assert outcome.refined == ["window_v2"] and outcome.created == ["window_v3"]
    v3 = bank.get("window_v3")
    assert (v3.lineage, v3.lineage_version) == ("window", 3)
    assert "version 2 of lineage `window`" in llm.calls[-1][0][-1].content


def test_contribution_is_never_pooled_across_versions(refining_bank, store):
    bank, config = refining_bank
    store.append("capsule", 0, routed_capsules("run1", "window", 0, passed=1, failed=9))
    synthesize(bank, config, ScriptedLLM(lambda m, s: revision_reply()), blamed("window", 3))
    store.append("capsule", 2, routed_capsules("run1", "window_v2", 2, passed=8, failed=2))
    with store.connect() as con:
        stats = skill_stats(con, "train")
    assert (stats["window"].trials, stats["window"].successes) == (10, 1)
    assert (stats["window_v2"].trials, stats["window_v2"].successes) == (10, 8)
    assert stats["window"].contribution == pytest.approx(-0.8)
    assert stats["window_v2"].contribution == pytest.approx(0.6)
    # the Curator judges each version on its own trials (A4's bar: N_min 10, tau 0)
    config.curator.min_trials, config.curator.retire_tau = 10, 0.0
    decisions = {d.skill_id: d for d in curate(bank.all(), stats, config.curator)}
    assert "window" not in decisions  # deprecated: no longer the Curator's
    assert decisions["window_v2"].action == "keep"


def test_a_refinement_at_the_cap_evicts_nothing_and_keeps_the_cap(run_dir):
    from ratchet_ray.bank.skill_bank import SkillBank

    config = refiner_config()
    config.curator.active_cap = 2
    bank = SkillBank(run_dir, embedder=HashEmbedder(), config=config, run_id="run1")
    for i, topic in enumerate(TOPICS[:2]):
        assert bank.add(make_skill(f"s{i}", topic), round_=0).ok
    outcome = synthesize(bank, config, ScriptedLLM(lambda m, s: revision_reply()),
                         blamed("s0", 3))
    assert outcome.created == ["s0_v2"] and outcome.evicted == []
    assert sorted(s.id for s in bank.active()) == ["s0_v2", "s1"]
    assert len(bank.active()) == config.curator.active_cap
    # a new skill on top of it goes through the cap as usual: the lowest contribution goes
    assert bank.add(make_skill("third", TOPICS[5]), round_=2).evicted != []
    assert len(bank.active()) == config.curator.active_cap


def test_the_cover_guard_sees_the_revision_and_unblamed_verdicts_are_clustered(refining_bank):
    bank, config = refining_bank
    config.synth.cover_threshold = 0.5
    # the blamed failures make the revision; failures the skill helped on are not its fault,
    # they are clustered as usual, and the revision (not its deprecated parent) covers them
    helped = blamed("window", 3, attribution="helped", pattern="sliding_window_subarray_span")
    llm = ScriptedLLM(lambda messages, schema: revision_reply())
    outcome = synthesize(bank, config, llm, [*blamed("window", 3), *helped])
    assert outcome.created == ["window_v2"]
    assert outcome.skipped_clusters == ["sliding_window_subarray_span"]
    assert len(llm.calls) == 1  # the covered cluster asked for no new skill


def test_what_is_not_refined(refining_bank):
    bank, config = refining_bank
    llm = ScriptedLLM(lambda messages, schema: revision_reply())
    # too few blamed verdicts, or verdicts that do not blame the skill: no revision
    assert synthesize(bank, config, llm, blamed("window", 2)).refined == []
    assert synthesize(bank, config, llm,
                      blamed("window", 5, attribution="inapplicable")).refined == []
    assert not any(m[0][-1].content.startswith(REFINE_HEADING) for m in llm.calls)
    # refine off (the Default): nothing is revised whatever the verdicts say
    config.synth.refine = False
    assert synthesize(bank, config, llm, blamed("window", 5)).refined == []
    assert bank.get("window").is_active


def test_do_not_retire_and_deprecated_skills_are_not_refined(refining_bank):
    bank, config = refining_bank
    keep = make_skill("kept", TOPICS[3], do_not_retire=True, author="user")
    assert bank.add(keep, round_=0).ok
    llm = ScriptedLLM(lambda messages, schema: revision_reply(f"Solve {TOPICS[3]} again"))
    assert synthesize(bank, config, llm, blamed("kept", 5)).refined == []
    bank.retire("primes", round_=1)
    result = bank.refine(make_skill("primes_v2", TOPICS[1]), "primes", round_=1)
    assert result.status == "invalid" and "it is deprecated" in result.reason
    assert "primes_v2" not in {s.id for s in bank.all()}


def test_dedup_skips_the_own_lineage_but_not_other_skills(refining_bank):
    bank, _ = refining_bank
    # a revision that equals its parent is allowed (a revision is meant to be close) ...
    same = make_skill("window_v2", WINDOW)
    assert bank.refine(same, "window", round_=1).ok
    # ... one that copies another skill is a duplicate of it, and the bank is unchanged
    copy = make_skill("window_v3", TOPICS[1])
    result = bank.refine(copy, "window_v2", round_=2)
    assert result.status == "duplicate" and result.duplicate_of == "primes"
    assert bank.get("window_v2").is_active and "window_v3" not in {s.id for s in bank.all()}


def test_bank_files_without_lineage_read_and_write_as_before():
    old = dump_skill(make_skill("plain", TOPICS[2]))
    assert "lineage" not in old  # a first version's file is what it was before A10
    skill = parse_skill(old)
    assert (skill.lineage, skill.lineage_version) == (None, 1) and dump_skill(skill) == old
    revised = skill.model_copy(update={"id": "plain_v2", "name": "plain_v2",
                                       "lineage": "plain", "lineage_version": 2})
    text = dump_skill(revised)
    assert "lineage: plain\nlineage_version: 2\n" in text
    assert parse_skill(text) == revised and dump_skill(parse_skill(text)) == text
