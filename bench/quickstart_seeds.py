"""The quickstart (`make run`) over several seeds: does it show a skill learned and then used?

Each seed runs the README's own command, ``make run`` with ``RUN_FLAGS="--seed S --quiet"``, so
the Makefile's quickstart flags are the ones measured. From each run's evidence
(``report.learned``) it prints a markdown row: wall seconds, skills made per round, the first
round a learned skill was routed in, the tasks it was routed to and how many passed, and the
eval pass@1 of round 0 and the last round with n. The last line is the share of seeds that showed
a skill learned and then routed (target: every seed) and the ratio of the slowest run to the
5-minute budget (target: <= 1.0). Run it on a quiet machine: the wall time is the user's.

    python bench/quickstart_seeds.py [--seeds 1-5] [--results DIR] [--run-flags "--rounds 1"]

``--run-flags``: more of ``ratchet run``'s options after the seed's; the figures of the target
are the quickstart's own, without it. Each run's terminal output (what the user reads) is kept
beside its run as ``seed<S>.stderr.log`` under ``--results``. The suite runs this bench at seed 1
with the quickstart's own flags (tests/loop/test_quickstart_learns.py): its row, its run dir
and its closing lines are the quickstart's test.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ratchet_ray.report.learned import learned_skills, story  # noqa: E402

BUDGET_S = 300.0


def seeds(text: str) -> list[int]:
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def one_seed(seed: int, results: Path, more: str = "") -> tuple[float, Path]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    flags = f"--seed {seed} --quiet --set results_dir={results} {more}".strip()
    started = time.perf_counter()
    proc = subprocess.run(["make", "-s", "run", f"RUN_FLAGS={flags}"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    (results / f"seed{seed}.stderr.log").write_text(proc.stderr)
    if proc.returncode != 0:
        sys.exit(f"seed {seed}: make run failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return elapsed, Path(proc.stdout.strip().splitlines()[-1])


def row(seed: int, wall: float, run_dir: Path) -> tuple[str, bool]:
    skills = learned_skills(run_dir)
    made: dict[int, int] = {}
    for skill in skills:
        made[skill.round] = made.get(skill.round, 0) + 1
    routed = [r for s in skills for r in s.routed]
    first = min((r.round for r in routed), default=None)
    lines = story(run_dir)
    eval_line = next((line for line in lines if line.startswith("eval pass@1")), "")
    shown = eval_line.split(";")[0].removeprefix("eval pass@1 ")
    cells = [str(seed), f"{wall:.0f}",
             ", ".join(f"r{r}: {n}" for r, n in sorted(made.items())) or "none",
             "-" if first is None else str(first),
             f"{sum(r.tasks for r in routed)} ({sum(r.passed for r in routed)} passed)",
             shown + (" (within noise)" if "within noise" in eval_line else "")]
    return "| " + " | ".join(cells) + " |", first is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-5", help="a seed or a range, e.g. 1-5")
    parser.add_argument("--results", type=Path, default=None,
                        help="where the runs go (default: a temporary folder)")
    parser.add_argument("--run-flags", default="",
                        help="more `ratchet run` options after the seed's, e.g. \"--rounds 1\"")
    args = parser.parse_args()
    results = args.results or Path(tempfile.mkdtemp(prefix="quickstart_seeds_"))
    results.mkdir(parents=True, exist_ok=True)
    print("| seed | wall s | skills made | first routed round | tasks routed | eval pass@1 |")
    print("|---|---|---|---|---|---|")
    shown, walls = 0, []
    for seed in seeds(args.seeds):
        wall, run_dir = one_seed(seed, results, args.run_flags)
        line, routed = row(seed, wall, run_dir)
        print(line, flush=True)
        shown += routed
        walls.append(wall)
    print(f"seeds showing a skill learned then routed: {shown}/{len(walls)}; slowest run / "
          f"{BUDGET_S:.0f} s budget = {max(walls) / BUDGET_S:.2f} (runs in {results})")


if __name__ == "__main__":
    main()
