"""The capsule browser's rows: every capsule of a run with its Critic verdict, texts truncated.

Contracts:
- ``capsule_rows(run_dir, text_limit, strings)`` reads the ``capsule`` parts present now, each
  with its verdict: one row (``COLUMNS``' values) per capsule in (round, split, task, attempt,
  capsule id) order, each naming its part (relative to the run dir) and row number there, so
  ``ratchet query`` / pyarrow can read the full text.
- Texts over ``text_limit`` characters are cut and end with ``TRUNCATED``; ``text_limit_for(n)``
  keeps ``n`` capsules under about ``TEXT_BUDGET`` characters.
- The ``INTERNED`` columns' strings are interned into ``strings`` (rows hold indices; 100 rounds
  x 100 tasks stay a few MB), which is appended to, so runs share one table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.store import EvidenceStore, duckdb_path

TRUNCATED = " […truncated]"
TEXT_BUDGET = 6_000_000
MIN_TEXT, MAX_TEXT = 120, 2_000
INTERNED = ("split", "task_id", "skill_id", "exit_status", "part", "pattern", "attribution")
COLUMNS = ("capsule_id", "round", "split", "task_id", "attempt", "skill_id", "passed",
           "exit_status", "infra_failure", "output", "grader_trace", "input_tokens",
           "output_tokens", "cost_usd", "part", "row", "attribution", "pattern", "confidence",
           "rationale")


def text_limit_for(n_capsules: int, budget: int = TEXT_BUDGET) -> int:
    """Characters kept per text field so ``n_capsules`` capsules fit ``budget`` (3 fields)."""
    if n_capsules <= 0:
        return MAX_TEXT
    return max(MIN_TEXT, min(MAX_TEXT, budget // (3 * n_capsules)))


def truncate(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + TRUNCATED


def capsule_rows(run_dir: str | Path, text_limit: int, strings: list[str]) -> list[list[Any]]:
    """Every capsule of the run, with its verdict (module contracts)."""
    store = EvidenceStore(Path(run_dir))
    parts = store.part_paths("capsule")
    if not parts:
        return []
    files = [duckdb_path(p.resolve()) for p in parts]
    root = str(Path(run_dir).resolve()) + "/"
    index = {s: i for i, s in enumerate(strings)}

    def intern(s: str | None) -> int | None:
        if s is None:
            return None
        if s not in index:
            index[s] = len(strings)
            strings.append(s)
        return index[s]

    with store.connect(kinds=("verdict",)) as con:  # the parts are read directly, by path
        found = nq.fetch_dicts(con, "capsules_with_verdicts", files=files)
    rows = []
    for r in found:
        rec = {n: r[n] for n in COLUMNS}
        rec["part"] = rec["part"].removeprefix(root) if rec["part"] else None
        for key in ("output", "grader_trace", "rationale"):
            rec[key] = truncate(rec[key], text_limit)
        for key in INTERNED:
            rec[key] = intern(rec[key])
        if rec["cost_usd"] is not None:
            rec["cost_usd"] = round(float(rec["cost_usd"]), 6)
        rows.append([rec[n] for n in COLUMNS])
    return rows
