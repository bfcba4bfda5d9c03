"""Append-only evidence (Parquet parts) and its DuckDB read side.

The names below load on first use: a module that needs only a light part of the package (e.g.
``evidence.tampering`` in every actor's prompt code) does not pay for DuckDB and pyarrow.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {"KINDS": "schema", "SCHEMAS": "schema", "EvidenceSchemaError": "schema",
         "EvidenceStore": "store"}
__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
