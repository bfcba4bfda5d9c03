"""The sweep's doors a user knocks on without a sweep behind them, each one ``Error:`` line naming
the problem and the fix (no Ray: ``refusals``): ``--status`` / ``--stop`` / ``--report-only`` on a
folder that is no sweep, two arms naming the same runs, a read-only ``--out`` (a real read-only
mount made with bubblewrap, which root's permissions do not override); and ``--status`` /
``--stop`` of a sweep naming the command that continues it (its job server a
``fake_jobs.FakeJobClient``), or, on the token-auth head a sweep starts, asked without its token
mode: the one line of the sweep's own start; a real sweep whose driver is killed names the
sweep's command, not the run's ``--resume``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fake_jobs import FakeJobClient
from one_line import process_error_line
from refusals import no_ray, ratchet, refused  # noqa: F401 (no_ray: a fixture)
from waiting import wait_for

pytestmark = pytest.mark.usefixtures("no_ray")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("flags", [["--status"], ["--stop"],
                                   ["--status", "--address", "http://127.0.0.1:9"],
                                   ["--stop", "--address", "http://127.0.0.1:9"]],
                         ids=["status", "stop", "status-address", "stop-address"])
@pytest.mark.parametrize("folder", ["empty", "missing"])
def test_status_and_stop_of_a_folder_that_is_no_sweep(tmp_path, flags, folder):
    """It was 'give its --address', or with one, 'no job of this sweep runs' (or the address's
    refusal): words about a sweep that is not there."""
    out = tmp_path / "not_a_sweep"
    if folder == "empty":
        out.mkdir()
    refused(ratchet("ablations", "sim", "--out", str(out), *flags),
            f"{out} is not a sweep folder (no sweep.json)", "pass the --out (or --tag)")
    assert out.exists() == (folder == "empty")


def test_report_only_of_a_folder_that_is_no_sweep(tmp_path):
    """It wrote an empty table ('setting unknown') there and exited 0."""
    out = tmp_path / "somewhere"
    out.mkdir()
    refused(ratchet("ablations", "sim", "--out", str(out), "--report-only"),
            f"{out} is not a sweep folder (no sweep.json, no run dir below it)", "--out")
    assert not any(out.iterdir())


@pytest.mark.parametrize("flags", [[], ["--status"]], ids=["run", "status"])
def test_a_malformed_address_is_not_told_a_form_the_sweep_refuses(tmp_path, flags):
    """The address's refusal advised ``ray://HOST:10001``, a form the sweep refuses next."""
    out = tmp_path / "sweep"
    if flags:
        out.mkdir()
        (out / "sweep.json").write_text(json.dumps({"command": "python -m jobs.ablations sim"}))
    line = refused(ratchet("ablations", "sim", "--out", str(out), "--address", "garbage", *flags),
                   "garbage (--address)", "no Ray address", "http://HOST:8265")
    assert "ray://" not in line


def test_report_only_while_the_sweep_runs_is_refused_naming_status(tmp_path):
    """It wrote a partial table (runs mid-round) as the folder's ablations.md while the sweep ran,
    which the sweep then overwrote at its end, or left standing if it died."""
    from ratchet_ray.sweep.folder import lock_sweep

    out = tmp_path / "sweep"
    out.mkdir()
    (out / "sweep.json").write_text(json.dumps({"command": "python -m jobs.ablations sim"}))
    held = lock_sweep(out)  # the running sweep's lock, as it holds it until it exits
    try:
        refused(ratchet("ablations", "sim", "--out", str(out), "--report-only"),
                f"the sweep in {out} still runs", "--status")
    finally:
        held.release()
    assert not (out / "ablations.md").exists() and not (out / "ablations.json").exists()


def test_two_arms_naming_the_same_runs_are_refused(tmp_path):
    """A shipped arm and an arm file of the same name: both jobs wrote runs/A1_s5 at once."""
    mine = tmp_path / "A1.yaml"
    mine.write_text("curator:\n  active_cap: 9\n")
    refused(ratchet("ablations", "sim", "--arms", f"A1,{mine}", "--seeds", "5", "--rounds", "1",
                    "--out", str(tmp_path / "sweep"), "--dry-run"),
            f"--arms A1 and {mine} both name their runs 'A1'", "rename the arm file")
    assert not (tmp_path / "sweep").exists()


