"""The Curator's tampering rule: the pure decision (``governance.curator``), then on a real
SkillBank over real Parquet evidence (the per-skill counts of ``evidence.queries``, the skill
events, ``do_not_retire`` and the two settings)."""

from __future__ import annotations

import pytest
from skill_builders import TOPICS, make_skill, routed_capsules

from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.settings.schema import CuratorSettings, LoopConfig
from ratchet_ray.evidence.queries import (SkillStats, TamperingStats, tampering_by_skill,
                                          tampering_capsules, tampering_totals)
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.evidence.tampering import (PROTOCOL_VIOLATION, TAMPERING_STATUSES,
                                            TEST_TAMPERING, grader_finding, is_tampering)
from ratchet_ray.governance.curator import curate, tampering_retires
from fakes import HashEmbedder

ON = CuratorSettings(retire_on_tampering=True)  # beyond the paper: --profile hardened
OFF = CuratorSettings(retire_on_tampering=False)  # the Default (the paper's)
OVERRIDE = CuratorSettings(retire_on_tampering=True, tampering_overrides_do_not_retire=True)


def record(capsules: int = 1, first_round: int = 3) -> TamperingStats:
    return TamperingStats(capsules=capsules, first_round=first_round, last_round=first_round,
                          first_capsule="c1", first_status=TEST_TAMPERING)


def decisions(skills, stats, settings, tampering):
    return {d.skill_id: d for d in curate(skills, stats, settings, tampering)}


# ---- the pure rule --------------------------------------------------------------------------
def test_the_vocabulary_and_defaults():
    assert TAMPERING_STATUSES == {TEST_TAMPERING, PROTOCOL_VIOLATION}
    assert is_tampering("protocol_violation") and not is_tampering("failed_tests")
    assert not is_tampering(None)
    default = CuratorSettings()
    assert not default.retire_on_tampering and not default.tampering_overrides_do_not_retire


def test_one_tampering_attempt_retires_at_once_whatever_the_score():
    skills = [make_skill("cheat", TOPICS[0]), make_skill("winner", TOPICS[1])]
    stats = {"cheat": SkillStats.from_counts(0, 1), "winner": SkillStats.from_counts(90, 10)}
    got = decisions(skills, stats, ON, {"cheat": record(1), "winner": record(2)})
    assert got["cheat"].action == "retire" and got["cheat"].for_tampering
    assert got["cheat"].reason.startswith("tampering: 1 routed train attempt was graded as "
                                          "tampering (first in round 3: test_tampering, capsule c1)")
    assert got["cheat"].tampering == 1 and got["cheat"].trials == 1  # far below N_min = 100
    # a score far above the bar does not save a skill that tampered
    assert got["winner"].action == "retire" and got["winner"].for_tampering
    assert got["winner"].contribution == pytest.approx(0.8)


def test_without_tampering_the_score_rule_decides_as_before():
    skills = [make_skill("young", TOPICS[0]), make_skill("bad", TOPICS[1])]
    stats = {"young": SkillStats.from_counts(0, 5), "bad": SkillStats.from_counts(40, 60)}
    got = decisions(skills, stats, ON, {"young": record(0)})  # zero capsules: no record
    assert got["young"].action == "insufficient" and got["young"].tampering == 0
    assert got["bad"].action == "retire" and not got["bad"].for_tampering
    assert curate(skills, stats, ON) == curate(skills, stats, ON, {})


def test_the_setting_off_replicates_the_paper_default():
    skills = [make_skill("cheat", TOPICS[0])]
    got = decisions(skills, {"cheat": SkillStats.from_counts(0, 3)}, OFF, {"cheat": record(3)})
    assert got["cheat"].action == "insufficient" and not got["cheat"].for_tampering
    assert got["cheat"].tampering == 3  # still counted and shown
    assert not tampering_retires(skills[0], record(3), OFF)


def test_do_not_retire_is_respected_unless_the_override_is_set():
    locked = make_skill("locked", TOPICS[0], do_not_retire=True)
    stats = {"locked": SkillStats.from_counts(1, 1)}
    kept = decisions([locked], stats, ON, {"locked": record()})["locked"]
    assert kept.action == "exempt"
    assert "would be retired for tampering: 1 routed train attempt" in kept.reason
    assert "curator.tampering_overrides_do_not_retire" in kept.reason
    retired = decisions([locked], stats, OVERRIDE, {"locked": record()})["locked"]
    assert retired.action == "retire" and retired.for_tampering
    assert "do_not_retire overridden" in retired.reason
    # with the rule off the override changes nothing
    off = CuratorSettings(retire_on_tampering=False, tampering_overrides_do_not_retire=True)
    assert decisions([locked], stats, off, {"locked": record()})["locked"].action == "exempt"


