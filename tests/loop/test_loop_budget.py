"""Budget: a run stops cleanly when its token or cost budget is spent, records why, and
``--resume`` with a higher budget finishes it with nothing lost or doubled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loop_helpers import scenario_config, scenario_models
from ratchet_ray.settings.schema import BudgetSettings
from ratchet_ray.run_config.files import ConfigError, dump_config, load_config
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.loop.budget import BudgetExhausted, RunBudget, resume_settings
from ratchet_ray.loop.driver import run_loop
from ratchet_ray.loop.stops import STOPPED_FILE
from ratchet_ray.loop.progress import LoopProgress
from test_loop_resume import totals

ROUNDS = 2


# ---- the budget itself (no Ray) -----------------------------------------------------------------
def test_budget_trips_at_either_limit_and_names_the_fix():
    budget = RunBudget(BudgetSettings(max_tokens=100, max_cost_usd=1.0), run_dir="/runs/r1")
    budget.charge(99, 0.5)
    assert budget.exhausted is None
    budget.check("before round 0 eval")  # below both limits: nothing happens
    budget.charge_rows([{"input_tokens": 1, "output_tokens": 0, "cost_usd": 0.0}])
    assert budget.exhausted == "max_tokens"
    with pytest.raises(BudgetExhausted) as caught:
        budget.check("before round 3 train")
    text = str(caught.value)
    assert "before round 3 train" in text and "budget.max_tokens 100" in text
    assert "--resume /runs/r1 --set budget.max_tokens=" in text
    assert caught.value.details == {"limit": "max_tokens", "tokens": 100, "cost_usd": 0.5,
                                    "max_tokens": 100, "max_cost_usd": 1.0}

    dollars = RunBudget(BudgetSettings(max_cost_usd=0.25))
    dollars.charge(10_000_000, 0.2499)
    assert dollars.exhausted is None
    dollars.charge(1, 0.0001)
    assert dollars.exhausted == "max_cost_usd"
    assert "budget.max_cost_usd=" in str(dollars.error("in round 0 eval"))
    assert RunBudget(BudgetSettings()).exhausted is None  # no limit, never spent


def test_budget_settings_validate_and_progress_shows_the_limits(tmp_path):
    config = load_config([], ["budget.max_cost_usd=2.5", "budget.max_tokens=1000"])
    assert (config.budget.max_cost_usd, config.budget.max_tokens) == (2.5, 1000)
    with pytest.raises(ConfigError, match="budget.max_tokens"):
        load_config([], ["budget.max_tokens=-1"])
    budget = RunBudget(config.budget, tokens=120, cost_usd=0.5)
    progress = LoopProgress(3, enabled=False, budget=budget)
    assert progress.usage_text() == "tokens 120/1000, $0.5000/$2.5000"
    assert LoopProgress(3, enabled=False).usage_text() == "tokens 0, $0.0000"


def test_resume_may_raise_the_budget_and_nothing_else(tmp_path):
    path = tmp_path / "config.yaml"
    dump_config(load_config([], ["budget.max_tokens=10", "rounds=3"]), path)
    raised = resume_settings(path, ["budget.max_tokens=500"])[0]
    assert (raised.budget.max_tokens, raised.rounds) == (500, 3)
    with pytest.raises(ConfigError, match="only budget"):
        resume_settings(path, ["rounds=5"])[0]


def test_cli_resume_accepts_only_budget_overrides(tmp_path):
    from ratchet_ray.cli.run import run

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    result = CliRunner().invoke(run, ["--resume", str(run_dir), "--set", "llm.model=other"])
    assert result.exit_code == 2
    assert "only --set budget" in result.output


# ---- a real run on local Ray ------------------------------------------------------------------
def spend(run_dir: Path, where: str = "true") -> int:
    with EvidenceStore(run_dir).connect() as con:
        return con.execute(f"SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM llm_call "
                           f"WHERE {where}").fetchone()[0]


@pytest.mark.slow
def test_budget_stop_mid_round_then_resume_with_more_matches_an_uninterrupted_run(
        ray_local, scenario_reference, tmp_path):
    ref_dir = scenario_reference(ROUNDS)
    reference = totals(ref_dir)
    # Stop inside round 1's train split: round 0 and round 1's eval fit, one more train task
    # does not.
    con = EvidenceStore(ref_dir).connect()
    eval1, train1 = (con.execute(
        "SELECT sum(input_tokens + output_tokens) FROM capsule WHERE round = 1 AND split = ?",
        [split]).fetchone()[0] for split in ("eval", "train"))
    con.close()
    before_train = spend(ref_dir, "round = 0") + eval1 + train1 // 3
    config = scenario_config(tmp_path / "budget", ROUNDS)
    config.budget.max_tokens = before_train

    with pytest.raises(BudgetExhausted) as caught:
        run_loop(config, models=scenario_models(), show_progress=False)
    run_dir = next((tmp_path / "budget" / "results" / "mbpp").iterdir())
    assert f"--resume {run_dir} --set budget.max_tokens=" in str(caught.value)
    assert "in round 1 train" in str(caught.value)  # stopped inside the split, not after it
    con = EvidenceStore(run_dir).connect()
    train_done = con.execute("SELECT count(*) FROM capsule WHERE round = 1 AND split = 'train'"
                             ).fetchone()[0]
    con.close()
    assert 0 < train_done < 7  # the tasks in flight were recorded, the rest never started
    stopped = json.loads((run_dir / STOPPED_FILE).read_text())
    assert stopped["kind"] == "BudgetExhausted"
    assert stopped["budget"]["limit"] == "max_tokens"
    assert stopped["budget"]["tokens"] >= before_train == stopped["budget"]["max_tokens"]
    loop = json.loads((run_dir / "loop.json").read_text())
    assert loop["stopped"]["kind"] == "BudgetExhausted"
    assert [r["round"] for r in loop["rounds"]] == [0]  # round 1 is not recorded
    assert not (run_dir / "round_01" / "summary.json").exists()
    assert spend(run_dir) == stopped["budget"]["tokens"]  # every call that was made is booked

    # The same budget again: stops at once, before starting any new work.
    with pytest.raises(BudgetExhausted, match="before round 1"):
        run_loop(None, resume=run_dir, models=scenario_models(), show_progress=False)

    resumed = run_loop(None, resume=run_dir, models=scenario_models(), show_progress=False,
                       resume_sets=["budget.max_tokens=100000000"])
    assert resumed == run_dir
    assert totals(run_dir) == reference  # each (task, split, round) once; same bank, same pass@1
    assert spend(run_dir) == spend(ref_dir)  # no call made twice
    assert load_config([run_dir / "config.yaml"]).budget.max_tokens == 100_000_000
    assert not (run_dir / STOPPED_FILE).exists()
    assert "stopped" not in json.loads((run_dir / "loop.json").read_text())
