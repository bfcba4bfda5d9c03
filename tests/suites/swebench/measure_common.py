"""What the measure scripts of this folder share: the local instances written as a dataset file."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import swebench_instances  # noqa: E402
import unittest_instances  # noqa: E402
from ratchet_ray.suites.swebench.dataset import normalize_all, to_task  # noqa: E402
from ratchet_ray.suites.swebench.settings import GradingLimits  # noqa: E402
from ratchet_ray.types import Task  # noqa: E402

LIMITS = GradingLimits(timeout_s=60, instance_deadline_s=300)


def local_dataset(prefix: str) -> tuple[Path, list[dict], dict[str, Task]]:
    """A fresh temporary folder holding ``local.jsonl`` (every local instance: the pytest ones
    and the django/sympy stand-ins), the instances' rows and their tasks by id."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    rows = swebench_instances.make_instances() + unittest_instances.make_instances()
    (tmp / "local.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp, rows, {i["instance_id"]: to_task(i) for i in normalize_all(rows, "local")}
