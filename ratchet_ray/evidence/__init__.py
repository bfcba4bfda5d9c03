"""Append-only evidence (Parquet parts) and its DuckDB read side."""
