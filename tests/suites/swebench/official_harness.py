"""The official SWE-bench harness (``swebench.harness.run_evaluation``, installed with the
``swebench`` extra) run as its command line on a predictions file, offline, on the local images:
what ``bench/swe_harness_agreement.py`` (and its tiny run in ``tests/bench/``) compares this
project's verdicts with.

- ``harness_dataset(rows, path, image_of)``: the instances written as a JSONL dataset the harness
  reads, each naming its image in the ``image`` field (the harness takes the image from there,
  finds it present and pulls nothing; the local images are named as swebench names them).
- ``official_grades(dataset, predictions, folder, run_id, workers, timeout_s)``: runs the harness
  in ``folder`` (its logs go to ``folder/logs``, its run report to ``folder``) and returns
  ``{instance_id: resolved|unresolved|error|empty|infra|ambiguous}`` from its run report (a
  later list wins); raises ``RuntimeError`` naming ``folder/harness.out`` when it fails.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

REPORT_LISTS = (("resolved", "resolved_ids"), ("unresolved", "unresolved_ids"),
                ("error", "error_ids"), ("empty", "empty_patch_ids"),
                ("infra", "infra_failure_ids"), ("ambiguous", "ambiguous_failure_ids"))


def harness_dataset(rows: list[dict], path: Path, image_of: Callable[[str], str]) -> Path:
    path.write_text("".join(json.dumps({**r, "image": image_of(r["instance_id"])}) + "\n"
                            for r in rows))
    return path


def official_grades(dataset: Path, predictions: Path, folder: Path, run_id: str, workers: int = 2,
                    timeout_s: int = 60) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "swebench.harness.run_evaluation", "-d", str(dataset),
         "-p", str(predictions), "-id", run_id, "--max_workers", str(workers),
         "-t", str(timeout_s), "--report_dir", str(folder)],
        cwd=folder, capture_output=True, text=True)
    (folder / "harness.out").write_text(proc.stdout + proc.stderr)
    reports = list(folder.glob(f"*.{run_id}.json"))
    if proc.returncode != 0 or not reports:
        raise RuntimeError(f"the harness failed (exit {proc.returncode}); see "
                           f"{folder / 'harness.out'}")
    report = json.loads(reports[0].read_text())
    out: dict[str, str] = {}
    for status, key in REPORT_LISTS:
        for instance_id in report.get(key, []):
            out[instance_id] = status
    return out
