"""SkillBank: add checks, cap and eviction, retire/reinstate, snapshots, import, meta-skills,
and a skill event for every change."""

from __future__ import annotations

import pytest
from skill_builders import TOPICS, make_skill, routed_capsules
from fakes import HashEmbedder

from ratchet_ray.bank.skill_bank import BankError, SkillBank
from ratchet_ray.bank.skill_io import SkillFileError, dump_skill
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.types import MetaSkill, SkillStatus


def events(bank: SkillBank) -> list[tuple]:
    con = bank.log.store.connect()
    return con.execute("select round, skill_id, event, status_after from skill_event "
                       "order by created_at").fetchall()


def files(bank: SkillBank) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(bank.skills_dir.glob("*"))}


def capped(run_dir, cap: int) -> SkillBank:
    return SkillBank(run_dir, embedder=HashEmbedder(), config=LoopConfig(curator={"active_cap": cap}),
                     run_id="run1")


def test_add_writes_the_yaml_and_an_event(bank):
    skill = make_skill("window", TOPICS[0])
    result = bank.add(skill, round_=2)
    assert result.ok and result.evicted == []
    assert (bank.skills_dir / "window.yaml").read_text() == dump_skill(skill)
    assert bank.active() == [skill] and events(bank) == [(2, "window", "added", "active")]


def test_reopening_the_bank_reads_it_back(bank, run_dir):
    bank.add(make_skill("window", TOPICS[0]), round_=0)
    again = SkillBank(run_dir, embedder=None, config=LoopConfig(), run_id="run1")
    assert [s.id for s in again.active()] == ["window"]
    with pytest.raises(BankError, match="without an embedder"):
        again.add(make_skill("prime", TOPICS[1]), round_=1)


def test_near_duplicate_returns_the_duplicate_id_and_changes_nothing(bank):
    bank.add(make_skill("window", TOPICS[0]), round_=0)
    before = files(bank)
    near = make_skill("window_two", TOPICS[0])
    result = bank.add(near, round_=1)
    assert (result.status, result.duplicate_of) == ("duplicate", "window")
    same_id = bank.add(make_skill("window", TOPICS[1]), round_=1)
    assert (same_id.status, same_id.duplicate_of) == ("duplicate", "window")
    assert files(bank) == before
    assert [e[2] for e in events(bank)] == ["added", "rejected", "rejected"]


def test_length_cap_and_invalid_proposals(bank):
    long = make_skill("long", TOPICS[0], description="x " * 2000)
    assert bank.add(long, round_=0).status == "too_long"
    bad = bank.add({"id": "nointent", "name": "n", "description": "d",
                    "guidance": {"applies_when": "a", "key_insight": "b"}}, round_=0)
    assert bad.status == "invalid" and "field 'intent'" in bad.reason
    assert bank.add("id: [broken", round_=0).status == "invalid"
    assert bank.all() == []


def test_full_bank_evicts_the_lowest_contribution_skill(run_dir):
    bank = capped(run_dir, 3)
    for i in range(3):
        bank.add(make_skill(f"s{i}", TOPICS[i]), round_=0)
    bank.log.store.append("capsule", 1, routed_capsules("run1", "s0", 1, 5, 5)
                          + routed_capsules("run1", "s1", 1, 2, 8) + routed_capsules("run1", "s2", 1, 9, 1))
    result = bank.add(make_skill("s3", TOPICS[3]), round_=2)
    assert result.ok and result.evicted == ["s1"]
    assert bank.get("s1").status is SkillStatus.DEPRECATED and len(bank.active()) == 3
    assert (2, "s1", "evicted", "deprecated") in events(bank)
    assert (bank.skills_dir / "s1.yaml").exists()  # never deleted


def test_cap_full_of_do_not_retire_skills_rejects_and_leaves_the_bank_unchanged(run_dir):
    bank = capped(run_dir, 2)
    for i in range(2):
        bank.add(make_skill(f"keep{i}", TOPICS[i], do_not_retire=True), round_=0)
    before = files(bank)
    result = bank.add(make_skill("new", TOPICS[5]), round_=1)
    assert result.status == "cap_full" and result.evicted == []
    assert files(bank) == before and len(bank.active()) == 2
    assert bank.add(make_skill("shelved", TOPICS[6], status="candidate"), round_=1).ok


def test_retire_and_reinstate(bank):
    bank.add(make_skill("a", TOPICS[0]), round_=0)
    bank.add(make_skill("locked", TOPICS[1], do_not_retire=True), round_=0)
    bank.retire("a", round_=3, contribution=-0.2, trials=120, reason="curator")
    assert bank.get("a").status is SkillStatus.DEPRECATED
    with pytest.raises(BankError, match="only ACTIVE skills retire"):
        bank.retire("a", round_=3)
    with pytest.raises(BankError, match="do_not_retire"):
        bank.retire("locked", round_=3)
    with pytest.raises(BankError, match="unknown skill id 'zzz'"):
        bank.get("zzz")
    assert bank.reinstate("a", round_=4).ok and bank.get("a").is_active
    rows = events(bank)
    assert rows[-2:] == [(3, "a", "retired", "deprecated"), (4, "a", "reinstated", "active")]
    con = bank.log.store.connect()
    assert con.execute("select contribution, trials, reason from skill_event where event='retired'"
                       ).fetchone() == (-0.2, 120, "curator")


