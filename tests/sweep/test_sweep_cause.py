"""What an arm-seed that did not finish is told: the command that continues the sweep, which its
driver names itself wherever a single run names ``--resume RUN`` (the sweep gives it in
``RATCHET_SWEEP_COMMAND``); a cause naming no way on ends with it. And a driver whose run dir
was deleted under it (its sweep folder removed) makes no bare run dir again to record its stop."""

from __future__ import annotations

import json
import logging
import shutil
import sys
from pathlib import Path

import pytest

from fake_jobs import FakeJobClient
from ratchet_ray.loop.rundir import SWEEP_COMMAND_ENV, RunDir
from ratchet_ray.sweep.jobs import run_ray_jobs, sweep_cause
from ratchet_ray.sweep.spec import Job, SweepSpec
from sweep_helpers import RERUN, leave_run

DISK_FULL = (28, "No space left on device")


def test_a_failed_arms_cause_names_the_sweeps_command_not_the_single_runs_resume(tmp_path):
    """The driver advises ``--resume RUN`` to a single run's user (here its full-disk stop); as a
    sweep's job it names the sweep's command, which the sweep handed it: the outcome,
    ``status.json`` and the report's failures name that, never ``--resume``."""
    from ratchet_ray.loop.stops import record_stop
    from ratchet_ray.report.ablation_report import write_report
    from ratchet_ray.sweep.folder import write_status

    spec = SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=2)
    run_dir = leave_run(spec, "A1_s42", 0)
    full = OSError(*DISK_FULL, str(run_dir / "evidence"))
    stop = record_stop(RunDir.open(run_dir), RunDir.open(run_dir).config(), full)
    assert f"--resume {run_dir}" in str(stop)  # what a single run's user is told
    # The job: the driver's own stop and exit line, in the environment the sweep gives it.
    child = ("from ratchet_ray.loop.stops import record_stop\n"
             "from ratchet_ray.loop.rundir import RunDir\n"
             f"run = RunDir.open({str(run_dir)!r})\n"
             f"stop = record_stop(run, run.config(), OSError(*{DISK_FULL!r}, "
             f"{str(run_dir / 'evidence')!r}))\n"
             "print(f'Error: run stopped: {stop}')\nraise SystemExit(1)\n")
    job = Job("A1_s42", "resume", [sys.executable, "-c", child], tmp_path / "logs" / "A1.log",
              tmp_path / "runs" / "A1_s42", run_dir)
    client = FakeJobClient()
    (outcome,) = run_ray_jobs(client, [job], 1, {}, tmp_path, scope="s", rerun=RERUN,
                              poll_s=0.05)
    assert client.submitted[0]["runtime_env"]["env_vars"][SWEEP_COMMAND_ENV] == RERUN
    recorded = json.loads((run_dir / "stopped.json").read_text())["cause"]
    assert recorded.endswith(f"then continue with `{RERUN}`")  # the driver's own words
    assert "--resume" not in outcome.message  # its log's last line, cut to 300 characters
    assert outcome.message.startswith("exit 1: Error: run stopped: no room to write in ")
    assert outcome.cause == recorded and "df -h" in outcome.cause and "--resume" not in recorded
    status = json.loads(write_status(tmp_path, [outcome]).read_text())["A1_s42"]
    assert status["cause"] == outcome.cause
    md, _, _ = write_report(tmp_path, failures={outcome.name: outcome.cause})
    assert f"- A1_s42: {outcome.cause}" in md.read_text() and "--resume" not in md.read_text()


def _breaker_stop(run_dir: Path) -> str:
    from ratchet_ray.loop.breaker import InfraBreaker, InfraFailureStop

    with pytest.raises(InfraFailureStop) as stop:
        InfraBreaker("eval", 0, 1, 0.0).observe_failure("Mbpp/2", "Connection error.")
    return str(stop.value)


def _phase_stop(run_dir: Path) -> str:
    from ratchet_ray.loop.breaker import RunStopped
    from ratchet_ray.loop.driver import Phase, run_phase
    from ratchet_ray.loop.phases import CriticIncomplete
    from ratchet_ray.types import RoundSummary

    def critic(*_):
        raise CriticIncomplete("2 capsules left without a verdict")

    with pytest.raises(RunStopped) as stop:
        run_phase(None, Phase("critic", critic, rerunnable=False), 1, RoundSummary(round=1))
    return str(stop.value)


def _disk_full_stop(run_dir: Path) -> str:
    from ratchet_ray.loop.stops import record_stop

    run = RunDir.open(run_dir)
    return str(record_stop(run, run.config(), OSError(*DISK_FULL, str(run_dir / "evidence"))))


def _damaged_summary(run_dir: Path) -> str:
    from ratchet_ray.loop.rundir import RunFileError

    (run_dir / "round_00" / "summary.json").write_text('{"round": "zero"}')
    with pytest.raises(RunFileError) as damaged:
        RunDir.open(run_dir).summaries()
    return str(damaged.value)


