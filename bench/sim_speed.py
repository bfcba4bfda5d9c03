"""How fast the ``sim`` suite runs the real loop, and what a parallel sweep buys over a serial one.

    python bench/sim_speed.py [--rounds 100] [--sweep-rounds 20] [--arms default,A1,...,A8]
                              [--seeds 42] [--parallel 3] [--skip-sweep | --sweep-only]

1. One arm: ``python -m jobs.skill_loop sim --rounds R`` (60 train + 40 eval tasks, the Default
   governance, real Ray actors and Parquet evidence); prints the wall time, rounds per second,
   the start-up (wall minus the rounds' own ``wall_s``), the mean round of the first and the last
   tenth of the rounds (a per-round cost that grows with the evidence shows there), and the
   ratio to the target (100 rounds x 100 tasks in under 2 minutes, start-up included; a ratio
   below 1 meets it, scaled to R rounds).
2. The sweep: ``python -m jobs.ablations sim`` over ``--arms`` x ``--seeds`` at ``--sweep-rounds``,
   once with ``--parallel 1`` and once with ``--parallel P``; prints both wall times and the
   speed-up (bounded by the machine's cores: every sim driver is CPU-bound).
Wall times include Ray and actor start-up, as a user sees them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S_PER_100_ROUNDS = 120.0


def round_walls(results_dir: Path) -> list[float]:
    """``wall_s`` of every round of the one run under ``results_dir``, in round order."""
    summaries = sorted(results_dir.glob("sim/*/round_*/summary.json"),
                       key=lambda p: int(p.parent.name.split("_")[1]))
    return [float(json.loads(p.read_text())["wall_s"]) for p in summaries]


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env={**os.environ, "RAY_ADDRESS": ""})
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--sweep-rounds", type=int, default=20)
    parser.add_argument("--arms", default="default,A1,A2,A3,A4,A5,A6,A7,A8")
    parser.add_argument("--seeds", default="42")
    parser.add_argument("--parallel", type=int, default=3)
    parts = parser.add_mutually_exclusive_group()
    parts.add_argument("--skip-sweep", action="store_true", help="only part 1 (one arm)")
    parts.add_argument("--sweep-only", action="store_true", help="only part 2 (the sweep)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if not args.sweep_only:
            one_arm(args, Path(tmp))
        if not args.skip_sweep:
            sweep(args, Path(tmp))


def one_arm(args: argparse.Namespace, tmp: Path) -> None:
    """Part 1: one ``sim`` run of ``--rounds`` rounds, timed and set against the target."""
    wall = timed([sys.executable, "-m", "jobs.skill_loop", "sim", "--rounds", str(args.rounds),
                  "--quiet", "--set", f"results_dir={tmp}/one"])
    walls = round_walls(tmp / "one")
    tenth = max(1, len(walls) // 10)
    target = TARGET_S_PER_100_ROUNDS * args.rounds / 100
    print(f"sim one arm: {args.rounds} rounds x 100 tasks in {wall:.1f} s "
          f"= {args.rounds / wall:.2f} rounds/s (cores: {os.cpu_count()}, load "
          f"{os.getloadavg()[0]:.1f}); start-up {wall - sum(walls):.1f} s, mean round "
          f"{sum(walls) / len(walls):.2f} s (first {tenth}: "
          f"{sum(walls[:tenth]) / tenth:.2f} s, last {tenth}: "
          f"{sum(walls[-tenth:]) / tenth:.2f} s); target {target:.0f} s, ratio "
          f"{wall / target:.2f} ({'meets' if wall <= target else 'misses'} the target)")


def sweep(args: argparse.Namespace, tmp: Path) -> None:
    """Part 2: the ablation sweep over ``--arms`` x ``--seeds``, serial and ``--parallel P``."""
    runs = len(args.arms.split(",")) * len(args.seeds.split(","))
    walls = {}
    for parallel in (1, args.parallel):
        walls[parallel] = timed([sys.executable, "-m", "jobs.ablations", "sim",
                                 "--arms", args.arms, "--seeds", args.seeds,
                                 "--rounds", str(args.sweep_rounds),
                                 "--parallel", str(parallel),
                                 "--out", f"{tmp}/sweep_p{parallel}"])
    print(f"sim sweep: {runs} runs x {args.sweep_rounds} rounds: serial {walls[1]:.1f} s, "
          f"--parallel {args.parallel} {walls[args.parallel]:.1f} s, speed-up "
          f"{walls[1] / walls[args.parallel]:.2f}x")


if __name__ == "__main__":
    main()
