"""Cost of an impossible twin (``suites/swebench/proof/twin.py``) on the local images: for each local
instance with a mutable FAIL_TO_PASS test, its gold patch graded as the twin with a fresh
gold-record folder (the gold and twin records made on the first grade), then ``REPEATS`` more times with the
record stored (each a new patch key, so nothing is read from the cache). Prints a Markdown table
of the seconds, from the grades' traces; every twin of the gold patch must fail.

Run: ``.venv/bin/python tests/suites/swebench/measure_twin.py`` (Docker and the base image of
``.ci/docker_setup.sh``; about 2 minutes).
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from measure_common import LIMITS, local_dataset  # noqa: E402
from ratchet_ray.suites.swebench.grader import SwebenchGrader  # noqa: E402
from ratchet_ray.suites.swebench.settings import SwebenchSettings  # noqa: E402
from ratchet_ray.suites.swebench.proof.twin import impossible_twin  # noqa: E402

REPEATS = 3
COST = re.compile(r"cost: twin session ([\d.]+)s; gold and twin records ([\d.]+)s "
                  r"\((made now|stored)\)")


def main() -> None:
    tmp, rows, tasks = local_dataset("ratchet-measure-twin-")
    limits = LIMITS
    settings = SwebenchSettings(namespace=None, cache_level="instance", memory_mb=512,
                                pids_limit=256, dataset_name=str(tmp / "local.jsonl"),
                                gold_records=str(tmp / "gold"))
    grader = SwebenchGrader(settings, limits, tmp / "run")
    print("| instance | runner | first twin (records made now) | gold and twin records, once "
          "| twin session | whole twin grade |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        iid = row["instance_id"]
        twin = impossible_twin(tasks[iid])
        if twin is None:
            print(f"| {iid} | {row['log_parser'].removeprefix('parse_log_')} | no twin (nothing "
                  "to mutate) | | | |")
            continue
        found: list[tuple[float, float, str, float]] = []
        for repeat in range(REPEATS + 1):
            patch = row["patch"] + "\n" * repeat  # a new patch key: graded, not cached
            for attempt in range(3):  # an image removed meanwhile (a shared daemon): again
                result = grader.grade(twin, patch + "\n\n" * attempt)
                if not result.infra_failure:
                    break
            m = COST.search(result.trace)
            if result.passed or m is None:
                raise SystemExit(f"{iid}: the gold patch's twin: {result.exit_status}\n{result.trace}")
            found.append((float(m.group(1)), float(m.group(2)), m.group(3), result.duration_s))
        made = [f for f in found if f[2] == "made now"]
        stored = [f for f in found if f[2] == "stored"]
        med = lambda i: statistics.median(x[i] for x in stored)  # noqa: E731
        first = f"{made[0][3]:.1f} s" if made else "-"
        gold = f"{made[0][1]:.1f} s" if made else "-"
        print(f"| {iid} | {row['log_parser'].removeprefix('parse_log_')} | {first} | {gold} "
              f"| {med(0):.1f} s | {med(3):.1f} s |")


if __name__ == "__main__":
    main()
