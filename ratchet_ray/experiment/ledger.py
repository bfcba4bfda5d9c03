"""``results.tsv``: the append-only ledger of every experiment attempt, in the target worktree.

Contracts:
- One header line (``COLUMNS``), then one row per outcome, each a single ``write`` + ``fsync``
  to a file only opened for appending. Another header raises ``LedgerError`` (never rewritten).
- ``status`` is one of ``STATUSES``. Iteration 0 is the baseline (``keep``); a row noted
  ``interrupted`` is an attempt cut short by a kill, run again on resume and counted nowhere.
- Free text has tabs and newlines folded to spaces; ``vetoes`` and ``metrics`` are compact
  JSON; ``seeds`` is comma-separated.
- ``rows()`` skips a torn last line (a kill mid-write); the next ``append`` starts a fresh line.
  A whole line that does not parse (an edit gone wrong: a cell, a status, bytes not UTF-8), and
  a ledger this user may not read, raise ``LedgerError`` naming the file, the line and the fix.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ratchet_ray.storage.fsutil import cannot_read, read_tail

LEDGER_FILE = "results.tsv"
STATUSES = ("keep", "revert", "veto", "crash", "policy_violation", "discard", "needs_review")
INTERRUPTED = "interrupted"


class LedgerError(RuntimeError):
    """The ledger file is not one this engine wrote; the message names the file and the fix."""


@dataclass
class LedgerRow:
    iteration: int
    status: str
    branch: str = ""
    base_commit: str = ""
    candidate_commit: str = ""
    head_commit: str = ""
    scalar: float | None = None
    best_scalar: float | None = None
    noise_margin: float | None = None
    vetoes: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=list)
    wall_s: float = 0.0
    fix_attempts: int = 0
    proposer: str = ""
    reasoning: str = ""
    note: str = ""
    patch: str = ""
    log: str = ""
    time: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown ledger status {self.status!r}; valid: {', '.join(STATUSES)}")


COLUMNS = tuple(f.name for f in fields(LedgerRow))


def _cell(name: str, value: Any) -> str:
    if value is None:
        return ""
    if name in ("vetoes", "metrics"):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    if name == "seeds":
        return ",".join(str(s) for s in value)
    if isinstance(value, float):
        return f"{value:.6g}"
    return " ".join(str(value).split())  # tabs and newlines would break the row


def _parse(name: str, text: str) -> Any:
    if name in ("vetoes", "metrics"):
        return json.loads(text) if text else ([] if name == "vetoes" else {})
    if name == "seeds":
        return [int(s) for s in text.split(",") if s]
    if name in ("iteration", "fix_attempts"):
        return int(text)
    if name in ("scalar", "best_scalar", "noise_margin", "wall_s"):
        return float(text) if text else (0.0 if name == "wall_s" else None)
    return text


def _row(cells: list[str]) -> LedgerRow:
    """The row of one line's ``cells``; ``ValueError`` naming the column that does not parse."""
    values = {}
    for name, cell in zip(COLUMNS, cells):
        try:
            values[name] = _parse(name, cell)
        except ValueError as exc:
            raise ValueError(f"column {name} holds {cell[:40]!r} ({exc})") from exc
    return LedgerRow(**values)


class Ledger:
    def __init__(self, path: Path):
        self.path = Path(path)
        if self.path.exists() and self.path.stat().st_size:
            header = self._lines()[0].decode("utf-8", "replace").split("\t")
            if tuple(header) != COLUMNS:
                raise LedgerError(f"{self.path} has the header {header[:6]}..., not this engine's "
                                  f"({', '.join(COLUMNS[:6])}, ...); move it away or pass another "
                                  "--repo: a ledger is never rewritten")

    def _lines(self) -> list[bytes]:
        """The file's lines, undecoded: a line torn mid-character by a kill is skipped, never
        read as text."""
        try:
            return self.path.read_bytes().split(b"\n")
        except OSError as exc:
            raise LedgerError(f"{self.path}: {cannot_read(self.path, exc)}") from exc

    def rows(self) -> list[LedgerRow]:
        if not self.path.exists():
            return []
        rows = []
        # After the last "\n": "" or a torn write.
        for number, line in enumerate(self._lines()[1:-1], start=2):
            cells = line.split(b"\t")
            if len(cells) != len(COLUMNS):  # torn by a kill mid-write (module contracts)
                continue
            try:
                rows.append(_row([cell.decode("utf-8") for cell in cells]))
            except ValueError as exc:  # UnicodeDecodeError is one
                raise LedgerError(
                    f"{self.path} line {number} is not a ledger row: {exc}; fix: correct that "
                    "line (tab-separated, in the header's order), or move the file away to "
                    "start the experiment afresh: the engine never rewrites a ledger") from exc
        return rows

    def append(self, row: LedgerRow) -> None:
        row.time = row.time or datetime.now(timezone.utc).isoformat(timespec="seconds")
        values = asdict(row)
        line = "\t".join(_cell(n, values[n]) for n in COLUMNS) + "\n"
        new = not self.path.exists() or self.path.stat().st_size == 0
        torn = not new and read_tail(self.path, 1) != "\n"
        with self.path.open("a") as fh:
            fh.write(("\t".join(COLUMNS) + "\n" if new else "\n" if torn else "") + line)
            fh.flush()
            os.fsync(fh.fileno())
