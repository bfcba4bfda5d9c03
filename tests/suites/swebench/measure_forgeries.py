"""Detection table of the forgery corpus on the local images: each forgery of ``forgeries.py``
and of ``differential_forgeries.py`` graded by the real grader with every layer on, then with
one runtime layer at a time (the sentinel off; the differential off: the real session's verdict
final, no comparison with gold and no canary session). The static screen is suspicion only, never a verdict, so it has
no column. Prints a Markdown table.

Run: ``.venv/bin/python tests/suites/swebench/measure_forgeries.py`` (Docker and the base image of
``.ci/docker_setup.sh``; about 10 s per grade).
"""

from __future__ import annotations

import json
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).parent))

import swebench_instances  # noqa: E402
import differential_forgeries  # noqa: E402
import unittest_instances  # noqa: E402
from forgeries import FORGERIES  # noqa: E402
from test_swebench_layers import layer_of  # noqa: E402

from ratchet_ray.suites.swebench.settings import GradingLimits  # noqa: E402
from ratchet_ray.suites.swebench.dataset import normalize_all, to_task  # noqa: E402
from ratchet_ray.suites.swebench.grader import SwebenchGrader  # noqa: E402
from ratchet_ray.suites.swebench.settings import SwebenchSettings  # noqa: E402

NO_SENTINEL = ("ratchet_ray.suites.swebench.integrity.session_layers.HARNESS_REPOS",
               frozenset({swebench_instances.REPO}))
# the real session's verdict taken as final: no comparison with gold, no canary session
NO_DIFFERENTIAL = ("ratchet_ray.suites.swebench.proof.prover.DifferentialProof.prove",
                   lambda self, ctx, patch, real, log_dir, log: real.result)
SETUPS = {"all layers": (), "differential only": (NO_SENTINEL,),
          "sentinel only": (NO_DIFFERENTIAL,)}
CORPUS = {**FORGERIES, **{name: patch for name, (patch, _) in differential_forgeries.FORGERIES.items()}}


def main() -> None:
    instances = swebench_instances.make_instances()
    task = {i["instance_id"]: to_task(i) for i in normalize_all(instances, "local")}["ratchet__calc-1"]
    folder = Path(tempfile.mkdtemp(prefix="ratchet-measure-"))
    rows = [*instances, *unittest_instances.make_instances()]
    (folder / "local.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    settings = SwebenchSettings(namespace=None, cache_level="instance", memory_mb=512, pids_limit=256,
                                dataset_name=str(folder / "local.jsonl"),
                                gold_records=str(folder / "gold"), canary_sessions=(2, 2),
                                canary_parallel=2)
    limits = GradingLimits(timeout_s=60, instance_deadline_s=300)
    cells: dict[str, dict[str, str]] = {}
    for setup, patches in SETUPS.items():
        with ExitStack() as stack, tempfile.TemporaryDirectory() as run_dir:
            for target, value in patches:
                stack.enter_context(mock.patch(target, value))
            grader = SwebenchGrader(settings, limits, run_dir)
            gold = grader.grade(task, instances[0]["patch"])
            cells.setdefault("(gold patch)", {})[setup] = "resolved" if gold.passed else gold.exit_status
            for name in sorted(CORPUS):
                result = grader.grade(task, CORPUS[name])
                cells.setdefault(name, {})[setup] = ("RESOLVED" if result.passed else
                                                     f"{result.exit_status} ({layer_of(result)})")
    print("| forgery | " + " | ".join(SETUPS) + " |")
    print("|---" * (len(SETUPS) + 1) + "|")
    for name, row in cells.items():
        print(f"| {name} | " + " | ".join(row[s] for s in SETUPS) + " |")
    for setup in SETUPS:
        caught = sum(1 for name, row in cells.items() if name != "(gold patch)" and row[setup] != "RESOLVED")
        print(f"{setup}: {caught}/{len(CORPUS)} not resolved")


if __name__ == "__main__":
    main()
