"""The sweep's planning (skip / resume / new, validation, the sweep's budget and scope), the
shared budget's arithmetic, and its Ray-jobs runner against ``fake_jobs.FakeJobClient`` (real
subprocesses as the jobs: the parallel limit holds, a failing job does not stop the others, an
interrupt stops every job, a job still running is followed rather than submitted twice)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
from pathlib import Path

import pytest

from ratchet_ray.run_config.files import load_config
from fake_jobs import FakeJobClient
from ratchet_ray.loop.rundir import RunDir
from ratchet_ray.sweep.spec import (Job, SweepError, SweepSpec, check_sweep_file, cpus_per_run,
                                    plan_jobs, split_sets, with_recorded_budget)
from ratchet_ray.sweep.jobs import (forwarded_env, live_jobs, read_jobs, recorded_status,
                                    run_ray_jobs, stop_recorded_jobs, submission)
from ratchet_ray.types import RoundSummary
from waiting import wait_for


def leave_run(spec: SweepSpec, name: str, rounds_done: int) -> Path:
    """A run dir as a child of ``name`` leaves it, with ``rounds_done`` finished rounds."""
    config = load_config([], [f"results_dir={spec.out_dir / 'runs' / name}",
                              f"rounds={spec.rounds}", f"tag={name}"])
    run = RunDir.create(config, ["Mbpp/2"], ["Mbpp/3"])
    for r in range(rounds_done):
        run.write_summary(RoundSummary(round=r))
    return run.path


def test_plan_skips_finished_resumes_partial_and_starts_the_rest(tmp_path: Path):
    spec = SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=2, n_train=2, n_eval=2,
                     sets=("curator.active_cap=7",))
    finished = leave_run(spec, "default_s42", 2)
    partial = leave_run(spec, "A1_s42", 1)
    jobs, skipped = plan_jobs(spec, ["default", "A1", "A4"], [42, 7], python="py")
    assert [(o.name, o.action) for o in skipped] == [("default_s42", "skipped")]
    assert str(finished) in skipped[0].message
    by_name = {j.name: j for j in jobs}
    assert {n: j.action for n, j in by_name.items()} == {
        "default_s7": "new", "A1_s42": "resume", "A1_s7": "new", "A4_s42": "new",
        "A4_s7": "new"}
    assert by_name["A1_s42"].argv == ["py", "-m", "jobs.skill_loop", "--resume", str(partial),
                                      "--set", f"budget.scope={spec.scope}", "--quiet"]
    argv = by_name["A4_s7"].argv
    assert argv[:4] == ["py", "-m", "jobs.skill_loop", "mbpp"]
    assert argv[argv.index("--config") + 1].endswith("configs/ablations/A4.yaml")
    assert argv[argv.index("--seed") + 1] == "7" and argv[argv.index("--tag") + 1] == "A4_s7"
    assert argv[-3:] == ["--set", f"results_dir={tmp_path.resolve() / 'runs' / 'A4_s7'}",
                         "--quiet"]
    assert ["--set", "curator.active_cap=7"] == argv[argv.index("curator.active_cap=7") - 1:
                                                     argv.index("curator.active_cap=7") + 1]
    assert "--config" not in by_name["default_s7"].argv  # the Default adds no layer
    assert by_name["A4_s7"].log == tmp_path / "logs" / "A4_s7.log"


@pytest.mark.parametrize("arms, sets, message", [
    (["A99"], (), "known arms: default, A1"),
    (["A1"], ("seed=1",), "the sweep sets those per arm and seed"),
    (["A1"], ("results_dir=/x",), "the sweep sets those per arm and seed"),
    (["A1"], ("curator.no_such_knob=1",), "arm A1, seed 42"),
])
def test_plan_refuses_bad_arms_and_overrides(tmp_path: Path, arms, sets, message):
    spec = SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=1, sets=sets)
    with pytest.raises(SweepError, match=message):
        plan_jobs(spec, arms, [42])


def test_rerun_with_other_flags_is_refused(tmp_path: Path):
    check_sweep_file(SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=3))
    check_sweep_file(SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=3))  # same flags: fine
    with pytest.raises(SweepError, match="rerun with those flags to resume it .only --set budget.. may change., or give a new"):
        check_sweep_file(SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=5))


def test_sweep_json_records_the_command_that_continues_the_sweep_and_a_rerun_is_told_it(tmp_path):
    check_sweep_file(SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=3), RERUN)
    assert json.loads((tmp_path / "sweep.json").read_text())["command"] == RERUN
    with pytest.raises(SweepError) as raised:
        check_sweep_file(SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=5), RERUN)
    assert f"rerun with those flags to resume it (it last ran as `{RERUN}`)" in str(raised.value)
    (tmp_path / "sweep.json").write_text("[1, 2")  # a hand edit gone wrong
    for call in (lambda: check_sweep_file(SweepSpec(suite="mbpp", out_dir=tmp_path)),
                 lambda: with_recorded_budget(SweepSpec(suite="mbpp", out_dir=tmp_path))):
        with pytest.raises(SweepError, match=r"sweep\.json is unreadable .*; move it away and "
                                             r"rerun the sweep's command"):
            call()


def test_cpus_per_run_follows_the_worker_counts():
    assert cpus_per_run(load_config()) == pytest.approx(0.25 + 2 * 0.25 + 2 * 0.5 + 0.25)
    assert cpus_per_run(load_config([], ["workers.solvers=4", "workers.graders=1"])) == \
        pytest.approx(0.25 + 4 * 0.25 + 0.5 + 0.25)




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
        return self.process.report(key, tokens, cost_usd)


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


# ---- the Ray-jobs runner, on FakeJobClient ----------------------------------------------------
CHILD = """
import signal, sys, time
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # as jobs.skill_loop does
    signal.signal(signal.SIGINT, signal.default_int_handler)
