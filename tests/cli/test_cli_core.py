"""`ratchet` skill / meta / audit / curate / query / capsule prune on a real run directory."""

from __future__ import annotations

import csv
import io
import json
import time

import pytest
from click.testing import CliRunner
from skill_builders import TOPICS, make_skill, routed_capsules
from fakes import HashEmbedder

from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.bank.skill_io import dump_skill
from ratchet_ray.cli import main
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.run_config.files import dump_config
from ratchet_ray.evidence.store import EvidenceStore


@pytest.fixture
def run(run_dir):
    """A run with a config, three skills, a default meta-skill and two rounds of capsules."""
    config = LoopConfig()
    run_dir.mkdir(parents=True)
    dump_config(config, run_dir / "config.yaml")
    bank = SkillBank(run_dir, embedder=HashEmbedder(), config=config, run_id=run_dir.name)
    bank.add(make_skill("bad", TOPICS[0]), round_=0)
    bank.add(make_skill("good", TOPICS[1]), round_=0)
    bank.add(make_skill("locked", TOPICS[2], do_not_retire=True), round_=0)
    bank.ensure_default_metaskill("mbpp")
    store = EvidenceStore(run_dir)
    store.append("capsule", 1, routed_capsules("run1", "bad", 1, 40, 60)
                 + routed_capsules("run1", "locked", 1, 10, 90))
    store.append("capsule", 2, routed_capsules("run1", "good", 2, 7, 3)
                 + routed_capsules("run1", "NONE", 2, 1, 1, split="eval"))
    return run_dir


def ratchet(run_dir, *args, input=None):
    result = CliRunner().invoke(main, ["--db", str(run_dir), *args], input=input)
    return result


def test_skill_list_show_and_formats(run):
    out = ratchet(run, "skill", "list")
    assert out.exit_code == 0, out.output
    assert "bad" in out.output and "-0.2" in out.output and "(3 rows)" in out.output
    rows = json.loads(ratchet(run, "skill", "list", "--format", "json").output)
    assert {r["id"]: r["trials"] for r in rows} == {"bad": 100, "good": 10, "locked": 100}
    shown = ratchet(run, "skill", "show", "good")
    assert shown.exit_code == 0 and "id: good" in shown.output and "contribution +0.400" in shown.output
    missing = ratchet(run, "skill", "show", "nope")
    assert missing.exit_code == 1 and "unknown skill id 'nope'" in missing.output


def test_meta_list_and_audit(run):
    meta = ratchet(run, "meta", "list")
    assert meta.exit_code == 0 and "default_mbpp" in meta.output and "active" in meta.output
    audit = ratchet(run, "audit", "--limit", "2", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(audit.output)))
    assert len(rows) == 2 and rows[0]["event"] == "meta_added"


def test_curate_dry_run_changes_nothing_then_retires(run):
    dry = ratchet(run, "curate", "--dry-run")
    assert dry.exit_code == 0 and "would retire: bad" in dry.output
    assert "exempt" in dry.output  # the locked skill is reported with its live score
    assert SkillBank(run, embedder=None, config=LoopConfig(), run_id="run1").get("bad").is_active
    real = ratchet(run, "curate")
    assert real.exit_code == 0 and "retired (round 2): bad" in real.output
    listed = json.loads(ratchet(run, "skill", "list", "--format", "json").output)
    assert {r["id"]: r["status"] for r in listed} == {"bad": "deprecated", "good": "active",
                                                     "locked": "active"}
    assert "retired" in ratchet(run, "audit", "--limit", "1").output


def test_skill_load_imports_and_reports_bad_files(run, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "h.yaml").write_text(dump_skill(make_skill("human_one", TOPICS[5], author="human")))
    out = ratchet(run, "skill", "load", str(mine))
    assert out.exit_code == 0 and "imported 1 skill(s)" in out.output
    (mine / "bad.yaml").write_text("id: broken\nname: b\ndescription: d\nguidance: {}\n")
    bad = ratchet(run, "skill", "load", str(mine))
    assert bad.exit_code == 1 and "bad.yaml: field 'intent'" in bad.output
    assert "Traceback" not in bad.output


