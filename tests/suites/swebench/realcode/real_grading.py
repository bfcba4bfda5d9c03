"""Patches graded on a real project's instance set in this process, as a run's Grader grades them.

``RealGrading(dataset, folder, client)`` holds one ``SwebenchGrader`` on the set (local builds
from each instance's dockerfile, instance images kept, the set's gold patches for the gold
records, canary sessions two at a time); ``grade(instance_id, patch)`` is that grader's verdict.
``rows(dataset)`` reads a set's records; ``base_file(row, path)`` is a file of the agent's tree
that the instance's bug does not touch, read from the project image the instance is built on.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ratchet_ray.suites.swebench.dataset import normalize_all, to_task
from ratchet_ray.suites.swebench.grader import SwebenchGrader
from ratchet_ray.suites.swebench.settings import GradingLimits, SwebenchSettings
from ratchet_ray.types import GradeResult


def rows(dataset: Path) -> dict[str, dict]:
    return {row["instance_id"]: row for row in map(json.loads, dataset.read_text().splitlines())}


def base_file(row: dict, path: str) -> str:
    """``path`` as the agent's tree has it; only for a file the bug (the gold patch) leaves
    alone, so the project image's clean tree has the same text."""
    assert f"diff --git a/{path} b/{path}" not in row["patch"], \
        f"the bug of {row['instance_id']} edits {path}"
    image = row["realcode"]["project_image"]
    done = subprocess.run(["docker", "run", "--rm", "--network", "none", image, "cat", f"/testbed/{path}"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{path} not read from {image}: {done.stderr[-500:]}"
    return done.stdout


class RealGrading:
    """One grader on a real instance set; grades kept under ``folder``."""

    def __init__(self, dataset: Path, folder: Path, client, gold_records: Path | None = None):
        self.rows = rows(dataset)
        settings = SwebenchSettings(
            namespace=None, cache_level="instance", memory_mb=1024, dataset_name=str(dataset),
            gold_records=str(gold_records or folder / "gold"), lock_dir=str(folder / "locks"),
            canary_parallel=2)
        limits = GradingLimits(timeout_s=300, instance_deadline_s=900)
        self.grader = SwebenchGrader(settings, limits, folder / "run", client=client)
        self.tasks = {i["instance_id"]: to_task(i) for i in normalize_all(list(self.rows.values()), "local")}

    def grade(self, instance_id: str, patch: str) -> GradeResult:
        return self.grader.grade(self.tasks[instance_id], patch)