print("start", time.time(), flush=True)
try:
    time.sleep(float(sys.argv[1]))
except KeyboardInterrupt:
    print("interrupted: released the run", flush=True)
    sys.exit(130)
print("end", time.time(), flush=True)
if sys.argv[2] != "0":
    print("boom: bad input", flush=True)
    sys.exit(int(sys.argv[2]))
"""


RERUN = "python -m jobs.ablations mbpp --arms A1 --seeds 42 --out /sweep"
"""The command that continues the sweep, as the runner is told it."""


def _job(tmp_path: Path, name: str, sleep: float, code: int = 0) -> Job:
    return Job(name, "new", [sys.executable, "-c", CHILD, str(sleep), str(code)],
               tmp_path / "logs" / f"{name}.log", tmp_path / "runs" / name)


def test_ray_jobs_keep_the_parallel_limit_survive_a_failure_and_copy_the_logs(tmp_path: Path):
    client = FakeJobClient()
    jobs = [_job(tmp_path, f"j{i}", 0.6, 3 if i == 1 else 0) for i in range(4)]
    seen, started = [], []
    outcomes = run_ray_jobs(client, jobs, 2, {"RATCHET_OPENAI_MODEL": "m", "OPENAI_API_KEY": "s"},
                            tmp_path, scope="sweep_t", rerun=RERUN, on_done=seen.append,
                            on_start=started.append, poll_s=0.05)
    assert sorted(o.name for o in outcomes) == ["j0", "j1", "j2", "j3"] and seen == outcomes
    failed = [o for o in outcomes if not o.ok]
    assert [(o.name, o.returncode) for o in failed] == [("j1", 3)]
    assert "exit 3: boom: bad input" in failed[0].message and "j1.log" in failed[0].message
    # No stopped.json: the log's last line, and the command that continues the sweep.
    assert failed[0].cause == f"boom: bad input; rerun the sweep to resume it: `{RERUN}`"
    spans = []
    for job in jobs:
        lines = dict(line.split() for line in job.log.read_text().splitlines()
                     if line.startswith(("start", "end")))
        spans.append((float(lines["start"]), float(lines["end"])))
    peak = max(sum(s <= t < e for s, e in spans) for t, _ in spans)
    assert peak == 2  # two at once, never three
    assert job.log.read_text().startswith("\n=== ") and "(Ray job ratchet-sweep_t-j3-" in \
        job.log.read_text()
    recorded = read_jobs(tmp_path)
    assert sorted(recorded) == ["j0", "j1", "j2", "j3"]
    assert {o.job_id for o in outcomes} == {e["job_id"] for e in recorded.values()}
    sent = client.submitted[0]
    # The venv's Python runs the job, from the folder the sweep was started in (relative paths
    # in its flags mean what they meant to the caller): nothing needs activating on the head.
    assert jobs[0].cwd == Path.cwd()
    assert sent["entrypoint"] == f"cd {shlex.quote(str(jobs[0].cwd))} && exec " \
                                 f"{shlex.join(jobs[0].argv)}"
    assert jobs[0].argv[0] == sys.executable
    env_vars = sent["runtime_env"]["env_vars"]
    assert env_vars["RATCHET_OPENAI_MODEL"] == "m" and "OPENAI_API_KEY" not in env_vars
    assert env_vars["RAY_JOB_STOP_SIGNAL"] == "SIGINT" and started[0].startswith("new    j0:")
    assert recorded_status(client, tmp_path) == {"j0": "SUCCEEDED", "j1": "FAILED",
                                                 "j2": "SUCCEEDED", "j3": "SUCCEEDED"}


def test_an_interrupt_stops_every_job_cleanly_and_a_rerun_follows_live_ones(tmp_path: Path):
    client = FakeJobClient()
    jobs = [_job(tmp_path, f"j{i}", 60) for i in range(3)]

    def interrupt(line: str) -> None:
        if line.startswith("new    j1"):
            raise KeyboardInterrupt

    seen = []
    with pytest.raises(KeyboardInterrupt):
        run_ray_jobs(client, jobs, 2, {}, tmp_path, scope="s", rerun=RERUN, on_done=seen.append,
                     on_start=interrupt, poll_s=0.05)
    assert [(o.name, o.returncode, o.ok) for o in sorted(seen, key=lambda o: o.name)] == [
        ("j0", None, False), ("j1", None, False)]  # j2 was never submitted
    for name in ("j0", "j1"):  # SIGINT (a Ctrl-C) reached the driver, which wound down
        assert "interrupted: released the run" in (tmp_path / "logs" / f"{name}.log").read_text()
    assert live_jobs(client, tmp_path) == {}

    # A job an earlier invocation submitted and that still runs is followed, not resubmitted.
    live = _job(tmp_path, "j2", 0.3)
    client.submit_job(submission_id="old-j2", **submission(live, {}))
    (tmp_path / "jobs.json").write_text('{"j2": {"job_id": "old-j2", "action": "new"}}')
    assert live_jobs(client, tmp_path) == {"j2": "old-j2"}
    (outcome,) = run_ray_jobs(client, [live], 1, {}, tmp_path, scope="s", rerun=RERUN,
                              attach=live_jobs(client, tmp_path), poll_s=0.05)
    assert (outcome.action, outcome.job_id, outcome.ok) == ("attach", "old-j2", True)
    assert len(client.submitted) == 3 and stop_recorded_jobs(client, tmp_path) == []


def test_stop_recorded_jobs_stops_what_still_runs(tmp_path: Path):
    client = FakeJobClient()
    client.submit_job(submission_id="a", **submission(_job(tmp_path, "a", 60), {}))
    client.submit_job(submission_id="b", **submission(_job(tmp_path, "b", 0), {}))
    (tmp_path / "jobs.json").write_text('{"a": {"job_id": "a"}, "b": {"job_id": "b"}, '
                                        '"c": {"job_id": "gone"}}')
    # Stopped once its SIGINT handler is in place (the "start" line comes after it) and b ended.
    wait_for(lambda: "start" in client.get_job_logs("a")
             and client.get_job_status("b") == "SUCCEEDED", 60, "job a to start, b to end")
    assert stop_recorded_jobs(client, tmp_path, wait_s=30) == ["a"]
    assert recorded_status(client, tmp_path) == {"a": "STOPPED", "b": "SUCCEEDED",
                                                 "c": "UNKNOWN"}
    assert "interrupted: released the run" in client.get_job_logs("a")  # unwound, not killed


def test_stop_recorded_jobs_names_a_job_that_outlives_the_wait(tmp_path: Path):
    client = FakeJobClient()
    stubborn = [sys.executable, "-c", "import signal, time; "
                "signal.signal(signal.SIGINT, signal.SIG_IGN); print('start', flush=True); "
                "time.sleep(60)"]
    job = Job("a", "new", stubborn, tmp_path / "logs" / "a.log", tmp_path / "runs" / "a")
    client.submit_job(submission_id="a", **submission(job, {}))
    (tmp_path / "jobs.json").write_text('{"a": {"job_id": "a"}}')
    wait_for(lambda: "start" in client.get_job_logs("a"), 60, "job a to start")
    with pytest.raises(SweepError, match=r"asked a to stop, still running 1s later.*ray job"):
        stop_recorded_jobs(client, tmp_path, wait_s=1)
    assert client.get_job_status("a") == "RUNNING"
    os.killpg(client.procs["a"].pid, signal.SIGKILL)


def test_forwarded_env_keeps_settings_and_leaves_secrets_out():
    env = {"RATCHET_LOCAL_N_CTX": "4096", "RATCHET_OPENAI_API_KEY": "x", "MBPP_OVERRIDE_PATH": "/d",
           "HF_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "k", "AWS_REGION": "eu", "PATH": "/bin",
           "RAY_AUTH_MODE": "token", "RATCHET_X_MAX_TOKENS": "9"}
    assert forwarded_env(env) == {"RATCHET_LOCAL_N_CTX": "4096", "MBPP_OVERRIDE_PATH": "/d",
                                  "AWS_REGION": "eu", "RAY_AUTH_MODE": "token",
                                  "RATCHET_X_MAX_TOKENS": "9"}


def test_a_submission_is_asked_again_while_no_job_agent_is_ready_and_only_then():
    from ratchet_ray.sweep.jobs import AGENT_NOT_READY, submit_when_ready

    class Starting:
        """A job server whose agents register after two refusals."""

        def __init__(self, refusals: list[str]):
            self.refusals, self.calls = refusals, 0

        def submit_job(self, **kwargs):
            self.calls += 1
            if self.refusals:
                raise RuntimeError(self.refusals.pop(0))
            return kwargs["submission_id"]

    busy = f"Request failed with status code 500: {AGENT_NOT_READY}, please try again later."
    head = Starting([busy, busy])
    assert submit_when_ready(head, timeout_s=30, submission_id="j") == "j" and head.calls == 3
    other = Starting(["Request failed with status code 400: bad runtime_env"])
    with pytest.raises(RuntimeError, match="bad runtime_env"):
        submit_when_ready(other, timeout_s=30, submission_id="j")
    assert other.calls == 1  # any other refusal is the caller's at once


def test_a_failed_arm_is_marked_failed_in_status_with_its_cause(tmp_path):
    from ratchet_ray.sweep.spec import write_status

    results = tmp_path / "runs" / "A1_s42"
    child = ("import json, pathlib, sys; d = pathlib.Path(sys.argv[1]) / 'mbpp' / 'run1'; "
             "d.mkdir(parents=True); (d / 'stopped.json').write_text(json.dumps({'cause': "
             "'round 0 eval: 4 of 4 tasks failed on infrastructure ... Connection error.'})); "
             "print('Error: run stopped'); sys.exit(1)")
    job = Job("A1_s42", "new", [sys.executable, "-c", child, str(results)],
              tmp_path / "logs" / "A1_s42.log", results)
    from fake_jobs import FakeJobClient
    from ratchet_ray.sweep.jobs import run_ray_jobs

    (outcome,) = run_ray_jobs(FakeJobClient(), [job], 1, {}, tmp_path, scope="s", rerun=RERUN,
                              poll_s=0.05)
    status = json.loads(write_status(tmp_path, [outcome]).read_text())["A1_s42"]
    assert status["ok"] is False and status["returncode"] == 1
    assert status["cause"].startswith("round 0 eval: 4 of 4 tasks failed on infrastructure")


def test_a_failed_arms_cause_names_the_sweeps_command_not_the_single_runs_resume(tmp_path):
    """The driver advises ``--resume RUN`` (here its full-disk stop, in its own words); the
    sweep's user must rerun the sweep instead: its outcome, ``status.json`` and the report's
    failures all name the sweep's command."""
    from ratchet_ray.loop.driver import record_stop
    from ratchet_ray.report.ablation_report import write_report
    from ratchet_ray.sweep.spec import write_status

    spec = SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=2)
    run_dir = leave_run(spec, "A1_s42", 0)
    full = OSError(28, "No space left on device", str(run_dir / "evidence"))
    stop = record_stop(RunDir.open(run_dir), RunDir.open(run_dir).config(), full)
    assert f"--resume {run_dir}" in str(stop)  # what a single run's user is told
    stopped = run_dir / "stopped.json"
    recorded = stopped.read_text()
    results = tmp_path / "runs" / "A1_s42"
    child = (f"import pathlib; pathlib.Path({str(stopped)!r}).write_text({recorded!r}); "
             f"print('continue with: python -m jobs.skill_loop --resume {run_dir}'); "
             "raise SystemExit(1)")
    job = Job("A1_s42", "resume", [sys.executable, "-c", child], tmp_path / "logs" / "A1.log",
              results, run_dir)
    (outcome,) = run_ray_jobs(FakeJobClient(), [job], 1, {}, tmp_path, scope="s", rerun=RERUN,
                              poll_s=0.05)
    for said in (outcome.cause, outcome.message):
        assert "--resume" not in said and f"`{RERUN}`" in said
    assert outcome.cause.startswith(f"no room to write in ") and "df -h" in outcome.cause
    assert outcome.cause.endswith(f"then continue with `{RERUN}`")
    status = json.loads(write_status(tmp_path, [outcome]).read_text())["A1_s42"]
    assert status["cause"] == outcome.cause
    md, js, _ = write_report(tmp_path, failures={outcome.name: outcome.cause})
    assert f"- A1_s42: {outcome.cause}" in md.read_text() and "--resume" not in md.read_text()


