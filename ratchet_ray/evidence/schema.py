"""Column names and Arrow types of every evidence kind, in one place.

Contracts:
- ``SCHEMAS[kind]`` is the Arrow schema of every part of that kind; ``KINDS`` lists the kinds in
  a fixed order; the ``round`` column is also the hive partition.
- ``to_records`` turns dicts or pydantic models into dicts with exactly the schema's columns:
  unknown or missing required columns raise ``EvidenceSchemaError`` naming kind, column and the
  valid ones; other missing columns are null, ``created_at`` defaults to now. Every text value
  passes through ``redact.redact``: no credential reaches the evidence (nor a critic prompt);
  and a lone surrogate in it (what a solution raised, a model's reply, a test log) is written
  as its ``\\udXXX`` escape, which Parquet takes: one such text stopped the whole run.
- ``round_record(summary)``: a ``RoundSummary`` as a flat row, its splits as ``eval_*`` /
  ``train_*`` columns (how the ``round`` kind stores it).
"""

from __future__ import annotations

import enum
import time
from typing import Any, Iterable

import pyarrow as pa
from pydantic import BaseModel

from ratchet_ray.redact import redact
from ratchet_ray.types import RoundSummary

KINDS = ("capsule", "verdict", "skill_event", "llm_call", "round", "validation")

_STR, _I64, _I32, _F64, _BOOL = pa.string(), pa.int64(), pa.int32(), pa.float64(), pa.bool_()
_STRS = pa.list_(pa.string())

SCHEMAS: dict[str, pa.Schema] = {
    "capsule": pa.schema([
        ("capsule_id", _STR), ("run_id", _STR), ("arm", _STR), ("seed", _I64), ("round", _I32),
        ("split", _STR), ("task_id", _STR), ("attempt", _I32), ("skill_id", _STR),
        ("passed", _BOOL), ("exit_status", _STR), ("infra_failure", _BOOL), ("output", _STR),
        ("grader_trace", _STR), ("input_tokens", _I64), ("output_tokens", _I64),
        ("latency_s", _F64), ("cost_usd", _F64), ("created_at", _F64),
        ("impossible", _BOOL),  # an impossible twin's grade (governance.cheat_probe)
    ]),
    "verdict": pa.schema([
        ("capsule_id", _STR), ("run_id", _STR), ("round", _I32), ("task_id", _STR),
        ("skill_id", _STR), ("attribution", _STR), ("pattern", _STR), ("confidence", _F64),
        ("rationale", _STR), ("created_at", _F64),
    ]),
    "skill_event": pa.schema([
        ("run_id", _STR), ("round", _I32), ("skill_id", _STR), ("event", _STR),
        ("status_after", _STR), ("contribution", _F64), ("trials", _I64), ("reason", _STR),
        ("created_at", _F64),
        ("sources", _I64),  # "added" by synthesis: the failure verdicts it was drafted from
    ]),
    "llm_call": pa.schema([
        ("run_id", _STR), ("round", _I32), ("role", _STR), ("backend", _STR), ("model", _STR),
        ("input_tokens", _I64), ("output_tokens", _I64), ("latency_s", _F64), ("retries", _I32),
        ("cost_usd", _F64), ("cached", _BOOL), ("ok", _BOOL), ("error", _STR),
        ("created_at", _F64),
    ]),
    "round": pa.schema([
        ("run_id", _STR), ("round", _I32),
        ("eval_total", _I64), ("eval_resolved", _I64), ("eval_infra_failures", _I64),
        ("eval_pass_at_1", _F64),
        ("train_total", _I64), ("train_resolved", _I64), ("train_infra_failures", _I64),
        ("train_pass_at_1", _F64),
        ("verdicts", _I64), ("skills_created", _STRS), ("skills_evicted", _STRS),
        ("skills_retired", _STRS), ("skills_skipped", _STRS), ("metaskill_created", _STR),
        ("rollback_fired", _BOOL), ("restored_round", _I32), ("active_skills", _I64),
        ("deprecated_skills", _I64), ("input_tokens", _I64), ("output_tokens", _I64),
        ("cost_usd", _F64), ("wall_s", _F64), ("failed_steps", _STRS), ("created_at", _F64),
    ]),
    # ``ratchet swe validate``: one row per grade of an instance's gold or no-op patch (``patch``)
    # in repeat ``repeat``; ``valid``: the grade is what that patch must give (gold resolves,
    # no-op does not); ``round`` is always 0 (a validation has no rounds).
    "validation": pa.schema([
        ("run_id", _STR), ("round", _I32), ("instance_id", _STR), ("patch", _STR),
        ("repeat", _I32), ("passed", _BOOL), ("exit_status", _STR), ("infra_failure", _BOOL),
        ("valid", _BOOL), ("duration_s", _F64), ("image", _STR), ("image_digest", _STR),
        ("node", _STR), ("trace", _STR), ("created_at", _F64),
    ]),
}

