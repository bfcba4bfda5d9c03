"""The ``records`` example suite (examples/custom_task) on the real loop: real local Ray, real
actors and evidence, the scripted model of ``records_script.py``. The suite is named only in the
config's ``suite_plugins``, so every Ray worker loads it from that path itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import ray.cloudpickle

import records_script
from fakes import HashEmbedder, ScriptedLLM
from ratchet_ray.run_config.files import load_config
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.loop.driver import run_loop
from ratchet_ray.loop.runtime import Models

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "custom_task"

ray.cloudpickle.register_pickle_by_value(records_script)


@pytest.mark.slow
def test_records_suite_runs_two_rounds_and_learns_a_skill(ray_local, tmp_path):
    config = load_config([], [
        f"results_dir={tmp_path / 'results'}", "suite=records",
        f"suite_plugins=[{EXAMPLE / 'records_suite.py'}]", "rounds=2", "n_train=6", "n_eval=4",
        "workers.solvers=1", "workers.graders=1", "tag=custom"])
    assert config.meta.default_file == str(EXAMPLE / "metaskill.md")
    models = Models(llm=ScriptedLLM(records_script.RecordsScript(EXAMPLE / "records.jsonl")),
                    embedder=HashEmbedder())
    run_dir = run_loop(config, models=models, show_progress=False)
    assert run_dir.name.startswith("records_r2_t6_e4_")

    con = EvidenceStore(run_dir).connect()
    rows = con.execute("SELECT round, split, count(*), sum(passed::INT), count(DISTINCT task_id) "
                       "FROM capsule GROUP BY ALL ORDER BY ALL").fetchall()
    # Round 0: no skill, every value stays a string, all fail; round 1 routes the new skill.
    assert rows == [(0, "eval", 4, 0, 4), (0, "train", 6, 0, 6),
                    (1, "eval", 4, 4, 4), (1, "train", 6, 6, 6)]
    statuses = dict(con.execute("SELECT round, list(DISTINCT exit_status) FROM capsule "
                                "GROUP BY round").fetchall())
    assert statuses == {0: ["wrong_record"], 1: ["ok"]}
    routed = {s for (s,) in con.execute("SELECT DISTINCT skill_id FROM capsule WHERE round = 1")
              .fetchall()}
    assert routed == {records_script.SKILL_ID}
    output = con.execute("SELECT output FROM capsule WHERE round = 1 LIMIT 1").fetchone()[0]
    assert isinstance(json.loads(output), list)  # the suite's own output kind, parsed JSON
    assert con.execute("SELECT count(*) FROM verdict WHERE round = 0 AND pattern = ?",
                       [records_script.PATTERN.replace("_", " ")]).fetchone()[0] == 6
    events = con.execute("SELECT event, skill_id FROM skill_event ORDER BY created_at").fetchall()
    assert ("meta_added", "default_records") in events  # the suite's registered prior
    assert ("added", records_script.SKILL_ID) in events
    roles = {r for (r,) in con.execute("SELECT DISTINCT role FROM llm_call").fetchall()}
    assert {"solver", "router", "critic", "synthesizer"} <= roles