@pytest.mark.parametrize("text, said", [
    ("round 0 eval: ... Fix: start it; then continue with --resume",
     "round 0 eval: ... Fix: start it; then continue with `{R}`"),
    ("round 1 critic: failed 3 time(s); --resume redoes only what it left undone",
     "round 1 critic: failed 3 time(s); `{R}` redoes only what it left undone"),
    ("interrupted in round 0 of 2; continue with: python -m jobs.skill_loop --resume "
     "'/s/runs/A1 s42/mbpp/r1'", "interrupted in round 0 of 2; continue with: `{R}`"),
    ("ValueError: bad", "ValueError: bad; rerun the sweep to resume it: `{R}`"),
    ("stopped", "stopped; rerun the sweep to resume it: `{R}`"),
])
def test_sweep_cause_turns_every_single_run_resume_into_the_sweeps_command(text, said):
    from ratchet_ray.sweep.jobs import sweep_cause

    assert sweep_cause(text, RERUN) == said.format(R=RERUN)


def test_the_sweep_command_is_the_invocation_that_continues_the_sweep(tmp_path, monkeypatch):
    """Parsed by the command itself, it gives the same arms, seeds, shared flags and --out (so
    ``check_sweep_file`` accepts the rerun), from any folder."""
    from ratchet_ray.cli.ablations import main
    from ratchet_ray.sweep.spec import sweep_command

    arm = tmp_path / "my_arm.yaml"
    arm.write_text("curator:\n  active_cap: 9\n")
    monkeypatch.chdir(tmp_path)
    spec = SweepSpec(suite="mbpp", out_dir=tmp_path / "sweep", rounds=3, n_train=4,
                     profiles=("hardened",), sets=("curator.active_cap=7",),
                     budget=("budget.max_tokens=9",))
    command = sweep_command("python -m jobs.ablations", spec, ["A1", "my_arm.yaml"], [42, 7], 2,
                            "http://h:8265")
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "jobs.ablations"]
    params = main.make_context("ablations", argv[3:]).params
    assert (params["arms"], params["seeds"]) == (["A1", str(arm)], [42, 7])
    assert (params["parallel"], params["address"], params["out_dir"]) == (2, "http://h:8265",
                                                                          spec.out_dir)
    again = SweepSpec(suite=params["suite"], out_dir=params["out_dir"], sets=params["sets"],
                      profiles=params["profiles"], **{k: params[k] for k in (
                          "rounds", "n_train", "n_eval", "subset", "llm", "dataset_path",
                          "workers", "bank")})
    assert again.shared_flags() == spec.shared_flags()  # the rerun's flags match sweep.json
    assert "budget.max_tokens" not in command  # sweep.json's budget is kept by the rerun


