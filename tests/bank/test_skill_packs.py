"""Skill packs: export -> import -> export keeps the pack hash, a tampered or foreign pack is
refused, id collisions resolve stably, secrets never enter a pack, and imports serve probation
on the real SkillBank and Curator (judged only on what they earn in the importing run)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from skill_builders import TOPICS, make_skill, new_run, routed_capsules

from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.cli import main as cli
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.packs.export import export_pack
from ratchet_ray.report.data import skill_events, skill_rows
from ratchet_ray.bank.pack_format import PackError, read_pack
from ratchet_ray.types import SkillStatus

SECRET = "sk-live-9f8e7d6c5b4a39281706"


def source_run(root) -> SkillBank:
    """Run A: `helps` with a glowing record, `hurts` with a bad one (both ACTIVE, under N_min),
    `refined` a refinement of `gone` (deprecated), `dropped` retired."""
    bank = new_run(root, "runA")
    for i, sid in enumerate(["helps", "hurts", "gone", "dropped"]):
        assert bank.add(make_skill(sid, TOPICS[i]), round_=0).ok
    assert bank.refine(make_skill("refined", TOPICS[4]), "gone", round_=1).ok
    bank.log.store.append("capsule", 1, routed_capsules("runA", "helps", 1, 20, 0)
                          + routed_capsules("runA", "hurts", 1, 1, 19)
                          + routed_capsules("runA", "refined", 1, 6, 4))
    bank.retire("dropped", round_=1, reason="by hand")
    return bank


def pack_files(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_round_trip_keeps_the_pack_hash_and_carries_the_record(tmp_path):
    a = source_run(tmp_path)
    first = export_pack(a.run_dir, tmp_path / "pack1")
    assert [e["id"] for e in first["skills"]] == ["helps", "hurts", "refined"]  # ACTIVE only
    by_id = {e["id"]: e for e in first["skills"]}
    helps, refined = by_id["helps"]["record"], by_id["refined"]
    assert (helps["trials"], helps["c_hat"], helps["routed_train"]) == (20, 1.0, 20)
    assert helps["c_hat_ci95"][0] < 1.0 <= helps["c_hat_ci95"][1] + 1e-9
    assert helps["injection_tokens"] > 0 and helps["injection_tokens_per_routing"] > 0
    with EvidenceStore(a.run_dir).connect() as con:  # the report's table: the pack's estimate
        row = next(r for r in skill_rows(con, a.run_dir) if r.skill_id == "helps")
    assert row.injection_tokens == helps["injection_tokens_per_routing"]
    assert refined["lineage"]["refines"] == "gone" and refined["lineage"]["version"] == 2
    assert [h["event"] for h in by_id["hurts"]["status_history"]] == ["added"]
    assert first["source"]["run_id"] == "runA" and first["source"]["suite"] == "mbpp"
    assert len(first["source"]["config_sha256"]) == 64

    b = new_run(tmp_path, "runB")
    lines = b.import_pack(tmp_path / "pack1", round_=0)
    assert [(l.action, l.skill_id, l.status) for l in lines] == [
        ("added", "helps", "active"), ("added", "hurts", "active"), ("added", "refined", "active")]
    second = export_pack(b.run_dir, tmp_path / "pack2")
    assert second["pack_sha256"] == first["pack_sha256"]
    assert ({k: v for k, v in pack_files(tmp_path / "pack2").items() if k != "pack.json"}
            == {k: v for k, v in pack_files(tmp_path / "pack1").items() if k != "pack.json"})
    # The imported record stays in the source: run B has earned nothing yet.
    assert all(e["record"]["trials"] == 0 for e in second["skills"])
    assert {e["provenance"]["imported_from_pack"] for e in second["skills"]} == {
        first["pack_sha256"][:16]}
    # Importing the same pack again duplicates nothing.
    again = b.import_pack(tmp_path / "pack1", round_=1)
    assert {l.action for l in again} == {"same"} and len(b.all()) == 3


def test_a_tampered_or_foreign_pack_is_refused_and_changes_nothing(tmp_path):
    a = source_run(tmp_path)
    export_pack(a.run_dir, tmp_path / "pack")
    b = new_run(tmp_path, "runB")
    path = tmp_path / "pack" / "skills" / "hurts.yaml"
    original = path.read_text()
    path.write_text(original.replace("think about", "always hardcode the expected output;"))
    with pytest.raises(PackError, match="skill 'hurts': its text changed since export"):
        b.import_pack(tmp_path / "pack", round_=0)
    assert b.all() == [] and not (b.run_dir / "packs").exists()
    path.write_text(original)
    (tmp_path / "pack" / "skills" / "extra.yaml").write_text(original.replace("hurts", "extra"))
    with pytest.raises(PackError, match=r"\['extra.yaml'\] are not in pack.json"):
        read_pack(tmp_path / "pack")
    (tmp_path / "pack" / "skills" / "extra.yaml").unlink()
    manifest = json.loads((tmp_path / "pack" / "pack.json").read_text())
    manifest["source"]["suite"] = "swebench"
    (tmp_path / "pack" / "pack.json").write_text(json.dumps(manifest))
    with pytest.raises(PackError, match="'swebench' run.*--allow-other-suite"):
        b.import_pack(tmp_path / "pack", round_=0)
    assert b.all() == []
    assert len(b.import_pack(tmp_path / "pack", round_=0, allow_other_suite=True)) == 3


def test_id_collisions_same_content_is_one_skill_different_content_is_suffixed(tmp_path):
    a = source_run(tmp_path)
    export_pack(a.run_dir, tmp_path / "pack")
    b = new_run(tmp_path, "runB")
    assert b.add(make_skill("helps", TOPICS[7]), round_=0).ok  # same id, other content
    assert b.add(make_skill("mine", TOPICS[1]), round_=0).ok   # `hurts`'s content, other id
    lines = {l.pack_id: l for l in b.import_pack(tmp_path / "pack", round_=0)}
    assert (lines["helps"].action, lines["helps"].skill_id) == ("renamed", "helps_2")
    assert "id taken here by a different skill" in lines["helps"].line()
    assert b.get("helps_2").name == "helps_2" and b.get("helps").guidance.key_insight.count(
        TOPICS[7]) == 2  # both kept, the native one untouched
    assert (lines["hurts"].action, lines["hurts"].skill_id) == ("same", "mine")
    assert lines["refined"].action == "added"


def test_no_secret_enters_a_pack(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    bank = new_run(tmp_path, "runS", llm={"backend": "openai",
                                          "base_url": f"http://user:{SECRET}@10.0.0.1:8000/v1"})
    leaky = make_skill("leaky", TOPICS[0], intent=f"Call the API with key {SECRET}")
    assert bank.add(leaky, round_=0).ok
    bank.retire("leaky", round_=0, reason=f"it quoted {SECRET}")
    config = bank.run_dir / "config.yaml"  # as a hand-edited (or older) run's file holds it
    config.write_text(config.read_text().replace("http://***@", f"http://user:{SECRET}@"))
    assert SECRET in config.read_text()
    assert SECRET in (bank.skills_dir / "leaky.yaml").read_text()
    manifest = export_pack(bank.run_dir, tmp_path / "pack", status="all")
    files = pack_files(tmp_path / "pack")
    assert files and not any(SECRET.encode() in body or b"9f8e7d6c5b4a" in body
                             for body in files.values())
    assert "***" in files["skills/leaky.yaml"].decode()
    read_pack(tmp_path / "pack")  # the masked text is what its hash covers
    assert manifest["source"]["model"] is None or SECRET not in manifest["source"]["model"]


def test_probation_judges_imports_only_on_what_they_earn_here(tmp_path):
    """`helps` (glowing record in A) hurts in B and is retired by the rule; `hurts` (bad record
    in A) helps in B and is kept; right after the import neither is judged at all."""
    a = source_run(tmp_path)
    export_pack(a.run_dir, tmp_path / "pack")
    b = new_run(tmp_path, "runB", curator={"min_trials": 10, "active_cap": 4,
                                           "probation_min_trials": 5})
    b.import_pack(tmp_path / "pack", round_=0)
    assert b.probation() == {"helps": 0, "hurts": 0, "refined": 0}
    decisions = {d.skill_id: d for d in b.curate(0)}
    assert {d.action for d in decisions.values()} == {"insufficient"}
    assert decisions["helps"].trials == 0 and decisions["hurts"].trials == 0

    b.log.store.append("capsule", 1, routed_capsules("runB", "helps", 1, 2, 8)
                       + routed_capsules("runB", "hurts", 1, 9, 1)
                       + routed_capsules("runB", "refined", 1, 2, 1))
    assert b.probation() == {"refined": 3}  # 10 trials >= the probation floor of 5
    decisions = {d.skill_id: d for d in b.curate(1)}
    assert decisions["helps"].action == "retire" and decisions["helps"].trials == 10
    assert decisions["hurts"].action == "keep" and decisions["hurts"].contribution == 0.8
    assert decisions["refined"].action == "insufficient"
    assert b.get("helps").status is SkillStatus.DEPRECATED and b.get("hurts").is_active

    # Cap pressure (cap 4): a native skill scoring worse than an import on probation keeps its
    # slot; once the import has earned its trials it is ranked by its score like any other.
    for i, sid in enumerate(["native", "native2"]):
        assert b.add(make_skill(sid, TOPICS[8 + i]), round_=2).ok
    b.log.store.append("capsule", 2, routed_capsules("runB", "native", 2, 1, 3))
    result = b.add(make_skill("native3", TOPICS[10]), round_=3)
    assert result.ok and result.evicted == ["refined"]  # c=+0.33 here, but on probation
    assert b.get("native").is_active
    assert b.reinstate("refined", round_=4).evicted == ["native"]  # -0.5: refined is ranked
    b.log.store.append("capsule", 4, routed_capsules("runB", "refined", 4, 2, 0))
    assert b.probation() == {}
    result = b.add(make_skill("native4", TOPICS[11]), round_=5)
    assert result.ok and result.evicted == ["native2"]  # off probation: by score (0 < 0.6)
    assert b.get("refined").is_active


def test_an_import_on_probation_keeps_a_slot_only_on_what_it_shows_here(tmp_path):
    """Under cap pressure an import on probation is ranked by the 95 % Wilson lower bound of its
    c-hat here: untried (-1) or uncertain (c=0 over 10 trials) it goes before an untried native
    skill; clearly helping here (18 of 20) it keeps its slot before the floor (100)."""
    a = source_run(tmp_path)
    export_pack(a.run_dir, tmp_path / "pack")
    b = new_run(tmp_path, "runB", curator={"active_cap": 4})
    b.import_pack(tmp_path / "pack", round_=0)
    assert b.add(make_skill("native", TOPICS[8]), round_=0).ok
    b.log.store.append("capsule", 1, routed_capsules("runB", "helps", 1, 18, 2)
                       + routed_capsules("runB", "hurts", 1, 5, 5))
    assert b.probation() == {"helps": 20, "hurts": 10, "refined": 0}
    assert b.add(make_skill("native2", TOPICS[9]), round_=1).evicted == ["refined"]
    assert b.add(make_skill("native3", TOPICS[10]), round_=2).evicted == ["hurts"]
    assert b.add(make_skill("native4", TOPICS[11]), round_=3).evicted == ["native"]
    assert b.get("helps").is_active and b.probation() == {"helps": 20}
    with b.log.store.connect() as con:
        why = {e["skill_id"]: e["reason"] for e in skill_events(con) if e["event"] == "evicted"}
    assert why["hurts"].endswith("on probation (imported; 10 trials here)")
    assert why["native"].endswith("lowest contribution")


def test_cli_export_import_and_list_show_origin_and_probation(tmp_path):
    a = source_run(tmp_path)
    b = new_run(tmp_path, "runB")
    runner = CliRunner()
    out = runner.invoke(cli, ["skill", "export", str(a.run_dir), "-o", str(tmp_path / "p")])
    assert out.exit_code == 0, out.output
    assert "pack " in out.output and "helps" in out.output
    out = runner.invoke(cli, ["skill", "import", str(tmp_path / "p"), "--into", str(b.run_dir)])
    assert out.exit_code == 0, out.output
    assert "imported 3 skill(s) on probation" in out.output
    out = runner.invoke(cli, ["--db", str(b.run_dir), "skill", "list", "--format", "json"])
    rows = {r["id"]: r for r in json.loads(out.output)}
    assert rows["helps"]["origin"].startswith("pack:") and rows["helps"]["origin"].endswith("runA")
    assert rows["helps"]["probation"] == "0/100"
    (tmp_path / "p" / "skills" / "helps.yaml").write_text("id: helps\n")
    out = runner.invoke(cli, ["skill", "import", str(tmp_path / "p"), "--into", str(b.run_dir)])
    assert out.exit_code == 1 and "skill 'helps': its text changed" in out.output


def test_run_flag_bank_sets_the_pack_of_a_new_run(tmp_path):
    a = source_run(tmp_path)
    export_pack(a.run_dir, tmp_path / "p")
    # A dry run imports the pack as the run would: another suite's pack is refused in one line.
    out = CliRunner().invoke(cli, ["run", "sim", "--bank", str(tmp_path / "p"), "--dry-run"])
    assert out.exit_code == 1 and "exported from a 'mbpp' run" in out.output, out.output
    out = CliRunner().invoke(cli, ["run", "sim", "--bank", str(tmp_path / "p"), "--dry-run",
                                   "--set", "bank.allow_other_suite=true"])
    assert out.exit_code == 0, out.output
    assert f"pack: {(tmp_path / 'p').resolve()}" in out.output


def test_without_probation_imports_count_as_native_at_once(tmp_path):
    a = source_run(tmp_path)
    export_pack(a.run_dir, tmp_path / "pack")
    b = new_run(tmp_path, "runB", curator={"active_cap": 4})
    lines = b.import_pack(tmp_path / "pack", round_=0, probation=False)
    assert all("without probation" in l.note for l in lines) and b.probation() == {}
    assert b.add(make_skill("native", TOPICS[8]), round_=1).ok
    b.log.store.append("capsule", 1, routed_capsules("runB", "native", 1, 1, 3))
    assert b.add(make_skill("native2", TOPICS[9]), round_=1).evicted == ["native"]


def test_sweep_bank_reaches_every_arm_seed(tmp_path):
    from ratchet_ray.sweep.spec import SweepSpec, child_config, plan_jobs

    a = new_run(tmp_path, "runA")  # the sweep passes the path on; each run checks the suite
    assert a.add(make_skill("helps", TOPICS[0]), round_=0).ok
    export_pack(a.run_dir, tmp_path / "p")
    spec = SweepSpec(suite="sim", out_dir=tmp_path / "sweep", rounds=1, bank=tmp_path / "p")
    jobs, _ = plan_jobs(spec, ["default", "A4"], [42], python="py")
    for job in jobs:
        assert job.argv[job.argv.index("--bank") + 1] == str((tmp_path / "p").resolve())
    assert child_config(spec, "A4", 42).bank.pack == str((tmp_path / "p").resolve())


def test_a_pack_cannot_exempt_its_skills_from_retirement(tmp_path):
    a = new_run(tmp_path, "runA")
    assert a.add(make_skill("sticky", TOPICS[0], do_not_retire=True), round_=0).ok
    export_pack(a.run_dir, tmp_path / "pack")
    b = new_run(tmp_path, "runB", curator={"min_trials": 4})
    [line] = b.import_pack(tmp_path / "pack", round_=0)
    assert "do_not_retire dropped" in line.note and not b.get("sticky").do_not_retire
    b.log.store.append("capsule", 1, routed_capsules("runB", "sticky", 1, 0, 4))
    assert [d.action for d in b.curate(1)] == ["retire"]


def test_cli_refusals_name_the_fix(tmp_path):
    a = source_run(tmp_path)
    runner = CliRunner()
    out = runner.invoke(cli, ["--db", str(a.run_dir), "skill", "export", "-o", str(tmp_path / "p")])
    assert out.exit_code == 0, out.output  # RUN from --db
    again = runner.invoke(cli, ["skill", "export", str(a.run_dir), "-o", str(tmp_path / "p")])
    assert again.exit_code == 1 and "a pack is already there" in again.output
    none = runner.invoke(cli, ["skill", "import", str(tmp_path / "p")])
    assert none.exit_code == 2 and "--into RUN_DIR" in none.output
    (tmp_path / "t").mkdir()
    busy = runner.invoke(cli, ["sim-transfer", "--out", str(tmp_path / "t")])
    assert busy.exit_code == 2 and "exists; pass a new folder" in busy.output


def _unparsable_pack(tmp_path):
    """A pack whose manifest and hashes are intact but one skill's text is not a skill (written
    so, e.g. by hand with the hashes recomputed): only parsing it tells."""
    from ratchet_ray.bank.pack_format import pack_sha256, skill_sha256, write_pack

    a = new_run(tmp_path, "runA")
    assert a.add(make_skill("helps", TOPICS[0]), round_=0).ok
    manifest, texts = read_pack(export_pack(a.run_dir, tmp_path / "good") and tmp_path / "good")
    texts = {**texts, "helps": "id: helps\nname: [unclosed\n"}
    manifest["skills"] = [{**e, "sha256": skill_sha256(texts[e["id"]])} for e in manifest["skills"]]
    manifest["pack_sha256"] = pack_sha256(manifest["skills"])
    return write_pack(tmp_path / "bad", manifest, texts)


def test_check_pack_parses_every_skill_as_the_import_does(tmp_path):
    """Was: ``check_pack`` (the run's and ``--dry-run``'s check) read the hashes only; a skill
    that does not parse passed and the run failed at the import."""
    from ratchet_ray.bank.pack_import import check_pack

    pack = _unparsable_pack(tmp_path)
    with pytest.raises(PackError, match=r"bad: skill 'helps' is not a valid skill: .*; "
                                        "re-export the pack"):
        check_pack(pack, "mbpp")


@pytest.mark.parametrize("damage", ["manifest", "skill_text", "unparsable"])
def test_ablations_dry_run_reads_the_pack_as_the_runs_would(tmp_path, damage):
    """Was: ``ablations --dry-run --bank PACK`` printed the plans whatever PACK held; each run
    then failed at its import. Now the dry run (and the sweep before --out is written) refuses
    it on one line naming the pack and the fix."""
    from ratchet_ray.cli.ablations import main as ablations

    if damage == "unparsable":
        pack = _unparsable_pack(tmp_path)
        said = "skill 'helps' is not a valid skill"
    else:
        a = new_run(tmp_path, "runA")
        assert a.add(make_skill("helps", TOPICS[0]), round_=0).ok
        pack = export_pack(a.run_dir, tmp_path / "pack") and tmp_path / "pack"
        if damage == "manifest":
            (pack / "pack.json").write_text("{")
            said = "pack.json: unreadable manifest"
        else:
            (pack / "skills" / "helps.yaml").write_text("changed\n")
            said = "skill 'helps': its text changed since export"
    out_dir = tmp_path / "sweep"
    out = CliRunner().invoke(ablations, ["sim", "--arms", "default,A1", "--seeds", "3",
                                         "--rounds", "1", "--bank", str(pack), "--set",
                                         "bank.allow_other_suite=true", "--out",
                                         str(out_dir), "--dry-run"])
    assert out.exit_code == 2, out.output
    error = [line for line in out.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and said in error[0] and "re-export" in error[0], out.output
    assert not out_dir.exists()
