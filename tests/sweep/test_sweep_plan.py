"""The sweep's plan: which arm-seeds are skipped, resumed or new, each new one's flags, the arms
and overrides refused before anything runs, the Ray CPUs a run asks for, and the command that
continues the sweep."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from ratchet_ray.run_config.files import load_config
from ratchet_ray.sweep.spec import SweepError, SweepSpec, cpus_per_run, plan_jobs
from sweep_helpers import leave_run


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


def test_cpus_per_run_follows_the_worker_counts():
    assert cpus_per_run(load_config()) == pytest.approx(0.25 + 2 * 0.25 + 2 * 0.5 + 0.25)
    assert cpus_per_run(load_config([], ["workers.solvers=4", "workers.graders=1"])) == \
        pytest.approx(0.25 + 4 * 0.25 + 0.5 + 0.25)


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
    assert argv[:6] == ["cd", str(tmp_path), "&&", "python", "-m", "jobs.ablations"]
    params = main.make_context("ablations", argv[6:]).params
    assert (params["arms"], params["seeds"]) == (["A1", str(arm)], [42, 7])
    assert (params["parallel"], params["address"], params["out_dir"]) == (2, "http://h:8265",
                                                                          spec.out_dir)
    again = SweepSpec(suite=params["suite"], out_dir=params["out_dir"], sets=params["sets"],
                      profiles=params["profiles"], **{k: params[k] for k in (
                          "rounds", "n_train", "n_eval", "subset", "llm", "dataset_path",
                          "workers", "bank")})
    assert again.shared_flags() == spec.shared_flags()  # the rerun's flags match sweep.json
    assert "budget.max_tokens" not in command  # sweep.json's budget is kept by the rerun


def test_the_sweep_command_means_the_same_from_any_folder(tmp_path, monkeypatch):
    """A relative ``--set`` path means the sweep's folder (its jobs run there); the command
    sweep.json records kept it as given, so pasted in another folder it named another file."""
    import subprocess
    import sys

    from ratchet_ray.sweep.spec import sweep_command

    started = tmp_path / "started_here"
    (started / "plugins").mkdir(parents=True)
    (started / "plugins" / "mine.py").write_text("")
    monkeypatch.chdir(started)
    spec = SweepSpec(suite="mbpp", out_dir=started / "sweep",
                     sets=("suite_plugins=[plugins/mine.py]",))
    # ``prog`` stands in for the sweep: it says whether the --set path is there, where it runs.
    probe = (f"{shlex.quote(sys.executable)} -c 'import os, sys; "
             "print(os.path.isfile(sys.argv[sys.argv.index(\"--set\") + 1][15:-1]))'")
    command = sweep_command(probe, spec, ["A1"], [42])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run(["bash", "-c", command], cwd=elsewhere, capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "True"), (command, done.stderr)
