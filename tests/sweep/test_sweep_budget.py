"""The sweep's one budget: it reaches every job and is kept by a rerun, the shared ledger's
arithmetic over every run of the scope, and a spent budget's cause naming its own way on."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fake_jobs import FakeJobClient
from ratchet_ray.sweep.jobs import run_ray_jobs
from ratchet_ray.sweep.folder import check_sweep_file, with_recorded_budget
from ratchet_ray.sweep.spec import Job, SweepError, SweepSpec, plan_jobs, split_sets
from sweep_helpers import RERUN, leave_run


def test_the_sweep_budget_reaches_every_job_and_is_kept_by_a_rerun(tmp_path: Path):
    shared, budget = split_sets(["curator.active_cap=7", "budget.max_tokens=900"])
    assert (shared, budget) == (("curator.active_cap=7",), ("budget.max_tokens=900",))
    for reserved in ("budget.scope=x", "llm.limiter_scope=x"):
        with pytest.raises(SweepError, match="the sweep sets those per arm and seed"):
            split_sets([reserved])
    spec = SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=2, n_train=2, n_eval=2,
                     sets=shared, budget=budget)
    assert spec.scope.startswith("sweep_") and spec.scope == SweepSpec(
        suite="sim", out_dir=tmp_path / "." ).scope != SweepSpec(suite="mbpp",
                                                                 out_dir=tmp_path / "x").scope
    partial = leave_run(spec, "A1_s42", 1)
    jobs, _ = plan_jobs(spec, ["A1"], [42, 7], python="py")
    resumed, new = jobs
    assert resumed.argv == ["py", "-m", "jobs.skill_loop", "--resume", str(partial),
                            "--set", f"budget.scope={spec.scope}",
                            "--set", "budget.max_tokens=900", "--quiet"]
    assert resumed.run_dir == partial
    flags = [new.argv[i + 1] for i, a in enumerate(new.argv) if a == "--set"]
    assert flags[:4] == ["curator.active_cap=7", f"budget.scope={spec.scope}",
                         "budget.max_tokens=900", f"llm.limiter_scope={spec.scope}"]
    # The first invocation records the budget; a rerun without one keeps it, with one replaces
    # it; other flags must stay the same.
    check_sweep_file(spec)
    again = with_recorded_budget(SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=2, n_train=2,
                                           n_eval=2, sets=shared))
    assert again.budget == ("budget.max_tokens=900",)
    raised = SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=2, n_train=2, n_eval=2,
                       sets=shared, budget=("budget.max_tokens=5000",))
    check_sweep_file(raised)  # a budget change is allowed
    assert with_recorded_budget(again.__class__(suite="mbpp", out_dir=tmp_path, rounds=2,
                                                n_train=2, n_eval=2, sets=shared)).budget == (
        "budget.max_tokens=5000",)
    with pytest.raises(SweepError, match=r"only --set budget\.\* may change"):
        check_sweep_file(SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=3, n_train=2,
                                   n_eval=2, sets=shared))


class Ledger:
    """The ledger actor's class in-process: what ``SharedBudget`` calls remotely."""

    def __init__(self):
        from actors.budget_ledger import BudgetLedgerProcess

        self.process = BudgetLedgerProcess()

    def report(self, key, tokens, cost_usd):
        return self.process.seed({key: (tokens, cost_usd)})  # as SharedBudget.report does


def test_a_shared_budget_limits_the_sum_over_every_run_of_the_scope():
    from ratchet_ray.settings.schema import BudgetSettings
    from ratchet_ray.loop.budget import BudgetExhausted, RunBudget

    ledger = Ledger()
    ledger.process.seed({"/sweep/runs/finished": (400, 0.0)})  # an arm that ran before
    settings = BudgetSettings(max_tokens=1000, scope="sweep_x")
    a = RunBudget(settings, 100, 0.0, "/sweep/runs/a", ledger)
    b = RunBudget(settings, 0, 0.0, "/sweep/runs/b", ledger)
    a._report(), b._report()
    a.charge(200, 0.0)  # a: 300 of its own; the scope: 400 + 300 + 0
    assert a.spent == (700, 0.0) and a.exhausted is None
    b.charge_rows([{"input_tokens": 200, "output_tokens": 100, "cost_usd": 0.0}])
    assert b.exhausted == "max_tokens" and b.tokens == 300  # its own spend stays its own
    a.charge(0, 0.0)  # nothing new to report: a still sees the last total it was told
    assert a.spent == (700, 0.0)
    a.charge(1, 0.0)
    assert a.exhausted == "max_tokens" and a.describe() == "sweep tokens 1001/1000, $0.0000"
    a.charge(-1, 0.0)
    a._report()  # a repeated absolute report counts once
    assert a.spent == (1000, 0.0)
    error = b.error("before round 2 train")
    assert isinstance(error, BudgetExhausted) and error.details["scope"] == "sweep_x"
    text = str(error)
    assert "budget scope 'sweep_x'" in text and "1000 tokens of budget.max_tokens 1000" in text
    assert "rerun the sweep's command with --set budget.max_tokens=" in text
    own = RunBudget(BudgetSettings(max_tokens=1000), 999, 0.0, "/r")
    assert own.exhausted is None and own.describe() == "tokens 999/1000, $0.0000"


def test_a_budget_stop_keeps_its_own_way_on_and_gets_no_plain_rerun(tmp_path):
    """A sweep's spent budget says to rerun the sweep with a higher limit; the plain rerun
    appended to other causes would stop at once again."""
    said = ("budget exhausted before round 1 train: the runs of budget scope 's' (this sweep) "
            "spent 10 tokens of budget.max_tokens 10 (...). Continue with: rerun the sweep's "
            "command with --set budget.max_tokens=<a higher limit> (it resumes every stopped "
            "arm-seed)")
    results = tmp_path / "runs" / "A1_s42"
    record = json.dumps({"cause": said, "kind": "BudgetExhausted"})
    child = (f"import pathlib; d = pathlib.Path({str(results)!r}) / 'mbpp' / 'r1'; "
             f"d.mkdir(parents=True); (d / 'stopped.json').write_text({record!r}); "
             "raise SystemExit(1)")
    job = Job("A1_s42", "new", [sys.executable, "-c", child], tmp_path / "logs" / "A1.log",
              results)
    (outcome,) = run_ray_jobs(FakeJobClient(), [job], 1, {}, tmp_path, scope="s", rerun=RERUN,
                              poll_s=0.05)
    assert outcome.budget and outcome.cause == said
