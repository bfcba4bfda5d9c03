"""Checking evidence parts and moving unreadable ones aside (``ratchet evidence verify|repair``).

Contracts:
- ``verify`` returns one ``BadPart`` per unreadable part (truncated, garbage, a schema not its
  kind's); ``full=False`` reads only footers (the driver's check before a resume: fast, and it
  catches a crash's truncated part), ``full=True`` also decodes every row. Leftover ``.tmp``
  files are harmless and reported by ``leftover_temp_files``.
- ``quarantine`` moves bad parts to ``<run_dir>/quarantine/<UTCts>/evidence/<kind>/round=<R>/``
  (never deletes), so the views work again; ``describe_loss`` says what they held, as known:
  of a folder (or a link to nowhere, a device) where a part belongs, which no writer makes,
  only that, not a kind's rows; of another kind's part, that kind's rows, not this one's.
- ``CorruptEvidence`` (a ``ValueError``): a writer will not resume over a bad part; its message
  names both commands.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.storage.fsutil import fsync_dir

QUARANTINE_DIR = "quarantine"


class CorruptEvidence(ValueError):
    """An evidence part is unreadable; the message names it and the two commands that fix it."""


@dataclass(frozen=True)
class BadPart:
    kind: str
    round: int | None
    path: Path
    size: int
    reason: str
    form: str = "file"
    """What stood at ``path``: ``file``, ``folder``, ``link`` (to nowhere) or ``other``."""


def _form(path: Path) -> str:
    if path.is_symlink() and not path.exists():
        return "link"
    return "folder" if path.is_dir() else "file" if path.is_file() else "other"


def _round_of(path: Path) -> int | None:
    value = path.parent.name.split("=", 1)[-1]
    return int(value) if value.isdigit() else None


def verify(store: EvidenceStore, *, full: bool = True) -> list[BadPart]:
    """Every unreadable part of every kind (see module contracts)."""
    # lstat: a link to nowhere (or to itself) is a bad part too.
    return [BadPart(kind, _round_of(path), path, path.lstat().st_size, reason, _form(path))
            for kind, path, reason in store.bad_parts(full=full)]


def leftover_temp_files(store: EvidenceStore) -> list[Path]:
    """Hidden temp files of writes a crash interrupted (ignored by every reader)."""
    return sorted(store.root.glob("*/round=*/.*.tmp")) if store.root.is_dir() else []


def quarantine(store: EvidenceStore, bad: list[BadPart]) -> list[tuple[BadPart, Path]]:
    """Move ``bad`` parts out of the evidence into a quarantine folder; returns (part, new path)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = store.run_dir / QUARANTINE_DIR / stamp / "evidence"
    moved = []
    for part in bad:
        target_dir = base / part.path.relative_to(store.root).parent
        target_dir.mkdir(parents=True, exist_ok=True)
        target = target_dir / part.path.name
        os.rename(part.path, target)  # same filesystem: one atomic move, the bytes are kept
        fsync_dir(part.path.parent)
        fsync_dir(target_dir)
        moved.append((part, target))
    return moved


LOSSES = {
    "capsule": "solved-and-graded tasks (a resumed run redoes those of an unfinished round; "
               "a finished round keeps its summary.json but loses these capsules)",
    "verdict": "critic verdicts (a resumed run re-critiques the train failures of an "
               "unfinished round)",
    "skill_event": "skill events (the bank files still hold the skills' state)",
    "llm_call": "LLM call accounting rows (tokens and cost are under-counted)",
    "round": "the round's summary row (round_NN/summary.json still holds it)",
    "validation": "SWE-bench validation grades (swebench_validation.json still holds the "
                  "result; `ratchet swe validate` grades those instances again)",
}
"""What a part of each evidence kind held, for ``describe_loss`` (one entry per ``KINDS``)."""


_FORMS = {"folder": "a folder", "link": "a link to nowhere", "other": "not a regular file"}


def describe_loss(part: BadPart) -> str:
    """What the part held, in words, as far as it can be known (module contracts): its rows
    cannot be read, so the kind and round say it; what was no part, or another kind's, says so."""
    where = f"round {part.round}" if part.round is not None else "an unknown round"
    if part.form in _FORMS:
        return (f"{_FORMS[part.form]} where a {part.kind} part of {where} belongs, not a part "
                "(the run writes each part as one file, never this): what it held is not known, "
                "and no rows the views read are lost; look inside it in quarantine/")
    other = re.search(r"a (\w+) part, not a \w+ one", part.reason)
    if other is not None and other.group(1) in LOSSES:
        return (f"a {other.group(1)} part among the {part.kind} parts of {where}, {part.size} "
                f"bytes: {other.group(1)} rows, not {part.kind} ones (a copy or a misplaced "
                f"part: compare it with evidence/{other.group(1)}/ before putting it there)")
    return f"{part.kind} part of {where}, {part.size} bytes: {LOSSES[part.kind]}"


def require_readable(store: EvidenceStore, run_dir: Path) -> None:
    """Raise ``CorruptEvidence`` naming the bad parts and the fix when any footer is unreadable."""
    bad = verify(store, full=False)
    if bad:
        listed = "; ".join(f"{b.path} ({b.reason})" for b in bad[:3])
        raise CorruptEvidence(
            f"{len(bad)} evidence part(s) of {run_dir} cannot be read, e.g. {listed}. Resuming "
            f"over them would break every view. Run `ratchet --db {run_dir} evidence verify` to "
            f"list them and `ratchet --db {run_dir} evidence repair` to move them to "
            f"{run_dir / QUARANTINE_DIR} (nothing is deleted), then resume")