def test_a_sweep_folder_deleted_mid_sweep_stops_its_jobs_in_one_line(tmp_path):
    """The folder goes while a job runs: the next log copy cannot be written, and the sweep
    stops every job it follows (none runs on unrecorded) and names the folder and the rerun;
    it was a FileNotFoundError traceback."""
    import shutil

    out = tmp_path / "sweep"
    client = FakeJobClient()
    jobs = [_job(out, "j0", 60)]
    started = []

    def delete(line: str) -> None:
        started.append(line)
        shutil.rmtree(out)

    with pytest.raises(SweepError) as raised:
        run_ray_jobs(client, jobs, 1, {}, out, scope="s", rerun=RERUN, on_start=delete,
                     poll_s=0.05, log_every_s=0.0)
    said = str(raised.value)
    assert said.startswith(f"cannot write the sweep's files in {out} (No such file or directory")
    assert "deleted or made read-only while the sweep ran" in said and said.endswith(f"`{RERUN}`")
    (job_id,) = client.procs
    assert client.get_job_status(job_id) == "STOPPED"


def test_a_job_whose_submission_cannot_be_recorded_is_stopped_not_left_running(tmp_path):
    """``jobs.json`` cannot be written once a job is submitted (here a folder is in its way): the
    job was left running, unrecorded, and a rerun would have submitted it a second time."""
    client = FakeJobClient()
    (tmp_path / "jobs.json").mkdir()
    with pytest.raises(SweepError, match=r"cannot write the sweep's files in .*jobs\.json"):
        run_ray_jobs(client, [_job(tmp_path, "j0", 60)], 1, {}, tmp_path, scope="s",
                     rerun=RERUN, poll_s=0.05)
    assert [client.get_job_status(j) for j in client.procs] == ["STOPPED"]


