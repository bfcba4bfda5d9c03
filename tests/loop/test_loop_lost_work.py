"""Nothing is lost to a dead process: the scripted governance scenario (real Ray, actors, MBPP+
grading, evidence) with its Critic and Synthesizer dying or its backend failing on cue, checked
against an uninterrupted run of the same config.

Before the fix, a Critic batch whose actor died ``max_attempts`` times, a review whose backend
failed, or a Synthesizer that died while drafting was logged and the round was recorded anyway:
its train failures never got their verdicts (resume skips finished rounds) and the skills they
would have made were never synthesized (chaos ``actor_kill`` seed 1 found it by timing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loop_helpers import faulty_scenario_models, scenario_config
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.loop.breaker import RunStopped
from ratchet_ray.loop.driver import run_loop
from ratchet_ray.loop.rundir import RunDir

ROUNDS = 2


def facts(run_dir: Path) -> dict:
    """What must equal the reference: verdicts per train failure, pass counts, the bank."""
    with EvidenceStore(run_dir).connect() as con:
        failures = set(con.execute("SELECT round, task_id FROM capsule WHERE split = 'train' "
                                   "AND NOT passed AND coalesce(attempt, 0) = 0").fetchall())
        verdicts = dict(((r, t), n) for r, t, n in con.execute(
            "SELECT round, task_id, count(*) FROM verdict GROUP BY ALL").fetchall())
        passes = con.execute("SELECT round, split, count_if(passed) FROM capsule "
                             "GROUP BY ALL ORDER BY ALL").fetchall()
    bank = {path.stem: next(line.split(":", 1)[1].strip()
                            for line in path.read_text().splitlines()
                            if line.startswith("status:"))
            for path in sorted((run_dir / "skills").glob("*.yaml"))}
    return {"failures": failures, "verdicts": verdicts, "passes": passes, "bank": bank}


@pytest.fixture
def reference(scenario_reference) -> dict:
    """The uninterrupted run's facts (the run is shared: tests/conftest.py)."""
    return facts(scenario_reference(ROUNDS))


def assert_like_reference(got: dict, ref: dict) -> None:
    assert all(n == 1 for n in got["verdicts"].values()), got["verdicts"]
    assert set(got["verdicts"]) == got["failures"] == ref["failures"]
    assert got["verdicts"] == ref["verdicts"]
    assert got["passes"] == ref["passes"]
    assert got["bank"] == ref["bank"] and got["bank"], (got["bank"], ref["bank"])


@pytest.mark.slow
def test_dead_critic_batches_and_synthesizer_are_redone_within_the_run(ray_local, reference,
                                                                        tmp_path):
    # The Critic dies under the same round-1 batch 3 times (the pool's max_attempts: the batch
    # comes back failed), one review meets a dead backend, and the Synthesizer dies once while
    # drafting round 0's first skill: each phase runs again and the run finishes in one go.
    faults = tmp_path / "faults"
    faults.mkdir()
    models = faulty_scenario_models(faults, {"critic_dies": 3, "critic_backend": 1,
                                             "synth_dies": 1})
    run_dir = run_loop(scenario_config(tmp_path, ROUNDS), models=models, show_progress=False)
    assert sorted(p.name for p in faults.iterdir()) == [
        "critic_backend.0", "critic_dies.0", "critic_dies.1", "critic_dies.2", "synth_dies.0"]
    assert_like_reference(facts(run_dir), reference)
    log = (run_dir / "run.log").read_text()
    assert "phase critic attempt 1 of 3 failed" in log
    assert "phase synth attempt 1 of 3 failed" in log
    assert all(not s.failed_steps for s in RunDir(run_dir).summaries())


@pytest.mark.slow
def test_a_critic_backend_down_through_every_attempt_stops_the_run_and_resume_completes_it(
        ray_local, reference, tmp_path):
    faults = tmp_path / "faults"
    faults.mkdir()
    models = faulty_scenario_models(faults, {"critic_backend": -1})
    announced: list[Path] = []
    with pytest.raises(RunStopped, match=r"round 1 critic: failed 3 time\(s\).*LLMError.*"
                                         r"Connection refused"):
        run_loop(scenario_config(tmp_path, ROUNDS), models=models, show_progress=False,
                 announce=announced.append)
    run = RunDir(announced[0])
    assert [s.round for s in run.summaries()] == [0]  # round 1 is not recorded half-reviewed
    assert "round 1 critic" in (run.path / "stopped.json").read_text()

    (faults / "healed").touch()
    run_loop(None, resume=run.path, models=models, show_progress=False)
    assert [s.round for s in run.summaries()] == [0, 1]
    assert_like_reference(facts(run.path), reference)