def test_candidates_are_routed_so_they_retire_too_but_deprecated_skills_are_left_alone():
    candidate = make_skill("cand", TOPICS[0], status="candidate")
    quiet = make_skill("quiet", TOPICS[1], status="candidate")
    gone = make_skill("gone", TOPICS[2], status="deprecated")
    got = decisions([candidate, quiet, gone], {}, ON,
                    {"cand": record(), "gone": record()})
    assert set(got) == {"cand"} and got["cand"].action == "retire"
    assert decisions([candidate], {}, OFF, {"cand": record()}) == {}


# ---- the grader's finding --------------------------------------------------------------------
def test_grader_finding_skips_banners_and_picks_the_telling_line():
    trace = "[sandbox bwrap]\nbase: pass (3 tests)\nprotocol violation at base test 1/3"
    assert grader_finding(PROTOCOL_VIOLATION, trace) == "protocol violation at base test 1/3"
    swe = "applied\ntest_tampering: the canary test test_x, which always fails, was reported passed"
    assert grader_finding(TEST_TAMPERING, swe).startswith("test_tampering: the canary test")
    assert grader_finding(TEST_TAMPERING, "") == "(no details)"
    assert len(grader_finding(TEST_TAMPERING, "test_tampering " + "x" * 900, 50)) == 50


# ---- on a real bank over real evidence ------------------------------------------------------
def graded(run_id: str, skill_id: str, round_: int, statuses: list[str], split: str = "train",
           infra: bool = False) -> list:
    """Failed capsules of ``skill_id`` with the given exit statuses and a grader trace."""
    capsules = routed_capsules(run_id, skill_id, round_, 0, len(statuses), split=split)
    return [c.model_copy(update={"exit_status": s, "infra_failure": infra,
                                 "task_id": f"{skill_id}/{split}/{i}",
                                 "capsule_id": f"{c.capsule_id}-{split}-{i}-{s}",
                                 "grader_trace": f"[sandbox bwrap]\n{s}: found at test {i}"})
            for i, (c, s) in enumerate(zip(capsules, statuses))]


def open_bank(run_dir, **curator) -> SkillBank:
    """A bank whose Curator has the tampering rule on unless ``curator`` says otherwise."""
    config = LoopConfig(curator=CuratorSettings(**{"retire_on_tampering": True, **curator}))
    return SkillBank(run_dir, embedder=HashEmbedder(), config=config, run_id="run1")


@pytest.fixture
def tampered_run(run_dir):
    """Skills ``cheat`` (tampers in train round 1), ``locked`` (do_not_retire, tampers),
    ``honest`` (plain failures), ``evalonly`` (tampers on eval only), ``flaky`` (an infra
    row carrying a tampering status) and tampering NONE-routed capsules."""
    bank = open_bank(run_dir)
    for i, name in enumerate(["cheat", "honest", "evalonly", "flaky"]):
        assert bank.add(make_skill(name, TOPICS[i]), round_=0).ok
    assert bank.add(make_skill("locked", TOPICS[5], do_not_retire=True), round_=0).ok
    store = EvidenceStore(run_dir)
    store.append("capsule", 0, routed_capsules("run1", "cheat", 0, 2, 1)
                 + routed_capsules("run1", "honest", 0, 1, 1))
    store.append("capsule", 1, graded("run1", "cheat", 1, [PROTOCOL_VIOLATION, "failed_tests",
                                                          TEST_TAMPERING])
                 + graded("run1", "locked", 1, [TEST_TAMPERING])
                 + graded("run1", "honest", 1, ["failed_tests", "timeout"])
                 + graded("run1", "evalonly", 1, [TEST_TAMPERING], split="eval")
                 + graded("run1", "flaky", 1, [TEST_TAMPERING], infra=True)
                 + graded("run1", "NONE", 1, [PROTOCOL_VIOLATION]))
    return run_dir


def test_queries_count_tampering_per_skill_split_and_run(tampered_run):
    with EvidenceStore(tampered_run).connect() as con:
        per_skill = tampering_by_skill(con, "train")
        assert set(per_skill) == {"cheat", "locked"}  # not NONE, not eval, not infra
        assert per_skill["cheat"].capsules == 2 and per_skill["cheat"].first_round == 1
        assert per_skill["cheat"].first_status in TAMPERING_STATUSES
        assert set(tampering_by_skill(con, "eval")) == {"evalonly"}
        listed = tampering_capsules(con)
        assert [(r["round"], r["split"], r["skill_id"]) for r in listed] == [
            (1, "eval", "evalonly"), (1, "train", "NONE"), (1, "train", "cheat"),
            (1, "train", "cheat"), (1, "train", "locked")]
        assert all(r["exit_status"] in TAMPERING_STATUSES and r["grader_trace"] for r in listed)
        assert tampering_totals(con) == {"train_tampering": 4, "eval_tampering": 1,
                                         "skills_retired_tampering": 0}


