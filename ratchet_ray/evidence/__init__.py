"""Append-only evidence (Parquet parts) and its DuckDB read side."""

from ratchet_ray.evidence.schema import KINDS, SCHEMAS, EvidenceSchemaError
from ratchet_ray.evidence.store import EvidenceStore

__all__ = ["KINDS", "SCHEMAS", "EvidenceSchemaError", "EvidenceStore"]
