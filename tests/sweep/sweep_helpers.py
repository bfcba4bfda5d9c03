"""What the sweep's tests share: a run dir as an arm-seed leaves it, a stand-in driver (a
process that sleeps, then exits with a given code, and winds down on SIGINT as ``jobs.skill_loop``
does) and the command that continues the sweep."""

from __future__ import annotations

import sys
from pathlib import Path

from ratchet_ray.loop.rundir import RunDir
from ratchet_ray.run_config.files import load_config
from ratchet_ray.sweep.spec import Job, SweepSpec
from ratchet_ray.types import RoundSummary


def leave_run(spec: SweepSpec, name: str, rounds_done: int) -> Path:
    """A run dir as a child of ``name`` leaves it, with ``rounds_done`` finished rounds."""
    config = load_config([], [f"results_dir={spec.out_dir / 'runs' / name}",
                              f"rounds={spec.rounds}", f"tag={name}"])
    run = RunDir.create(config, ["Mbpp/2"], ["Mbpp/3"])
    for r in range(rounds_done):
        run.write_summary(RoundSummary(round=r))
    return run.path


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


def sleeper(tmp_path: Path, name: str, sleep: float, code: int = 0) -> Job:
    return Job(name, "new", [sys.executable, "-c", CHILD, str(sleep), str(code)],
               tmp_path / "logs" / f"{name}.log", tmp_path / "runs" / name)