@pytest.mark.parametrize("made", [False, True], ids=["new", "existing"])
def test_a_read_only_out_is_refused_in_one_line(tmp_path, made):
    """It was an OSError traceback (mkdir, or the lock file)."""
    mount = tmp_path / "mount"
    mount.mkdir()
    out = mount / "sweep"
    if made:
        out.mkdir()
    argv = ["bwrap", "--bind", "/", "/", "--ro-bind", str(mount), str(mount), "--dev", "/dev",
            "--proc", "/proc", sys.executable, "-m", "jobs.ablations", "sim", "--arms",
            "default", "--seeds", "5", "--rounds", "1", "--out", str(out)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    process_error_line(done, "cannot write the sweep folder: Read-only file system",
                       str(out), "pass an --out where you can write")


def test_status_and_stop_name_the_cause_and_the_command_that_continues_the_sweep(
        tmp_path, monkeypatch):
    from ratchet_ray.sweep import jobs

    client = FakeJobClient()
    monkeypatch.setattr(jobs, "job_client", lambda address: client)
    # the fake client stands for the cluster: no head for the address check to find
    monkeypatch.setattr("ratchet_ray.loop.ray_address.ray_problem", lambda *a, **k: None)
    out = tmp_path / "sweep"
    out.mkdir()
    rerun = f"ratchet ablations sim --arms A1,A4 --seeds 5 --out {out}"
    (out / "sweep.json").write_text(json.dumps({"suite": "sim", "flags": [], "command": rerun}))
    client.submit_job(submission_id="j-a1", entrypoint="exit 1")
    client.submit_job(submission_id="j-a4", entrypoint="sleep 60")
    client.submit_job(submission_id="j-old", entrypoint="exit 1")
    (out / "jobs.json").write_text(json.dumps({"A1_s5": {"job_id": "j-a1"},
                                               "A4_s5": {"job_id": "j-a4"},
                                               "A9_s5": {"job_id": "j-old"}}))
    cause = f"round 0 eval: ...; then continue with `{rerun}`"
    (out / "status.json").write_text(json.dumps({
        "A1_s5": {"job_id": "j-a1", "cause": cause, "ok": False},
        "A9_s5": {"job_id": "an-earlier-job", "cause": "not this job's", "ok": False}}))
    wait_for(lambda: client.get_job_status("j-a1") == "FAILED", 30, "job j-a1 to fail")
    wait_for(lambda: client.get_job_status("j-old") == "FAILED", 30, "job j-old to fail")

    status = ratchet("ablations", "sim", "--out", str(out), "--status", "--address", "auto")
    assert status.exit_code == 0, status.output
    lines = {line.split()[1]: line for line in status.output.splitlines()}
    assert lines["A1_s5"].startswith("FAILED") and lines["A1_s5"].endswith(f": {cause}")
    assert lines["A4_s5"].startswith("RUNNING") and lines["A4_s5"].endswith("A4_s5.log")
    assert lines["A9_s5"].endswith("A9_s5.log")  # status.json speaks of another job of it

    stop = ratchet("ablations", "sim", "--out", str(out), "--stop", "--address", "auto")
    assert stop.exit_code == 0, stop.output
    assert stop.output.strip() == (f"stopped A4_s5; rerun the sweep's command to resume them: "
                                   f"`{rerun}`")
    assert (out / "stop_requested.json").is_file()  # the sweep's own process starts no more


@pytest.mark.slow  # a real Ray head: about 20 s
def test_status_of_a_sweeps_own_head_without_its_token_mode_is_one_line(tmp_path):
    """A sweep's own head uses token auth; ``--status`` / ``--stop`` from another shell with
    the address it printed, without ``RAY_AUTH_MODE=token``, was Ray's AuthenticationError
    traceback."""
    import os

    from ratchet_ray.sweep.ray_head import ray_cluster

    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "sweep.json").write_text(json.dumps({"suite": "sim", "flags": []}))
    with ray_cluster(1, tmp_path / "head.log", {**env, "RAY_AUTH_MODE": "token"}) as cluster:
        for flag in ("--status", "--stop"):
            done = subprocess.run([sys.executable, "-m", "jobs.ablations", "sim", "--out",
                                   str(out), flag, "--address", cluster["RAY_ADDRESS"]],
                                  cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
            process_error_line(done, "uses token authentication", "set RAY_AUTH_MODE=token")


def test_ctrl_c_before_any_job_started_says_so(tmp_path, monkeypatch):
    """Ctrl-C while the head starts: it said 'the sweep's jobs were stopped' of jobs never
    started; the rerun command and status.json as ever."""
    from ratchet_ray.cli import ablations

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ablations, "_run", interrupted)
    out = tmp_path / "sweep"
    done = ratchet("ablations", "sim", "--arms", "default", "--seeds", "5", "--rounds", "1",
                   "--out", str(out))
    assert done.exit_code == 130, done.output
    (line,) = [line for line in done.output.splitlines() if line.startswith("interrupted")]
    assert line.startswith(f"interrupted: no job of the sweep had started (status in {out}")
    assert line.endswith(f"rerun the same command to resume them: `cd {Path.cwd()} && "
                         f"ratchet ablations sim --arms default --seeds 5 --rounds 1 --out {out}`")
    assert json.loads((out / "status.json").read_text()) == {}