@pytest.mark.parametrize("reached", [True, False], ids=["submitted", "not-submitted"])
def test_ctrl_c_while_a_job_is_submitted_leaves_nothing_running(tmp_path, reached):
    """Ctrl-C while the job server answers a submission: a job the cluster took is stopped (it
    was left running, unrecorded); one it never took is passed over, and the interrupt is what
    the caller sees."""
    class CutShort(FakeJobClient):
        def submit_job(self, **kwargs):
            if reached:
                super().submit_job(**kwargs)
            raise KeyboardInterrupt

    client, seen = CutShort(), []
    with pytest.raises(KeyboardInterrupt):
        run_ray_jobs(client, [_job(tmp_path, "j0", 60), _job(tmp_path, "j1", 60)], 2, {},
                     tmp_path, scope="s", rerun=RERUN, on_done=seen.append, poll_s=0.05)
    assert [client.get_job_status(j) for j in client.procs] == (["STOPPED"] if reached else [])
    assert [(o.name, o.ok) for o in seen] == ([("j0", False)] if reached else [])


def test_a_second_ctrl_c_while_the_jobs_wind_down_still_reports_them(tmp_path):
    """The user presses Ctrl-C again during the wait for the stopped jobs: the wait ends, and
    every job is still reported (stopped); it ended with no outcome, and status.json empty."""
    class Impatient(FakeJobClient):
        pressed = False

        def get_job_status(self, job_id: str) -> str:
            if self.stopped and not self.pressed:
                self.pressed = True
                raise KeyboardInterrupt
            return super().get_job_status(job_id)

    client, seen = Impatient(), []
    stubborn = [sys.executable, "-c", "import signal, time; "
                "signal.signal(signal.SIGINT, signal.SIG_IGN); print('start', flush=True); "
                "time.sleep(60)"]
    job = Job("a", "new", stubborn, tmp_path / "logs" / "a.log", tmp_path / "runs" / "a")

    def interrupt(line: str) -> None:
        raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            run_ray_jobs(client, [job], 1, {}, tmp_path, scope="s", rerun=RERUN,
                         on_done=seen.append, on_start=interrupt, poll_s=0.05)
        assert [(o.name, o.returncode, o.ok) for o in seen] == [("a", None, False)]
        assert seen[0].cause == f"stopped; rerun the sweep to resume it: `{RERUN}`"
    finally:
        for proc in client.procs.values():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:  # a SIGINT before its handler was set ended it already
                pass


