"""The sweep's planning (skip / resume / new, validation) and its process pool (real
subprocesses: the parallel limit holds and a failing child does not stop the others)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ratchet_ray.config_files import load_config
from ratchet_ray.loop.rundir import RunDir
from ratchet_ray.loop.sweep import (Job, SweepError, SweepSpec, check_sweep_file, cpus_per_run,
                                    plan_jobs, run_jobs)
from ratchet_ray.types import RoundSummary


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
                                      "--quiet"]
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
    (["A9"], (), "known arms: default, A1"),
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
    with pytest.raises(SweepError, match="rerun with those flags to resume it, or give a new"):
        check_sweep_file(SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=5))


def test_cpus_per_run_follows_the_worker_counts():
    assert cpus_per_run(load_config()) == pytest.approx(0.25 + 2 * 0.25 + 2 * 0.5 + 0.25)
    assert cpus_per_run(load_config([], ["workers.solvers=4", "workers.graders=1"])) == \
        pytest.approx(0.25 + 4 * 0.25 + 0.5 + 0.25)


CHILD = """
import sys, time
print("start", time.time(), flush=True)
time.sleep(float(sys.argv[1]))
print("end", time.time(), flush=True)
if sys.argv[2] != "0":
    print("boom: bad input", flush=True)
    sys.exit(int(sys.argv[2]))
"""


def test_run_jobs_keeps_the_parallel_limit_and_survives_a_failure(tmp_path: Path):
    jobs = [Job(f"j{i}", "new", [sys.executable, "-c", CHILD, "0.6", "3" if i == 1 else "0"],
                tmp_path / "logs" / f"j{i}.log") for i in range(4)]
    seen = []
    outcomes = run_jobs(jobs, parallel=2, env={"PATH": "/usr/bin:/bin"}, on_done=seen.append,
                        poll_s=0.05)
    assert sorted(o.name for o in outcomes) == ["j0", "j1", "j2", "j3"] and seen == outcomes
    failed = [o for o in outcomes if not o.ok]
    assert [(o.name, o.returncode) for o in failed] == [("j1", 3)]
    assert "exit 3: boom: bad input" in failed[0].message and "j1.log" in failed[0].message
    spans = []
    for job in jobs:
        lines = dict(line.split() for line in job.log.read_text().splitlines()
                     if line.startswith(("start", "end")))
        spans.append((float(lines["start"]), float(lines["end"])))
    peak = max(sum(s <= t < e for s, e in spans) for t, _ in spans)
    assert peak == 2  # two at once, never three
    assert job.log.read_text().startswith("\n=== ")  # a header line per attempt


def test_run_jobs_reports_a_command_that_cannot_start(tmp_path: Path):
    outcomes = run_jobs([Job("x", "new", [str(tmp_path / "missing-binary")], tmp_path / "x.log")],
                        parallel=1, env={})
    assert outcomes[0].returncode is None and "cannot start: FileNotFoundError" in \
        outcomes[0].message
