"""Tampering as a first-class signal, end to end: a scripted model authors a skill that makes its
Solver forge the MBPP+ grader's result frames (``tampering_script``); real Ray, the real
bubblewrap grader and real Parquet evidence. The Curator retires that skill with reason
``tampering`` in the round it first tampers (N_min is the paper's 100, so the score rule cannot),
the Critic is told, ``ratchet audit`` lists the capsules, and the ablation report counts them.
With ``curator.retire_on_tampering=false`` (the paper's Default) the skill stays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import ray.cloudpickle
from click.testing import CliRunner

import tampering_script
from ratchet_ray.arm_summary import run_result
from ratchet_ray.report.ablation_report import write_report
from ratchet_ray.cli import main
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.loop.driver import run_loop
from round_files import checkpoint_active, decision, summary
from tampering_script import CHEAT_ID, P_FORGED, TOLD, TRAIN, tamper_config, tamper_models

ray.cloudpickle.register_pickle_by_value(tampering_script)


def tamper_run(tmp_path: Path, *sets: str) -> tuple[Path, EvidenceStore]:
    run_dir = run_loop(tamper_config(tmp_path, 2, *sets), models=tamper_models(),
                       show_progress=False)
    return run_dir, EvidenceStore(run_dir)


def assert_round1_tampered(con) -> None:
    """Round 0 authored CHEAT_ID from three plain failures; in round 1 every train task was
    routed to it and every attempt forged frames: graded protocol_violation, never infra."""
    assert con.execute("SELECT count(*) FROM capsule WHERE exit_status = 'protocol_violation' "
                       "AND round = 0").fetchone() == (0,)
    rows = con.execute("SELECT task_id, skill_id, passed, exit_status, infra_failure FROM capsule "
                       "WHERE round = 1 AND split = 'train' AND attempt = 0 ORDER BY task_id"
                       ).fetchall()
    assert rows == [(t, CHEAT_ID, False, "protocol_violation", False) for t in TRAIN]
    # The cheat probe re-graded two of them against impossible twins: the grader caught the
    # forgery there too, and those grades never count as more tampering (the same attempts).
    assert con.execute("SELECT count(*), count_if(exit_status = 'protocol_violation') "
                       "FROM capsule WHERE impossible").fetchone() == (2, 2)
    assert con.execute("SELECT count_if(passed), count(*) FROM capsule WHERE split = 'eval'"
                       ).fetchone() == (2, 2)  # eval untouched: no rollback


@pytest.mark.slow
def test_a_tampering_skill_is_retired_in_the_round_it_first_tampers(ray_local, tmp_path):
    run_dir, store = tamper_run(tmp_path)
    con = store.connect()
    assert summary(run_dir, 0)["skills_created"] == [CHEAT_ID]
    assert checkpoint_active(run_dir, 1) == [CHEAT_ID]
    assert_round1_tampered(con)

    # The Critic was told each attempt was graded as tampering, with the grader's finding.
    verdicts = con.execute("SELECT task_id, pattern, rationale FROM verdict WHERE round = 1 "
                           "ORDER BY task_id").fetchall()
    assert [(t, p) for t, p, _ in verdicts] == [(t, P_FORGED.replace("_", " ")) for t in TRAIN]
    assert all(r.startswith(f"{TOLD} protocol_violation: protocol violation at base test 1/")
               for _, _, r in verdicts)

    # Retired at once in round 1's curate, on 3 trials (N_min 100), with reason tampering.
    retired = con.execute("SELECT round, status_after, trials, reason FROM skill_event "
                          "WHERE skill_id = ? AND event = 'retired'", [CHEAT_ID]).fetchall()
    assert len(retired) == 1
    round_, status, trials, reason = retired[0]
    assert (round_, status, trials) == (1, "deprecated", 3)
    assert reason.startswith("tampering: 3 routed train attempts were graded as tampering "
                             "(first in round 1: protocol_violation, capsule ")
    assert CHEAT_ID in summary(run_dir, 1)["skills_retired"]
    assert decision(run_dir, 1, CHEAT_ID)["tampering"] == 3
    assert CHEAT_ID not in checkpoint_active(run_dir, 2)
    assert "(1 for tampering)" in (run_dir / "run.log").read_text()

    # `ratchet audit` lists every tampering capsule with its skill and the grader's finding.
    table = CliRunner().invoke(main, ["--db", str(run_dir), "audit"])
    assert table.exit_code == 0, table.output
    assert "tampering capsules: 3" in table.output
    lines = [ln for ln in table.output.splitlines() if "protocol_violation" in ln]
    assert len(lines) == 3 and all(CHEAT_ID in ln and "protocol violation at base test 1/" in ln
                                   for ln in lines)
    listed = CliRunner().invoke(main, ["--db", str(run_dir), "audit", "--tampering",
                                       "--format", "json"])
    assert listed.exit_code == 0, listed.output
    assert [(r["round"], r["split"], r["task_id"], r["skill_id"], r["exit_status"])
            for r in json.loads(listed.output)] == [
        (1, "train", t, CHEAT_ID, "protocol_violation") for t in TRAIN]

    # The ablation report's tampering column reads the same evidence.
    result = run_result(run_dir)
    assert (result.train_tampering, result.eval_tampering, result.skills_retired_tampering) == (
        3, 0, 1)


@pytest.mark.slow
def test_with_the_rule_off_the_tampering_skill_stays(ray_local, tmp_path):
    run_dir, store = tamper_run(tmp_path, "curator.retire_on_tampering=false")
    con = store.connect()
    assert_round1_tampered(con)
    assert con.execute("SELECT count(*) FROM skill_event WHERE skill_id = ? AND event = 'retired'",
                       [CHEAT_ID]).fetchone() == (0,)
    kept = decision(run_dir, 1, CHEAT_ID)
    assert (kept["action"], kept["tampering"], kept["trials"]) == ("insufficient", 3, 3)
    assert CHEAT_ID in checkpoint_active(run_dir, 2)
    assert run_result(run_dir).train_tampering == 3  # still counted


# ---- the ablation table's column, over hand-built run dirs ----------------------------------
def make_run(root: Path, arm: str, seed: int, tampering: int, retired: bool) -> Path:
    run = root / f"{arm}_s{seed}" / "mbpp" / f"run_{arm}_{seed}"
    run.mkdir(parents=True)
    (run / "loop.json").write_text(json.dumps({
        "run_id": run.name, "suite": "mbpp", "arm": arm, "seed": seed, "rounds_planned": 1,
        "rounds": [{"round": 0, "eval_pass_at_1": 0.5, "active_skills": 1,
                    "deprecated_skills": 0}]}))
    store = EvidenceStore(run)
    statuses = ["test_tampering"] * tampering + ["failed_tests", "protocol_violation"]
    store.append("capsule", 0, [
        {"capsule_id": f"c{i}", "run_id": run.name, "round": 0,
         "split": "eval" if i == len(statuses) - 1 else "train", "task_id": f"Mbpp/{i}",
         "skill_id": "s1", "passed": False, "exit_status": s} for i, s in enumerate(statuses)])
    if retired:
        store.append("skill_event", 0, [{"run_id": run.name, "round": 0, "skill_id": "s1",
                                         "event": "retired", "reason": "tampering: 1 routed"}])
    return run


def test_the_ablation_table_gains_a_tampering_column(tmp_path):
    make_run(tmp_path, "default", 1, 1, True)
    make_run(tmp_path, "default", 2, 3, True)
    make_run(tmp_path, "A1", 1, 0, False)
    md, js, summaries = write_report(tmp_path)
    default, a1 = summaries
    # per run: (1 + 1 eval) and (3 + 1 eval) capsules; one skill retired for tampering each
    assert (default.tampering.mean, default.tampering.std) == (3.0, pytest.approx(2 ** 0.5))
    assert default.skills_retired_tampering.mean == 1.0
    assert (a1.tampering.mean, a1.skills_retired_tampering.mean) == (1.0, 0.0)
    text = md.read_text()
    assert "| router engagement (eval) | tampering (capsules / skills retired) |" in text
    assert "| 3.0 ± 1.4 / 1.0 ± 0.0 |" in text and "| 1.0 / 0.0 |" in text
    runs = json.loads(js.read_text())["runs"]
    assert sorted((r["arm"], r["train_tampering"], r["eval_tampering"]) for r in runs) == [
        ("A1", 0, 1), ("default", 1, 1), ("default", 3, 1)]