def test_stop_from_another_shell_ends_the_sweep_not_only_its_running_jobs(tmp_path):
    """``--stop`` stops the running jobs; the sweep's own process then submitted the next
    pending ones, so the sweep went on. Now it submits none after the request, reports each as
    not started, and the next invocation (``lock_sweep``) runs again."""
    from ratchet_ray.sweep.spec import STOP_FILE, lock_sweep

    client, seen = FakeJobClient(), []
    jobs = [_job(tmp_path, f"j{i}", 60) for i in range(3)]

    def stop_from_another_shell(line: str) -> None:  # what `--stop` does, in its order
        job_id = client.submitted[0]["submission_id"]  # stopped once its SIGINT handler is in
        wait_for(lambda: "start" in client.get_job_logs(job_id), 60, "job j0 to start")
        (tmp_path / STOP_FILE).write_text("{}")
        stop_recorded_jobs(client, tmp_path, wait_s=30)

    outcomes = run_ray_jobs(client, jobs, 1, {}, tmp_path, scope="s", rerun=RERUN,
                            on_done=seen.append, on_start=stop_from_another_shell, poll_s=0.05)
    assert len(client.submitted) == 1 and outcomes == seen
    by_name = {o.name: o for o in outcomes}
    assert sorted(by_name) == ["j0", "j1", "j2"] and not any(o.ok for o in outcomes)
    assert by_name["j1"].cause == ("not started: --stop stopped the sweep; rerun the sweep to "
                                   f"resume it: `{RERUN}`")
    lock_sweep(tmp_path).release()
    assert not (tmp_path / STOP_FILE).exists()


