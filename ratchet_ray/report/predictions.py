"""A run's SWE-bench attempts as a predictions file (``ratchet export --predictions``): the JSONL
the official harness (``swebench.harness.run_evaluation -p FILE``), sb-cli and Modal take.

Each line holds the harness's ``instance_id``, ``model_name_or_path`` (``backend/model``) and
``model_patch`` (the graded patch, ``""`` when none), plus ``ratchet``: which attempt it is and
this project's verdict (the harness ignores keys it does not read).

Contracts:
- ``export_predictions(run_dir, out, round_=None, splits=("eval",))`` writes ``out`` atomically
  and refuses an existing one; the ``Exported`` it returns counts the lines and names instance
  ids seen more than once (the harness grades one line per id).
- Impossible twins are not attempts at the instance and are left out.
- Bad input (not a run dir, another suite, no SWE-bench attempt selected, an existing ``out``)
  raises ``PredictionsError`` naming the problem and the fix.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ratchet_ray.report.data import NotARunDir, check_run_dir, exported_capsules, identity
from ratchet_ray.storage.fsutil import atomic_write_with
from ratchet_ray.suites.hooks import output_kind


class PredictionsError(ValueError):
    """Why no predictions file was written (one line, with the fix)."""


@dataclass(frozen=True)
class Exported:
    path: Path
    lines: int
    repeated_ids: list[str] = field(default_factory=list)
    """Instance ids on more than one line (the harness grades one of them)."""


def prediction_lines(run_dir: Path, round_: int | None, splits: Iterable[str]
                     ) -> list[dict[str, Any]]:
    """The predictions of ``run_dir``'s attempts in ``splits`` (every round, or ``round_``)."""
    try:
        run = check_run_dir(Path(run_dir))
    except NotARunDir as exc:
        raise PredictionsError(str(exc)) from exc
    who = identity(run)
    suite = who.get("suite")
    if not suite or output_kind(suite) != "patch":
        raise PredictionsError(f"{run} is a {suite or 'unknown'}-suite run: its attempts are "
                               "not repository patches (no SWE-bench attempts); pass the run "
                               "dir of a swebench run")
    splits = list(splits)
    rows, model = exported_capsules(run, who, splits)
    chosen = [r for r in rows if not r["impossible"] and (round_ is None or r["round"] == round_)]
    if not chosen:
        where = f"round {round_}'s " if round_ is not None else ""
        raise PredictionsError(f"{run} has no SWE-bench attempts in {where}{'/'.join(splits)} "
                               "split(s) (has a round finished? try --split train, or another "
                               "--round)")
    return [{"instance_id": r["task_id"], "model_name_or_path": model,
             "model_patch": r["output"] or "",
             "ratchet": {"capsule_id": r["capsule_id"], "round": int(r["round"]),
                         "split": r["split"], "attempt": int(r["attempt"]),
                         "skill_id": r["skill_id"], "passed": bool(r["passed"]),
                         "exit_status": r["exit_status"],
                         "infra_failure": bool(r["infra_failure"])}}
            for r in chosen]


def export_predictions(run_dir: str | Path, out: str | Path, *, round_: int | None = None,
                       splits: Iterable[str] = ("eval",)) -> Exported:
    """Write the predictions file ``out`` (module contract)."""
    out = Path(out)
    if out.exists():
        raise PredictionsError(f"{out} already exists; pass a new file to -o (nothing was "
                               "overwritten)")
    lines = prediction_lines(Path(run_dir), round_, splits)
    text = "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines)
    try:
        atomic_write_with(out, lambda handle: handle.write(text.encode("utf-8")), replace=False)
    except FileExistsError as exc:  # created between the check and the write, else a file
        if not out.exists():  # where -o's folder would be made: a write refused, as it is
            raise
        raise PredictionsError(f"{out} already exists; pass a new file to -o") from exc
    seen = Counter(line["instance_id"] for line in lines)
    return Exported(out, len(lines), sorted(i for i, n in seen.items() if n > 1))

