"""Flake hunting: the whole suite N times in random orders, as ``make test`` runs it, and the quick
suite M more times; every test that failed at least once is reported (zero tolerance: a flaky test
is a bug, never re-run to green).

    python .ci/flake.py [--runs 2] [--quick-runs 1] [--workers 3] [--seed S] [-- extra pytest args]

A whole run is ``make test``'s: every test but the ``exclusive`` ones on ``--workers``
pytest-xdist workers (``--dist loadgroup``, the groups of ``tests/conftest.py``), then the
``exclusive`` ones alone. A quick run is the same without the ``slow`` tests: more orders for less
time. Every run shuffles modules and tests with ``--shuffle-seed`` (seed S, S+1, ...; S printed,
so a failing order can be replayed). Exit status 1 when any test failed in any run. Writes a
JUnit report per run under ``.ci/flake-reports/``.
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
    parser.add_argument("--runs", type=int, default=2,
                        help="whole-suite runs, shuffled, as `make test`")
    parser.add_argument("--quick-runs", type=int, default=1,
                        help="more shuffled runs of the quick suite (no `slow` tests)")
    parser.add_argument("--workers", type=int, default=3,
                        help="pytest-xdist workers, as `make test` (TEST_WORKERS)")
    parser.add_argument("--seed", type=int, default=random.randrange(1, 10**6))
    parser.add_argument("extra", nargs="*", help="passed on to pytest (after --)")
    opts = parser.parse_args()
    REPORTS.mkdir(parents=True, exist_ok=True)
    print(f"[flake] seed {opts.seed}: {opts.runs} whole run(s), {opts.quick_runs} quick run(s), "
          f"{opts.workers} worker(s)", flush=True)
    failed: dict[str, list[str]] = defaultdict(list)
    times: list[tuple[str, float]] = []
    parallel = ["-n", str(opts.workers), "--dist", "loadgroup"] if opts.workers > 1 else []
    plan: list[tuple[str, list[str]]] = []
    for k in range(opts.runs):
        plan.append((f"whole-{k}", [*parallel, "-m", "not exclusive",
                                    f"--shuffle-seed={opts.seed + k}"]))
        plan.append((f"whole-exclusive-{k}", ["-m", "exclusive"]))
    plan += [(f"quick-{k}", [*parallel, "-m", "not slow and not exclusive",
                             f"--shuffle-seed={opts.seed + opts.runs + k}"])
             for k in range(opts.quick_runs)]
    for label, args in plan:
        bad, seconds = run(label, [*args, *opts.extra])
        times.append((label, seconds))
        for test in bad:
            failed[test].append(label)
    print("\n[flake] report")
    for label, seconds in times:
        print(f"  {label:<18} {seconds / 60:6.1f} min")
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