@pytest.mark.parametrize("text", ["{not json", '["j0"]', '{"j0": {"id": "x"}}'])
def test_an_unreadable_jobs_json_is_one_line_naming_it(tmp_path, text):
    """It was a JSONDecodeError / TypeError / KeyError traceback at the sweep's start."""
    (tmp_path / "jobs.json").write_text(text)
    with pytest.raises(SweepError, match=r"jobs\.json is unreadable .*; move it away and rerun"):
        live_jobs(FakeJobClient(), tmp_path)


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


def test_a_busy_sweep_folder_names_the_sweeps_doors_not_a_runs_commands(tmp_path):
    """A second sweep on a busy ``--out`` was told the per-run commands (``ratchet query``,
    ``skill list``, ``audit``), which act on no sweep folder; a run dir still names them."""
    from ratchet_ray.storage.runlock import RunDirBusy, RunLock
    from ratchet_ray.sweep.spec import lock_sweep

    held = lock_sweep(tmp_path / "sweep")
    with pytest.raises(SweepError) as busy:
        lock_sweep(tmp_path / "sweep")
    said = str(busy.value)
    assert "\n" not in said and f"pid {os.getpid()}" in said and f"kill {os.getpid()}" in said
    assert "--status" in said and "--stop" in said and "ratchet query" not in said
    held.release()
    (tmp_path / "run").mkdir()
    with RunLock(tmp_path / "run"), pytest.raises(RunDirBusy, match="ratchet query, skill list"):
        RunLock(tmp_path / "run").acquire()
