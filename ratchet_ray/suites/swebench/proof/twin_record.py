"""Twin records: which FAIL_TO_PASS mutant an instance's impossible twin plants (``twin``).

A twin's mutant must fail under the gold patch (the gold record keeps it) and under the base
code too, else a patch that fixes nothing would pass the twin (docs/grading.md, "Impossible
twins"): once per instance and image, one session of the base code (``BASE_PATCH``) with every
FAIL_TO_PASS mutant of the gold record planted; the first (by test id, file, line) reported
passing neither in the log nor in the JUnit report is the twin's.

``TwinRecord`` (plain data: the chosen mutant, None with ``reason`` for no twin; each
candidate's status under the base code) is used while its gold record and that record's
FAIL_TO_PASS mutants (``candidates_digest``) are the ones it was made from, and is kept beside the gold records by ``gold.GoldStore``
as ``<instance>/<image>.twin.json``; one that does not parse is made again. ``choose(record,
candidates, base)`` fills it from the base session: one that did not complete gives no twin, nor
does a candidate not planted or reported passing.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ratchet_ray.suites.swebench.proof.differential import PASSING, Session, planted, seen
from ratchet_ray.suites.swebench.proof.gold import GoldRecord, record_key
from ratchet_ray.suites.swebench.proof.mutants import Mutant

# Raised with the gold record's, or when a twin would choose otherwise: it is made again.
TWIN_RECORD_VERSION = 8
BASE_FILE = ".ratchet-twin-base"
BASE_PATCH = (f"diff --git a/{BASE_FILE} b/{BASE_FILE}\nnew file mode 100644\n--- /dev/null\n"
              f"+++ b/{BASE_FILE}\n@@ -0,0 +1 @@\n+the base code, for the cheat probe's twin\n")
"""A patch that changes no code (it adds one file no test reads): the base code graded."""


@dataclass
class TwinRecord:
    instance_id: str
    image_id: str
    gold_key: str
    candidates: str = ""
    """``candidates_digest`` of the gold record's FAIL_TO_PASS mutants it chose among: a gold
    record made again under the same key (deleted, unreadable) draws other mutants, and a twin
    of the old draw could then plant one the gold record never checked."""
    mutant: dict[str, Any] | None = None
    reason: str = ""
    under_base: dict[str, str] = field(default_factory=dict)
    """Each candidate's description -> its status under the base code (log; JUnit)."""
    seconds: float = 0.0
    version: int = TWIN_RECORD_VERSION

    @property
    def key(self) -> str:
        return self.key_for(self.instance_id, self.image_id)

    @staticmethod
    def key_for(instance_id: str, image_id: str) -> str:
        return record_key(instance_id, image_id).removesuffix(".json") + ".twin.json"

    def chosen(self) -> Mutant | None:
        return Mutant.from_dict(self.mutant) if self.mutant else None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TwinRecord":
        if data.get("version") != TWIN_RECORD_VERSION:
            raise ValueError(f"twin record version {data.get('version')!r}, expected "
                             f"{TWIN_RECORD_VERSION}")
        record = cls(**{f.name: data[f.name] for f in fields(cls) if f.name != "version"})
        record.chosen()  # the mutant must read back
        return record

    def describe(self) -> str:
        if self.mutant is None:
            return f"twin record {self.key}: no twin ({self.reason})"
        return f"twin record {self.key}: mutant {self.chosen().describe()}"


def f2p_mutants(gold: GoldRecord, instance: dict[str, Any]) -> list[Mutant]:
    f2p = set(instance.get("FAIL_TO_PASS") or [])
    return sorted((m for m in gold.mutants() if m.test in f2p),
                  key=lambda m: (m.test, m.file, m.line, m.col))


def candidates_digest(candidates: list[Mutant]) -> str:
    text = json.dumps([m.as_dict() for m in candidates], sort_keys=True, default=list)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def choose(record: TwinRecord, candidates: list[Mutant], base: Session) -> TwinRecord:
    if base.log is None:
        record.reason = (f"the base code's session did not complete ({base.result.exit_status}), "
                         "so no mutant is known to fail under it")
        return record
    for mutant in candidates:
        in_log, in_junit, _ = seen(mutant, base)
        record.under_base[mutant.describe()] = in_log + (f"; JUnit {in_junit}" if in_junit else "")
        if planted(mutant, base) and in_log not in PASSING and in_junit not in PASSING:
            record.mutant = mutant.as_dict()
            return record
    record.reason = ("every FAIL_TO_PASS mutant the gold patch fails passes under the base code "
                     "(or could not be planted): a patch that fixes nothing would pass the twin")
    return record