def test_an_arm_seed_stopped_by_the_user_is_not_called_failed():
    """Ctrl-C or ``--stop``: its line said FAILED, as if the run had broken."""
    from ratchet_ray.cli.ablations import outcome_state
    from ratchet_ray.sweep.spec import JobOutcome

    def state(**kwargs) -> str:
        return outcome_state(JobOutcome("A1_s5", kwargs.pop("action", "new"), wall_s=1.0,
                                        log="l", **kwargs))

    assert state(returncode=None) == "STOPPED"
    assert state(returncode=None, budget=True) == "BUDGET"
    assert state(returncode=1) == "FAILED"
    assert state(returncode=0) == "done  " and state(action="skipped", returncode=None) == "done  "


@pytest.mark.slow  # a real sweep on its own Ray head: about 40 s
def test_an_arm_seed_whose_driver_died_names_the_sweeps_command(tmp_path):
    """A real sweep (``sim``: no model) whose one driver is killed (as by the OOM killer): its
    line, ``status.json`` and the report's failures name the command that continues the sweep
    (the one ``sweep.json`` records), never a single run's ``--resume``."""
    import os
    import signal as signals

    import psutil

    out = tmp_path / "sweep"
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    env.update(HF_HUB_OFFLINE="1", RAY_USAGE_STATS_ENABLED="0")
    argv = [sys.executable, "-m", "jobs.ablations", "sim", "--arms", "default", "--seeds", "5",
            "--rounds", "30", "--n-train", "4", "--n-eval", "4", "--set", "sim.n_tasks=8",
            "--out", str(out)]
    sweep = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)

    def driver() -> psutil.Process | None:
        mine = f"results_dir={out / 'runs' / 'default_s5'}"
        return next((p for p in psutil.process_iter(["cmdline"])
                     if mine in " ".join(p.info["cmdline"] or [])
                     and "jobs.skill_loop" in " ".join(p.info["cmdline"] or [])), None)

    try:
        wait_for(lambda: driver() is not None and list(out.glob("runs/*/sim/*/round_00")),
                 240, "the arm-seed's driver to finish a round")
        os.kill(driver().pid, signals.SIGKILL)
        _, err = sweep.communicate(timeout=240)
    finally:
        if sweep.poll() is None:
            sweep.send_signal(signals.SIGINT)  # stops its job and its head
            sweep.wait(timeout=240)
    rerun = f"cd {ROOT} && python -m jobs.ablations {' '.join(argv[3:])}"
    (line,) = [line for line in err.splitlines() if line.startswith("FAILED default_s5")]
    assert sweep.returncode == 1 and line.endswith(f"rerun the sweep to resume it: `{rerun}`")
    assert "--resume" not in err and "Traceback" not in err, err[-3000:]
    cause = json.loads((out / "status.json").read_text())["default_s5"]["cause"]
    assert cause.endswith(f"`{rerun}`") and f"- default_s5: {cause}" in \
        (out / "ablations.md").read_text()
    assert json.loads((out / "sweep.json").read_text())["command"] == rerun


def test_ray_address_local_is_a_sweep_of_its_own_head_not_a_cluster(tmp_path):
    """``RAY_ADDRESS=local`` (a run's way to a Ray of its own, docs/cluster.md) was taken for a
    cluster's address: ``--status`` asked a job server "local" for 2 minutes, a sweep made its
    folder and then did the same. It is a sweep on a head of its own (``ray_cluster``'s test
    starts it), so ``--status`` names what it needs."""
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "sweep.json").write_text(json.dumps({"command": "python -m jobs.ablations sim"}))
    refused(ratchet("ablations", "sim", "--out", str(out), "--status", env={"RAY_ADDRESS": "local"}),
            "--status / --stop act on the cluster the sweep runs on: give its --address")
