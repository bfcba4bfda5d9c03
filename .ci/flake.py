"""Flake hunting: the quick suite N times in random orders, the slow suite twice; every test that
failed at least once is reported (zero tolerance: a flaky test is a bug, never re-run to green).

    python .ci/flake.py [--runs 3] [--slow-runs 2] [--workers 2] [--seed S] [-- extra pytest args]

As ``make test`` runs them: the quick suite, then the slow suite, on ``--workers`` pytest-xdist
workers (``--dist loadgroup``), then the ``exclusive`` tests alone. Each quick run shuffles
modules and tests with ``--shuffle-seed`` (seed S, S+1, ...; S printed, so a failing order can
be replayed); the slow runs keep file order. Exit status 1 when any test failed in any run. Writes a JUnit report per
run under ``.ci/flake-reports/``.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / ".ci" / "flake-reports"


def failures(junit: Path) -> list[str]:
    """Node ids of the tests that failed or errored in one JUnit report."""
    if not junit.is_file():
        return ["(no report: pytest did not finish)"]
    failed = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(f"{case.get('classname')}::{case.get('name')}")
    return failed


def run(label: str, args: list[str]) -> tuple[list[str], float]:
    junit = REPORTS / f"{label}.xml"
    junit.unlink(missing_ok=True)
    started = time.monotonic()
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           f"--junitxml={junit}", *args]
    print(f"[flake] {label}: {' '.join(cmd[3:])}", flush=True)
    subprocess.run(cmd, cwd=ROOT, check=False)
    return failures(junit), time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="quick-suite runs, shuffled")
    parser.add_argument("--slow-runs", type=int, default=2, help="slow-suite runs, file order")
    parser.add_argument("--workers", type=int, default=2,
                        help="pytest-xdist workers, as `make test` (TEST_WORKERS)")
    parser.add_argument("--seed", type=int, default=random.randrange(1, 10**6))
    parser.add_argument("extra", nargs="*", help="passed on to pytest (after --)")
    opts = parser.parse_args()
    REPORTS.mkdir(parents=True, exist_ok=True)
    print(f"[flake] seed {opts.seed}: {opts.runs} shuffled quick run(s), {opts.slow_runs} "
          f"slow run(s)", flush=True)
    failed: dict[str, list[str]] = defaultdict(list)
    times: list[tuple[str, float]] = []
    parallel = ["-n", str(opts.workers), "--dist", "loadgroup", "--max-worker-restart=0"] if opts.workers > 1 else []
    plan = [(f"quick-{k}", [*parallel, "-m", "not slow and not exclusive and not realcode_large",
                            f"--shuffle-seed={opts.seed + k}"]) for k in range(opts.runs)]
    for k in range(opts.slow_runs):
        plan += [(f"slow-{k}", [*parallel, "-m", "slow and not exclusive and not realcode_large"]),
                 (f"exclusive-{k}", ["-m", "exclusive and not realcode_large"])]
    for label, args in plan:
        bad, seconds = run(label, [*args, *opts.extra])
        times.append((label, seconds))
        for test in bad:
            failed[test].append(label)
    print("\n[flake] report")
    for label, seconds in times:
        print(f"  {label:<10} {seconds / 60:6.1f} min")
    print(f"  runs {len(plan)}, total {sum(s for _, s in times) / 60:.1f} min, seed {opts.seed}")
    if not failed:
        print("  failures: 0")
        return 0
    print(f"  failures: {len(failed)} test(s) failed at least once")
    for test, labels in sorted(failed.items()):
        print(f"    {test}: {', '.join(labels)}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