def test_query_is_read_only_with_three_formats(run):
    sql = "select skill_id, count(*) as n from capsule where split='train' group by 1 order by 1"
    table = ratchet(run, "query", sql)
    assert table.exit_code == 0 and "bad" in table.output and "(3 rows)" in table.output
    as_json = json.loads(ratchet(run, "query", sql, "--format", "json").output)
    assert as_json == [{"skill_id": "bad", "n": 100}, {"skill_id": "good", "n": 10},
                       {"skill_id": "locked", "n": 100}]
    as_csv = ratchet(run, "query", sql, "--format", "csv").output.splitlines()
    assert as_csv[0] == "skill_id,n" and as_csv[1] == "bad,100"
    for writing in ["create table t as select 1", "copy capsule to 'x.csv'",
                    "select 1; drop view capsule", "insert into capsule select * from capsule"]:
        refused = ratchet(run, "query", writing)
        assert refused.exit_code == 2 and "read-only" in refused.output, writing
    escape = ratchet(run, "query", "select * from read_csv('/etc/passwd')")
    assert escape.exit_code == 1 and "query failed" in escape.output


def test_capsule_prune_needs_confirmation_and_removes_only_old_parts(run):
    store = EvidenceStore(run)
    old = [c.model_copy(update={"created_at": time.time() - 40 * 86400})
           for c in routed_capsules("run1", "ancient", 0, 3, 0)]
    store.append("capsule", 0, old)
    before = store.row_count("capsule")
    dry = ratchet(run, "capsule", "prune", "--keep-days", "30", "--dry-run")
    assert dry.exit_code == 0 and "1 capsule part(s), 3 row(s)" in dry.output
    declined = ratchet(run, "capsule", "prune", "--keep-days", "30", input="n\n")
    assert declined.exit_code == 1 and store.row_count("capsule") == before
    done = ratchet(run, "capsule", "prune", "--keep-days", "30", "--yes")
    assert done.exit_code == 0 and "removed 1 part(s)" in done.output
    assert store.row_count("capsule") == before - 3


def test_commands_need_an_existing_run_dir(tmp_path):
    no_db = CliRunner().invoke(main, ["skill", "list"])
    assert no_db.exit_code == 2 and "--db RUN_DIR" in no_db.output
    missing = ratchet(tmp_path / "nowhere", "audit")
    assert missing.exit_code == 2 and "no such run directory" in missing.output


def test_audit_shows_an_outage_of_the_router(run):
    from ratchet_ray.llm.accounting import llm_call_row

    quiet = ratchet(run, "audit")
    assert quiet.exit_code == 0 and "failed LLM calls" not in quiet.output
    down = "router LLM failed -> NONE: LLMError: http://h:1/v1: Connection error."
    store = EvidenceStore(run)
    for round_, routers in ((1, 1), (2, 2)):
        store.append("llm_call", round_, [
            llm_call_row(None, run_id="run1", round_=round_, role="router", ok=False, error=down)
            for _ in range(routers)] + [llm_call_row(None, run_id="run1", round_=round_,
                                                     role="solver")])
    audit = ratchet(run, "audit")
    assert audit.exit_code == 0, audit.output
    assert f"failed LLM calls (router): 3 in rounds 1-2; latest: {down}" in audit.output
    assert "(solver)" not in audit.output  # its one call succeeded
    as_json = json.loads(ratchet(run, "audit", "--format", "json").output)
    assert all("skill_id" in row for row in as_json), "machine formats stay pure rows"


@pytest.mark.parametrize("command", [["curate"], ["skill", "load"]])
def test_a_round_past_the_run_is_refused_before_anything_is_recorded(run, command):
    """``--round 999`` on a two-round run dated the retirements (or loads) in a round the run
    never ran, which every per-round query then read as its history."""
    events = "select count(*) from skill_event"
    before = ratchet(run, "query", events, "--format", "json").output
    out = ratchet(run, *command, "--round", "999")
    assert out.exit_code == 2 and "--round 999 is past this run" in out.output, out.output
    assert "latest round is 2: give --round 2 (or 3, the next round)" in out.output
    assert ratchet(run, "query", events, "--format", "json").output == before
    assert ratchet(run, *command, "--round", "3").exit_code == 0  # the next round is fine