def test_curate_retires_through_the_evidence_and_reports_exempt(bank):
    bank.add(make_skill("bad", TOPICS[0]), round_=0)
    bank.add(make_skill("locked", TOPICS[1], do_not_retire=True), round_=0)
    bank.add(make_skill("fresh", TOPICS[2]), round_=0)
    bank.log.store.append("capsule", 1, routed_capsules("run1", "bad", 1, 45, 55)
                          + routed_capsules("run1", "locked", 1, 0, 100)
                          + routed_capsules("run1", "fresh", 1, 30, 69))
    decisions = {d.skill_id: d.action for d in bank.curate(1)}
    assert decisions == {"bad": "retire", "locked": "exempt", "fresh": "insufficient"}
    assert [s.id for s in bank.active()] == ["fresh", "locked"]
    con = bank.log.store.connect()
    assert con.execute("select skill_id, contribution, trials from skill_event where event='retired'"
                       ).fetchall() == [("bad", -0.1, 100)]


def test_snapshot_and_restore_flip_statuses_back_and_keep_later_skills(bank, run_dir):
    bank.add(make_skill("a", TOPICS[0]), round_=0)
    bank.add(make_skill("b", TOPICS[1]), round_=0)
    path = bank.snapshot(1)
    assert path == run_dir / "checkpoints" / "round_01" and (path / "manifest.json").exists()
    bank.retire("a", round_=2, reason="test")
    bank.add(make_skill("c", TOPICS[2]), round_=2)
    changed = bank.restore(1, current_round=6)
    assert changed == ["a", "c"]
    assert [s.id for s in bank.active()] == ["a", "b"] and bank.get("c").status is SkillStatus.DEPRECATED
    assert (6, "c", "restored", "deprecated") in events(bank)
    with pytest.raises(FileNotFoundError, match=r"available rounds: \[1\]"):
        bank.restore(9)


def test_load_imports_a_user_bank_and_rejects_a_bad_folder_whole(bank, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "one.yaml").write_text(dump_skill(make_skill("one", TOPICS[0], author="human")))
    (mine / "two.yaml").write_text(dump_skill(make_skill("two", TOPICS[0], do_not_retire=True)))
    assert bank.load(mine) == ["one", "two"]  # no dedup for a user's own bank
    assert bank.load(mine) == []  # idempotent
    (mine / "three.yaml").write_text("id: three\nname: t\nstatus: live\n")
    before = files(bank)
    with pytest.raises(SkillFileError, match=r"three\.yaml: field 'status'"):
        bank.load(mine)
    assert files(bank) == before


def test_load_registers_files_dropped_into_the_run(run_dir):
    skills = run_dir / "skills"
    skills.mkdir(parents=True)
    for i in range(3):
        (skills / f"d{i}.yaml").write_text(dump_skill(make_skill(f"d{i}", TOPICS[i], do_not_retire=True)))
    bank = capped(run_dir, 2)
    results = bank.load_results(skills, round_=0)
    assert [r.skill_id for r in results] == ["d0", "d1", "d2"]
    assert [s.id for s in bank.active()] == ["d0", "d1"] and bank.get("d2").status.value == "candidate"
    assert bank.load_results(skills) == []


def test_one_active_metaskill_per_suite_and_the_default_is_copied_once(bank, run_dir):
    first = bank.ensure_default_metaskill("mbpp")
    assert first.id == "default_mbpp" and (run_dir / "meta-skills" / "default_mbpp.md").exists()
    assert bank.ensure_default_metaskill("mbpp") == first
    bank.add_metaskill(MetaSkill(id="mbpp_v2", suite="mbpp", body="# v2", created_round=4), round_=4)
    assert bank.active_metaskill("mbpp").id == "mbpp_v2"
    assert {m.id: m.status.value for m in bank.metaskills()} == {"default_mbpp": "deprecated",
                                                               "mbpp_v2": "active"}
    assert bank.ensure_default_metaskill("mbpp").id == "mbpp_v2"
    assert bank.active_metaskill("swebench") is None
    with pytest.raises(BankError, match="already exists"):
        bank.add_metaskill(MetaSkill(id="mbpp_v2", suite="mbpp", body="x"), round_=5)
    assert [e[2] for e in events(bank)] == ["meta_added", "meta_retired", "meta_added"]


def test_a3_serves_no_metaskill(run_dir):
    bank = SkillBank(run_dir, embedder=None, config=LoopConfig(meta={"enabled": False}), run_id="r")
    assert bank.ensure_default_metaskill("mbpp") is None and bank.metaskills() == []


def test_a_bad_file_in_the_run_stops_the_bank_with_file_and_field(run_dir):
    (run_dir / "skills").mkdir(parents=True)
    (run_dir / "skills" / "x.yaml").write_text("id: x\nname: x\ndescription: d\n")
    with pytest.raises(SkillFileError, match=r"x\.yaml: field 'intent'"):
        SkillBank(run_dir, embedder=None, config=LoopConfig(), run_id="r")