# Columns without which a row means nothing; every other column may be null.
REQUIRED: dict[str, frozenset[str]] = {
    "capsule": frozenset({"capsule_id", "run_id", "round", "split", "task_id", "skill_id", "passed"}),
    "verdict": frozenset({"capsule_id", "run_id", "round", "attribution", "pattern"}),
    "skill_event": frozenset({"run_id", "round", "skill_id", "event"}),
    "llm_call": frozenset({"run_id", "round", "role"}),
    "round": frozenset({"round"}),
    "validation": frozenset({"run_id", "round", "instance_id", "patch", "repeat", "passed",
                             "valid"}),
}

_DUCKDB_TYPES = {
    pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.int32(): "INTEGER",
    pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN", _STRS: "VARCHAR[]",
}


class EvidenceSchemaError(ValueError):
    """A row does not fit its kind's schema; the message names the kind and the column."""


def check_kind(kind: str) -> None:
    if kind not in SCHEMAS:
        raise EvidenceSchemaError(f"unknown evidence kind {kind!r}; valid kinds: {', '.join(KINDS)}")


def duckdb_type(arrow_type: pa.DataType) -> str:
    """The DuckDB SQL type used for empty typed views."""
    return _DUCKDB_TYPES[arrow_type]


def round_record(summary: RoundSummary) -> dict[str, Any]:
    """``summary`` as a flat row (module contracts)."""
    data = summary.model_dump(mode="python", exclude={"eval", "train", "suite_report"})
    for split in ("eval", "train"):
        result = getattr(summary, split)
        for name in ("total", "resolved", "infra_failures", "pass_at_1"):
            data[f"{split}_{name}"] = getattr(result, name) if result else None
    return data


def storable(text: str) -> str:
    """``text`` with what UTF-8 cannot encode (a lone surrogate) written as its escape: JSON and
    ``str`` carry ``\\ud800``, Parquet and llama.cpp refuse it (module contract)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _text(value: str) -> str:
    return redact(storable(value))


def _plain(value: Any) -> Any:
    """Enums as their values; every text (and list of texts) storable, without credentials."""
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, list):
        return [_text(v) if isinstance(v, str) else v for v in value]
    return value


def to_records(kind: str, rows: Iterable[dict | BaseModel]) -> list[dict[str, Any]]:
    """Normalise ``rows`` to dicts holding exactly ``SCHEMAS[kind]``'s columns (see module doc)."""
    check_kind(kind)
    columns = SCHEMAS[kind].names
    valid = set(columns)
    now = time.time()
    records = []
    for index, row in enumerate(rows):
        if isinstance(row, RoundSummary):
            data = round_record(row)
        elif isinstance(row, BaseModel):
            data = row.model_dump(mode="python")
        elif isinstance(row, dict):
            data = dict(row)
        else:
            raise EvidenceSchemaError(
                f"{kind} row {index}: expected a dict or pydantic model, got {type(row).__name__}")
        unknown = sorted(set(data) - valid)
        if unknown:
            raise EvidenceSchemaError(
                f"{kind} row {index}: unknown column(s) {unknown}; valid columns: {', '.join(columns)}")
        missing = sorted(c for c in REQUIRED[kind] if data.get(c) is None)
        if missing:
            raise EvidenceSchemaError(f"{kind} row {index}: missing required column(s) {missing}")
        record = {c: _plain(data.get(c)) for c in columns}
        if record.get("created_at") is None:
            record["created_at"] = now
        records.append(record)
    return records
