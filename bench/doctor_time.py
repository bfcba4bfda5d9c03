"""Wall time of ``ratchet doctor --llm local`` against the README's "< 30 s" pre-flight promise.

The doctor starts a local Ray, loads the packaged model and the embedder, checks the dataset and
the sandbox, with the start-ups overlapping (``ratchet_ray/llm/doctor.py``). Each run is a fresh
process, as a user runs it; the script prints every run's seconds, the median, and the ratio of
the 30 s target to the median (target: >= 1.0, the doctor finishes within the promise). Run it on
a quiet machine: it measures the doctor, not its neighbours.

    python bench/doctor_time.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

TARGET_S = 30.0


def one_run() -> float:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("RAY_ADDRESS", None)  # the doctor's own local Ray, not a cluster this shell points at
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ratchet_ray.cli", "doctor", "--llm", "local"],
                          capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"ratchet doctor failed (exit {proc.returncode}); fix what it names first:\n"
                 f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = [one_run() for _ in range(parser.parse_args().runs)]
    median = statistics.median(runs)
    print("doctor --llm local, s per run: " + ", ".join(f"{s:.1f}" for s in runs))
    print(f"median {median:.1f} s; target {TARGET_S:.0f} s; ratio target/median {TARGET_S / median:.2f}"
          " (>= 1.0 meets it)")


if __name__ == "__main__":
    main()
