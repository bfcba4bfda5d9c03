"""Quarantine: the SWE-bench instances a run must not use, because validation found their
verdict wrong or unstable (``ratchet swe validate --repeat N``).

Contracts:
- A quarantine file: ``{"version": 1, "dataset": ..., "instances": {id: {"reason": ...,
  "repeats": N, "gold_resolved": k, "validation": <out dir>}}}``, or a JSON list of ids (reason
  "listed"). ``load_quarantine(path)``: id -> reason; a missing or malformed file raises
  ``QuarantineError`` (a ``DatasetError``) naming the file, what is wrong and the fix.
- ``update_quarantine(path, validated, found, ...)`` merges one validation, atomically: every
  instance of ``validated`` is listed exactly when ``found`` names it; others keep their entries.
- ``excluded(settings)`` is what runs and subset selection leave out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from ratchet_ray.storage.fsutil import atomic_write_text
from ratchet_ray.suites.swebench.dataset import DatasetError
from ratchet_ray.suites.swebench.settings import SwebenchSettings

VERSION = 1
SUFFIX = ".quarantine.json"
FIX = ("write it with `ratchet swe validate --dataset DATASET --repeat 5`, or unset "
       "swebench.quarantine")


class QuarantineError(DatasetError):
    """A quarantine file cannot be used; the message names the file and the fix."""


def default_path(dataset: str) -> Path | None:
    """``<file>.quarantine.json`` next to a local dataset file; None for a Hub dataset id."""
    path = Path(dataset).expanduser()
    return path.with_name(path.name + SUFFIX) if path.is_file() else None


def _entries(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise QuarantineError(f"quarantine file {path} does not exist; {FIX}") from exc
    except OSError as exc:
        raise QuarantineError(f"quarantine file {path}: cannot read it ({exc.strerror or exc}); "
                              f"{FIX}") from exc
    except ValueError as exc:
        raise QuarantineError(f"quarantine file {path} is not JSON ({exc}); {FIX}") from exc
    instances = data.get("instances") if isinstance(data, dict) else data
    if isinstance(instances, list) and all(isinstance(i, str) for i in instances):
        return {i: {"reason": "listed"} for i in instances}
    if not isinstance(instances, dict) or not all(
            isinstance(v, dict) for v in instances.values()):
        raise QuarantineError(f"quarantine file {path}: expected {{\"instances\": {{id: "
                              f"{{\"reason\": ...}}}}}} or a JSON list of instance ids; {FIX}")
    return {str(k): v for k, v in instances.items()}


def load_quarantine(path: str | Path) -> dict[str, str]:
    """Instance id -> why it is quarantined (module contract)."""
    return {i: str(e.get("reason") or "listed") for i, e in _entries(Path(path)).items()}


def update_quarantine(path: str | Path, validated: Iterable[str], found: Mapping[str, str], *,
                      dataset: str, repeats: int, gold_resolved: Mapping[str, int],
                      source: str) -> dict[str, str]:
    """Merge one validation into the file at ``path`` (module contract); returns the file's
    id -> reason after the merge."""
    path = Path(path)
    entries = _entries(path) if path.exists() else {}
    for instance_id in validated:
        entries.pop(instance_id, None)
    for instance_id, reason in found.items():
        entries[instance_id] = {"reason": reason, "repeats": repeats,
                                "gold_resolved": gold_resolved.get(instance_id, 0),
                                "validation": source}
    doc = {"version": VERSION, "dataset": dataset,
           "instances": dict(sorted(entries.items()))}
    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")
    return {i: str(e.get("reason") or "listed") for i, e in doc["instances"].items()}


def excluded(settings: SwebenchSettings) -> dict[str, str]:
    """Id -> reason of the configured quarantine ({} when ``swebench.quarantine`` is unset)."""
    return load_quarantine(settings.quarantine) if settings.quarantine else {}


def quarantine_report(settings: SwebenchSettings) -> dict[str, Any]:
    """The file, how many instances it leaves out and why (module contract)."""
    found = excluded(settings)
    return {"file": settings.quarantine, "excluded": len(found), "instances": found}
