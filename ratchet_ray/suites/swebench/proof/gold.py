"""Gold records: what the gold patch makes of every graded test, and which mutants it fails
(how they are made: docs/grading.md, "Gold records"; the sessions are ``prover``'s). A mutant
is kept when the gold patch with every candidate planted reports its test FAILED (PASSED
without it) and the base code fails it too; FAIL_TO_PASS ones dropped are drawn again
(``mutants.draw_kept``); one whose failure later spreads under gold (``spread``) is moved to
``dropped``.

``GoldStore(folder, artifacts)``: ``load(instance_id, image_id)`` from the run's artifacts,
else ``folder`` (``swebench.gold_records``, else ``$XDG_CACHE_HOME/ratchet/swebench-gold``),
else None; ``save(record)`` writes both (the folder's file atomically); a record that does not
parse is made again.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterator

from ratchet_ray.storage.fsutil import atomic_write_bytes
from ratchet_ray.suites.swebench.proof.mutants import Mutant

# Raised whenever a record made before would now keep or draw other mutants: it is made again.
RECORD_VERSION = 14


def default_folder() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ratchet", "swebench-gold")


@dataclass
class GoldRecord:
    instance_id: str
    image_id: str
    statuses: dict[str, str]
    """Every FAIL_TO_PASS / PASS_TO_PASS test's status under gold in the log (``MISSING`` when
    the log does not name it)."""
    junit: dict[str, str] = field(default_factory=dict)
    """The same tests' status in the JUnit report (pytest runners; ``MISSING`` when absent)."""
    resolved: bool = False
    """Whether swebench's report resolved the gold patch."""
    kept: list[dict[str, Any]] = field(default_factory=list)
    """The mutants the gold patch fails (``Mutant.as_dict()``)."""
    dropped: list[str] = field(default_factory=list)
    """Candidate mutants the gold patch did not fail, each with the status it got."""
    seconds: dict[str, float] = field(default_factory=dict)
    """What making it cost: ``gold`` (the gold session, 0 when it was the grade's own real
    session), ``mutants`` (the session with every candidate planted) and ``base`` (the base
    code's)."""
    version: int = RECORD_VERSION

    @property
    def key(self) -> str:
        return self.key_for(self.instance_id, self.image_id)

    @staticmethod
    def key_for(instance_id: str, image_id: str) -> str:
        return record_key(instance_id, image_id)

    def mutants(self) -> list[Mutant]:
        return [Mutant.from_dict(m) for m in self.kept]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GoldRecord":
        if data.get("version") != RECORD_VERSION:
            raise ValueError(f"gold record version {data.get('version')!r}, expected {RECORD_VERSION}")
        record = cls(**{f.name: data[f.name] for f in fields(cls) if f.name != "version"})
        record.mutants()  # every kept mutant must read back
        return record

    def describe(self) -> str:
        return (f"gold record {self.key}: gold {'resolves' if self.resolved else 'does NOT resolve'}"
                f", {len(self.kept)} mutant(s) it fails kept, {len(self.dropped)} dropped")


def record_key(instance_id: str, image_id: str) -> str:
    """``<instance>/<12 hex digits of the image id>.json``."""
    digest = image_id.split(":", 1)[-1][:12] or "unknown"
    return f"{instance_id}/{digest}.json"


class GoldStore:
    """Gold records in a folder shared by runs, and in the run's artifacts (``artifacts``: an
    ``Artifacts`` store, or None)."""

    def __init__(self, folder: str | Path | None, artifacts: Any = None):
        self.folder = Path(folder).expanduser() if folder else None
        self.artifacts = artifacts

    def load(self, instance_id: str, image_id: str, kind: Any = GoldRecord) -> Any:
        """The record of ``kind`` (``GoldRecord``, or ``twin_record.TwinRecord``) kept for this
        instance and image, or None (one unreadable or of another version is made again)."""
        for data in self.stored(kind.key_for(instance_id, image_id)):
            try:
                record = kind.from_dict(json.loads(data.decode("utf-8")))
            except (ValueError, KeyError, TypeError, UnicodeDecodeError):
                continue
            if record.instance_id == instance_id and record.image_id == image_id:
                return record
        return None

    def save(self, record: Any) -> None:
        data = json.dumps(record.as_dict(), indent=1, sort_keys=True).encode("utf-8")
        if self.artifacts is not None:
            self.artifacts.put(record.key, data)
        if self.folder is not None:
            atomic_write_bytes(self.folder / record.key, data)

    def stored(self, key: str) -> Iterator[bytes]:
        """The bytes kept under ``key``: the run's copy first, then the folder's (each that can
        be read; records kept next to the gold records, ``twin_record``, use it too)."""
        sources = []
        if self.artifacts is not None:
            sources.append(lambda: self.artifacts.get(key))
        if self.folder is not None:
            path = self.folder / key
            sources.append(lambda: path.read_bytes() if path.is_file() else None)
        for read in sources:
            try:
                data = read()
            except OSError:
                continue
            if data is not None:
                yield data
