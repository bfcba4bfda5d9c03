"""A scripted LLM drives the real actors, real Ray, real MBPP+ grading and real evidence through
synthesis, a dedup re-prompt, cap eviction, retirement and a rollback (see ``loop_helpers.Scenario``
for the script). Assertions read the per-round evidence, summaries and bank checkpoints, so each
round's state is checked as it was left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from loop_helpers import (BAD_ID, GENERIC_ID, GOOD_ID, GROUP1, GROUP2, scenario_config,
                          scenario_models)
from ratchet_ray.run_config.files import load_config
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.loop.driver import run_loop
from round_files import checkpoint_active, summary


def scenario_run(tmp_path: Path, rounds: int = 4) -> tuple[Path, EvidenceStore]:
    run_dir = run_loop(scenario_config(tmp_path, rounds), models=scenario_models(),
                       show_progress=False)
    return run_dir, EvidenceStore(run_dir)


def events(store: EvidenceStore, round_: int) -> list[tuple[str, str]]:
    con = store.connect()
    rows = con.execute("SELECT event, skill_id FROM skill_event WHERE round = ? "
                       "ORDER BY created_at", [round_]).fetchall()
    return [(e, s) for e, s in rows]


@pytest.mark.slow
def test_scripted_loop_walks_through_every_governance_mechanism(ray_local, tmp_path):
    run_dir, store = scenario_run(tmp_path)
    con = store.connect()
    assert run_dir.name.startswith("mbpp_r4_t7_e4_") and run_dir.name.endswith("_scenario")

    # Every round: each task graded exactly once per split, and usage recorded per role.
    per_round = con.execute("SELECT round, split, count(*), count(DISTINCT task_id) FROM capsule "
                            "GROUP BY ALL ORDER BY ALL").fetchall()
    assert per_round == [(r, s, n, n) for r in range(4) for s, n in (("eval", 4), ("train", 7))]
    roles = {r for (r,) in con.execute("SELECT DISTINCT role FROM llm_call").fetchall()}
    assert roles == {"router", "solver", "critic", "synthesizer", "metasynth"}
    assert checkpoint_active(run_dir, 0) == []

    # Round 0: no skills; 7 train failures -> 7 verdicts -> two clusters. The second cluster's
    # first draft duplicates the first skill, so it is re-prompted and comes back specific.
    s0 = summary(run_dir, 0)
    assert (s0["eval"]["resolved"], s0["train"]["resolved"], s0["verdicts"]) == (4, 0, 7)
    assert s0["skills_created"] == [GENERIC_ID, GOOD_ID]
    rejected = con.execute("SELECT reason FROM skill_event WHERE round = 0 AND event = 'rejected'"
                           ).fetchall()
    assert len(rejected) == 1 and "duplicate" in rejected[0][0] and GENERIC_ID in rejected[0][0]
    assert events(store, 0).count(("added", GOOD_ID)) == 1
    assert checkpoint_active(run_dir, 1) == sorted([GENERIC_ID, GOOD_ID])

    # Round 1: group1 is routed to the generic skill and fails, group2 to GOOD and passes; the
    # new cluster's skill needs room: the cap (2) evicts the lowest-contribution skill.
    train1 = dict(con.execute("SELECT task_id, skill_id FROM capsule WHERE round = 1 AND "
                              "split = 'train'").fetchall())
    assert {train1[t] for t in GROUP1} == {GENERIC_ID} and {train1[t] for t in GROUP2} == {GOOD_ID}
    s1 = summary(run_dir, 1)
    assert (s1["eval"]["resolved"], s1["train"]["resolved"]) == (4, 3)
    assert s1["skills_created"] == [BAD_ID] and s1["skills_evicted"] == [GENERIC_ID]
    assert ("evicted", GENERIC_ID) in events(store, 1)
    assert checkpoint_active(run_dir, 2) == sorted([BAD_ID, GOOD_ID])
    # Meta-synth is due after round 1 (every 2 rounds): a new meta-skill replaces the default.
    meta = s1["metaskill_created"]
    assert meta and ("meta_added", meta) in events(store, 1)
    assert sum(e == "meta_retired" for e, _ in events(store, 1)) == 1

    # Round 2: BAD takes group1 and fails 4 of 4 trials -> contribution -1 -> retired.
    s2 = summary(run_dir, 2)
    assert s2["skills_created"] == [] and s2["skills_retired"] == [BAD_ID]
    retired = con.execute("SELECT contribution, trials FROM skill_event WHERE event = 'retired'"
                          ).fetchall()
    assert retired == [(-1.0, 4)]
    assert checkpoint_active(run_dir, 3) == [GOOD_ID]

    # Round 3: GOOD alone is routed to the eval tasks, eval pass@1 falls 1.0 -> 0.0, the gate
    # fires and restores round 0's (empty) bank; synth and curate are skipped.
    s3 = summary(run_dir, 3)
    assert s3["eval"]["resolved"] == 0 and s3["rollback_fired"] and s3["restored_round"] == 0
    assert ("restored", GOOD_ID) in events(store, 3)
    assert ("meta_restored", meta) in events(store, 3)  # round 0's meta-skill is back
    assert s3["metaskill_created"] is None  # due after round 3, but skipped by the rollback
    assert not (run_dir / "round_03" / "synth_skills.json").exists()
    assert not (run_dir / "round_03" / "curate.json").exists()
    assert checkpoint_active(run_dir, 4) == []
    statuses = {p.stem: yaml.safe_load(p.read_text())["status"]
                for p in (run_dir / "skills").glob("*.yaml")}
    assert statuses == {GENERIC_ID: "deprecated", GOOD_ID: "deprecated", BAD_ID: "deprecated"}

    # Run-level records: loop.json rows, round evidence rows, config round-trip.
    loop = json.loads((run_dir / "loop.json").read_text())
    assert [r["eval_pass_at_1"] for r in loop["rounds"]] == [1.0, 1.0, 1.0, 0.0]
    assert con.execute("SELECT count(*), count_if(rollback_fired) FROM round").fetchone() == (4, 1)
    assert load_config([run_dir / "config.yaml"]).curator.active_cap == 2
    assert "round 3: rollback" in (run_dir / "run.log").read_text()
