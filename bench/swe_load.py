"""A controlled CPU load for the SWE-bench benches, and what the machine's load was meanwhile.

- ``CpuLoad(n)``: a context manager that starts ``n`` busy processes (pure-Python spin loops at
  this process's priority, nothing else) and stops them on exit, however the block ends. Each
  spinner also watches its parent and exits when the bench is gone (a ``kill -9`` of the bench
  cannot leave one spinning), and an ``atexit`` hook stops any still running. ``n == 0`` starts
  nothing: the block runs at whatever load the machine has.
- ``LoadSampler``: samples the machine's load while a measurement runs (``/proc/loadavg``: the
  1-minute load average and the instantaneous count of runnable tasks, every ``period_s``) in a
  background thread; ``with LoadSampler() as load: ...`` then ``load.summary()`` ->
  ``{"loadavg_1m": [first, last], "runnable_mean": m, "runnable_max": x}``. The 1-minute
  average lags a change by about a minute, so the runnable count is the figure that says how
  loaded a measurement of tens of seconds was; the bench records both for every row, since
  other people's work on a shared machine adds to the controlled load.
"""

from __future__ import annotations

import atexit
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

# The spinner: a pure-Python loop that checks now and then whether its parent (the bench) is
# still alive, so no spinner outlives the bench however it ends.
_SPIN = ("import os, sys\n"
         "parent = int(sys.argv[1])\n"
         "while os.getppid() == parent:\n"
         "    for _ in range(200000):\n"
         "        pass\n")


class CpuLoad:
    """``n`` busy processes for the duration of a ``with`` block (module contract)."""

    def __init__(self, n: int, warm_s: float = 3.0):
        if n < 0:
            raise ValueError(f"--load {n}: give the number of busy processes, 0 or more")
        self.n, self.warm_s = n, warm_s
        self._procs: list[subprocess.Popen] = []

    def __enter__(self) -> "CpuLoad":
        atexit.register(self.stop)
        for _ in range(self.n):
            self._procs.append(subprocess.Popen(
                [sys.executable, "-c", _SPIN, str(os.getpid())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        if self.n:
            time.sleep(self.warm_s)  # the spinners are running before the first clock starts
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop every spinner this object started (idempotent)."""
        procs, self._procs = self._procs, []
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _read_loadavg(path: Path = Path("/proc/loadavg")) -> tuple[float, int]:
    """(1-minute load average, runnable tasks now) from ``/proc/loadavg``; the runnable count
    includes the reader itself, so one is taken off."""
    fields = path.read_text().split()
    return float(fields[0]), max(0, int(fields[3].split("/")[0]) - 1)


class LoadSampler:
    """The machine's load while a block runs (module contract)."""

    def __init__(self, period_s: float = 0.5):
        self.period_s = period_s
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="load-sampler")

    def _run(self) -> None:
        while True:
            self.samples.append(_read_loadavg())
            if self._stop.wait(self.period_s):
                return

    def __enter__(self) -> "LoadSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(_read_loadavg())

    def summary(self) -> dict:
        runnable = [r for _, r in self.samples] or [0]
        return {"loadavg_1m": [self.samples[0][0], self.samples[-1][0]] if self.samples else None,
                "runnable_mean": round(statistics.mean(runnable), 2),
                "runnable_max": max(runnable)}


def describe(summary: dict) -> str:
    """One short phrase for a printed row: ``load 1m 0.8->5.9, runnable 6.1 (max 9)``."""
    first, last = summary["loadavg_1m"] or (0.0, 0.0)
    return (f"load 1m {first:.1f}->{last:.1f}, runnable {summary['runnable_mean']:.1f} "
            f"(max {summary['runnable_max']})")
