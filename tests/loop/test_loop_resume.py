"""Kill the driver process mid-round (SIGKILL), resume the run: same totals as an uninterrupted
run, no capsule lost or duplicated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import ray

from actors.skill_bank import actor_name
from loop_helpers import scenario_config, scenario_models
from waiting import wait_for
from ratchet_ray.run_config.files import dump_config
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.loop.driver import run_loop
from ratchet_ray.loop.rundir import RunDir

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 2


def totals(run_dir: Path) -> dict:
    """Everything that must match between an uninterrupted and a resumed run."""
    con = EvidenceStore(run_dir).connect()
    run = RunDir(run_dir)
    return {
        "capsules": con.execute("SELECT round, split, count(*), count(DISTINCT capsule_id), "
                                "count_if(passed) FROM capsule GROUP BY ALL ORDER BY ALL"
                                ).fetchall(),
        "routes": con.execute("SELECT round, task_id, skill_id FROM capsule ORDER BY ALL"
                              ).fetchall(),
        "verdicts": con.execute("SELECT round, count(*), count(DISTINCT capsule_id) FROM verdict "
                                "GROUP BY ALL ORDER BY ALL").fetchall(),
        "rounds": con.execute("SELECT round, eval_resolved, train_resolved, rollback_fired "
                              "FROM round ORDER BY round").fetchall(),
        "summaries": [s.model_dump(include={"round", "eval", "train", "verdicts",
                                            "skills_created", "skills_evicted", "skills_retired",
                                            "rollback_fired", "active_skills",
                                            "deprecated_skills"}) for s in run.summaries()],
        "skills": sorted(p.name for p in (run_dir / "skills").glob("*.yaml")),
    }


@pytest.mark.slow
def test_driver_killed_mid_round_then_resumed_matches_an_uninterrupted_run(ray_local,
                                                                          scenario_reference,
                                                                          tmp_path):
    reference = totals(scenario_reference(ROUNDS))

    config_file = tmp_path / "killed.yaml"
    dump_config(scenario_config(tmp_path / "killed", ROUNDS), config_file)
    env = dict(os.environ, RAY_ADDRESS=ray.get_runtime_context().gcs_address)
    driver = subprocess.Popen([sys.executable, "tests/loop/scenario_driver.py", str(config_file)],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        run_dir = Path(driver.stdout.readline().strip())
        round1 = run_dir / "evidence" / "capsule" / "round=1"
        # Round 1's first capsule part is on disk: the driver is inside round 1.
        wait_for(lambda: any(round1.glob("part-*.parquet")), 600, "round 1's first capsules")
        os.kill(driver.pid, signal.SIGKILL)
    finally:
        driver.kill()
        driver.wait(timeout=60)
    assert driver.returncode == -signal.SIGKILL
    assert not (run_dir / "round_01" / "summary.json").exists()  # killed mid-round 1
    partial = EvidenceStore(run_dir).connect().execute(
        "SELECT count(*) FROM capsule WHERE round = 1").fetchone()[0]
    assert 0 < partial < 11

    def bank_gone() -> bool:  # the dead driver's SkillBank actor is reaped by Ray
        try:
            ray.get_actor(actor_name(run_dir.name))
        except ValueError:
            return True
        return False

    wait_for(bank_gone, 120, "the killed driver's SkillBank actor to go away")
    resumed = run_loop(None, resume=run_dir, models=scenario_models(), show_progress=False)
    assert resumed == run_dir
    assert totals(run_dir) == reference
    assert "resuming with the rest" in (run_dir / "run.log").read_text()


@pytest.mark.slow  # two sim runs on the local Ray (about 25 s)
def test_resuming_a_finished_run_mends_a_cut_loop_json(ray_local, tmp_path):
    """A resume with no round left ran nothing and wrote nothing: a loop.json cut short (a copy
    cut off, a full disk) stayed cut, and plot, report and export refused the run."""
    from ratchet_ray.run_config.files import layered_files, load_config

    config = load_config(layered_files("sim"), [f"results_dir={tmp_path}", "rounds=1",
                                                "n_train=4", "n_eval=2"])
    run_dir = run_loop(config, show_progress=False)
    whole = (run_dir / "loop.json").read_text()
    (run_dir / "loop.json").write_text(whole[:100])
    assert run_loop(None, resume=run_dir, show_progress=False) == run_dir
    assert (run_dir / "loop.json").read_text() == whole