def _interrupt_line(run_dir: Path) -> str:
    from click.testing import CliRunner

    from ratchet_ray.cli.run import run
    from ratchet_ray.loop import driver
    from ratchet_ray.loop.stops import RunInterrupted

    def interrupted(*_, **__):
        raise RunInterrupted(run_dir, 1, 1, 2)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(driver, "run_loop", interrupted)
        done = CliRunner().invoke(run, ["--resume", str(run_dir)],
                                  prog_name="python -m jobs.skill_loop")
    assert done.exit_code == 130, done.output
    return done.output.strip().splitlines()[-1]


@pytest.mark.parametrize("said, single", [
    (_breaker_stop, "then continue with --resume"),
    (_phase_stop, "; --resume redoes only what it left undone"),
    (_disk_full_stop, "then continue with --resume {run}"),
    (_damaged_summary, "and resume with --resume {run}: the round's work"),
    (_interrupt_line, "continue with: python -m jobs.skill_loop --resume {run}"),
], ids=["breaker", "phase", "disk-full", "damaged-summary", "interrupt"])
def test_a_sweeps_driver_names_the_sweeps_command_where_a_run_names_resume(tmp_path, monkeypatch,
                                                                           said, single):
    """Each way on a run names: ``--resume`` for a single run; the sweep's command in backticks
    in a sweep's job (the regex the sweep rewrote them with after the fact is gone)."""
    monkeypatch.setattr("ratchet_ray.loop.driver.RETRY_PAUSE_S", 0.0)
    spec = SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=2)
    run_dir = leave_run(spec, "A1_s42", 1)
    monkeypatch.delenv(SWEEP_COMMAND_ENV, raising=False)
    assert single.format(run=run_dir) in said(run_dir)
    monkeypatch.setenv(SWEEP_COMMAND_ENV, RERUN)
    text = said(run_dir)
    assert f"`{RERUN}`" in text and "--resume" not in text, text


def test_a_cause_naming_no_way_on_ends_with_the_sweeps_command_once():
    assert sweep_cause("ValueError: bad", RERUN) == \
        f"ValueError: bad; rerun the sweep to resume it: `{RERUN}`"
    named = f"round 0 eval: ...; then continue with `{RERUN}`"
    assert sweep_cause(named, RERUN) == named


def test_a_driver_whose_run_dir_was_deleted_makes_no_bare_one_again(tmp_path, caplog):
    """The sweep folder deleted mid-sweep: the interrupted drivers wrote ``stopped.json`` and
    ``loop.json`` into a run dir made again, which the next report listed as an unfinished run.
    Now nothing is made, the log says the folder is gone, and so does the exit line."""
    from ratchet_ray.loop.breaker import RunStopped
    from ratchet_ray.loop.stops import RunInterrupted, record_interrupt, record_stop

    spec = SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=2)
    run_dir = leave_run(spec, "A1_s42", 1)
    run = RunDir.open(run_dir)
    config = run.config()
    shutil.rmtree(tmp_path / "runs")
    with caplog.at_level(logging.ERROR, logger="ratchet_ray"):
        assert isinstance(record_interrupt(run, config), RunInterrupted)
        stop = RunStopped("round 1 eval: ...")
        assert record_stop(run, config, stop) is stop
    assert not (tmp_path / "runs").exists()
    gone = [r.getMessage() for r in caplog.records if "is gone" in r.getMessage()]
    assert len(gone) == 2 and all(str(run_dir) in line for line in gone), gone

    from click.testing import CliRunner

    from ratchet_ray.cli.run import run as run_command
    from ratchet_ray.loop import driver

    def interrupt(*_, **__):
        raise RunInterrupted(run_dir, 1, 1, 2)

    spare = leave_run(spec, "A1_s7", 0)  # a run dir the command line can name
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(driver, "run_loop", interrupt)
        done = CliRunner().invoke(run_command, ["--resume", str(spare)])
    assert done.exit_code == 130, done.output
    assert done.output.strip().splitlines()[-1] == (
        f"interrupted in round 1 of 2 (1 round(s) finished); its run dir {run_dir} is gone "
        "(deleted while the run ran), so nothing was recorded")


def test_an_interrupt_whose_record_failed_does_not_say_it_was_recorded(tmp_path, monkeypatch):
    """The exit line said "recorded in .../stopped.json" even when that write had failed (only
    the log said so); now it says what failed, and still how to continue."""
    from click.testing import CliRunner

    from ratchet_ray.cli.run import run as run_command
    from ratchet_ray.loop import driver, stops

    spec = SweepSpec(suite="mbpp", out_dir=tmp_path, rounds=2)
    run_dir = leave_run(spec, "A1_s42", 1)
    run = RunDir.open(run_dir)

    def refused(path, _data, root=None):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(stops, "atomic_write_json", refused)
    interrupt = stops.record_interrupt(run, run.config())
    assert interrupt.unrecorded.startswith(f"writing {run_dir / 'stopped.json'} failed")
    monkeypatch.setattr(driver, "run_loop", lambda *_, **__: (_ for _ in ()).throw(interrupt))
    done = CliRunner().invoke(run_command, ["--resume", str(run_dir)])
    line = done.output.strip().splitlines()[-1]
    assert done.exit_code == 130 and "recorded in" not in line, line
    assert f"not recorded: writing {run_dir / 'stopped.json'} failed" in line
    assert f"--resume {run_dir}" in line.split("; continue with: ")[1], line
