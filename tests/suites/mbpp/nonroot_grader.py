"""Test helper: grade outputs with a real MbppGrader in THIS process (run as a non-root uid).

Usage: ``python nonroot_grader.py STORE_DIR`` with ``[{"task_id", "output"}, ...]`` as JSON on
stdin; prints one JSON line per grade (passed, exit_status, infra_failure, trace) and a first
line with the sandbox's description. Limits are small so hostile code is bounded quickly."""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.environ["RATCHET_REPO"])

from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus, to_tasks  # noqa: E402
from ratchet_ray.suites.mbpp.grader import MbppGrader  # noqa: E402
from ratchet_ray.suites.mbpp.groundtruth import GroundTruthStore  # noqa: E402
from ratchet_ray.suites.mbpp.sandbox import SandboxLimits  # noqa: E402


def main() -> int:
    dataset = load_mbpp_plus(os.environ["MBPP_OVERRIDE_PATH"])
    limits = json.loads(os.environ["RATCHET_TEST_LIMITS"])
    grader = MbppGrader(dataset, groundtruth=GroundTruthStore(dataset, cache_dir=sys.argv[1]),
                        limits=SandboxLimits(**limits))
    tasks = {task.task_id: task for task in to_tasks(dataset)}
    print(json.dumps({"uid": os.getuid(), "euid": os.geteuid(), "isolation": grader.isolation}),
          flush=True)
    for job in json.load(sys.stdin):
        result = grader.grade(tasks[job["task_id"]], job["output"])
        print(json.dumps({"passed": result.passed, "exit_status": result.exit_status,
                          "infra_failure": result.infra_failure, "trace": result.trace}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