def test_bank_curate_retires_the_tamperer_at_once_and_logs_it(tampered_run):
    bank = open_bank(tampered_run)
    got = {d.skill_id: d for d in bank.curate(1)}
    assert got["cheat"].action == "retire" and got["cheat"].for_tampering
    assert got["locked"].action == "exempt" and "tampering" in got["locked"].reason
    assert {got[s].action for s in ("honest", "evalonly", "flaky")} == {"insufficient"}
    assert bank.get("cheat").status.value == "deprecated"
    assert bank.get("locked").status.value == "active"
    with EvidenceStore(tampered_run).connect() as con:
        events = con.execute("SELECT round, skill_id, event, status_after, trials, reason "
                             "FROM skill_event WHERE event = 'retired'").fetchall()
        assert len(events) == 1
        round_, skill, _, status, trials, reason = events[0]
        assert (round_, skill, status, trials) == (1, "cheat", "deprecated", 6)
        assert reason.startswith("tampering: 2 routed train attempts were graded as tampering "
                                 "(first in round 1: ")
        assert tampering_totals(con)["skills_retired_tampering"] == 1
    # a second curation (a rerun, or the next round) retires nothing twice
    again = open_bank(tampered_run)
    assert [d.action for d in again.curate(1) if d.skill_id == "cheat"] == []
    with EvidenceStore(tampered_run).connect() as con:
        assert con.execute("SELECT count(*) FROM skill_event WHERE event = 'retired'"
                           ).fetchone() == (1,)


def test_bank_override_retires_do_not_retire_and_off_retires_nothing(tampered_run, tmp_path):
    import shutil

    copy = tmp_path / "copy" / "run1"
    shutil.copytree(tampered_run, copy)
    off = {d.skill_id: d.action for d in open_bank(copy, retire_on_tampering=False).curate(1)}
    assert off == {"cheat": "insufficient", "locked": "exempt", "honest": "insufficient",
                   "evalonly": "insufficient", "flaky": "insufficient"}
    overridden = open_bank(tampered_run, tampering_overrides_do_not_retire=True)
    got = {d.skill_id: d for d in overridden.curate(2)}
    assert got["locked"].action == "retire" and got["cheat"].action == "retire"
    assert overridden.get("locked").status.value == "deprecated"


def test_a_rollback_never_brings_back_a_skill_retired_for_tampering(tampered_run):
    bank = open_bank(tampered_run)
    bank.snapshot(1)  # every skill ACTIVE in this bank
    assert "cheat" in [s.id for s in bank.active()]
    bank.curate(1)
    assert bank.get("cheat").status.value == "deprecated"
    changed = bank.restore(1, current_round=2)
    assert "cheat" not in changed and bank.get("cheat").status.value == "deprecated"
    assert bank.get("locked").status.value == "active"  # exempt: do_not_retire
    # with the rule off, the older bank is restored as it was
    off = open_bank(tampered_run, retire_on_tampering=False)
    assert "cheat" in off.restore(1, current_round=3)
    assert off.get("cheat").status.value == "active"


def test_suspicion_alone_never_retires_and_is_listed_apart(run_dir):
    """Suspicion is not proof: a capsule of an older run whose only finding was the static
    screen, and one whose trace records a screen's suspicion, never retire their skill; the
    suspicion is listed for the audit. A behavioural finding next to them still retires."""
    from ratchet_ray.evidence.queries import suspicious_capsules
    from ratchet_ray.evidence.tampering import SCREEN_ONLY_TRACE, SUSPICION_PREFIX

    bank = open_bank(run_dir)
    for i, name in enumerate(["screened", "suspected", "proven"]):
        assert bank.add(make_skill(name, TOPICS[i]), round_=0).ok
    legacy = f"{SCREEN_ONLY_TRACE}:\n  calc/ops.py:3: # PYTEST_ADDOPTS=--junitxml"
    note = f"{SUSPICION_PREFIX} 1 added line(s) name the test harness\n  calc/ops.py:3: # _pytest"
    rows = (graded("run1", "screened", 1, [TEST_TAMPERING]) + graded("run1", "suspected", 1, ["ok"])
            + graded("run1", "proven", 1, [TEST_TAMPERING]))
    traces = {"screened": legacy, "suspected": f"resolved\n{note}\nlog: x",
              "proven": f"test_tampering: the canary test test_x was reported passed\n{note}"}
    rows = [c.model_copy(update={"grader_trace": traces[c.skill_id],
                                 "passed": c.skill_id == "suspected"}) for c in rows]
    EvidenceStore(run_dir).append("capsule", 1, rows)
    with EvidenceStore(run_dir).connect() as con:
        assert set(tampering_by_skill(con, "train")) == {"proven"}
        assert [r["skill_id"] for r in suspicious_capsules(con)] == ["proven", "suspected"]
    got = {d.skill_id: d.action for d in bank.curate(1)}
    assert got["proven"] == "retire" and got["screened"] != "retire" and got["suspected"] != "retire"
    from click.testing import CliRunner

    from ratchet_ray.cli import main

    table = CliRunner().invoke(main, ["--db", str(run_dir), "audit"])
    assert table.exit_code == 0, table.output
    assert "suspected by the static screen (not tampering): 2" in table.output
    assert "calc/ops.py:3: # _pytest" in table.output
