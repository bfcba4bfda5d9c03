"""``ratchet query`` (read-only SQL over the evidence views) and ``ratchet capsule prune``.

Contracts:
- ``query`` accepts only SELECT / EXPLAIN statements and runs them on a sandboxed connection
  (file access limited to the run's evidence folder, configuration locked); views: capsule,
  verdict, skill_event, llm_call, round. Output: ``--format table|csv|json``.
- ``capsule prune --keep-days N`` is the only command that removes evidence: it deletes whole
  capsule parts whose every row is older than N days, after confirmation (or ``--yes``);
  ``--dry-run`` only lists them.
- ``emit_rows`` / ``require_run_dir`` are shared with ``ratchet_ray.cli.skills``.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Sequence

import click
import duckdb

from ratchet_ray.evidence.store import EvidenceStore

FORMATS = click.Choice(["table", "csv", "json"])
_READ_ONLY = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
_CELL_MAX = 60


def require_run_dir(ctx: click.Context) -> Path:
    """The ``--db RUN_DIR`` of the group, checked to exist."""
    run_dir = (ctx.obj or {}).get("run_dir")
    if run_dir is None:
        raise click.UsageError("this command works on a run: pass --db RUN_DIR before the command, "
                               "e.g. ratchet --db results/mbpp/<run-id> skill list")
    if not Path(run_dir).is_dir():
        raise click.UsageError(f"--db {run_dir}: no such run directory")
    return Path(run_dir)


def _cell(value: Any) -> str:
    text = "" if value is None else (f"{value:.4g}" if isinstance(value, float) else str(value))
    text = text.replace("\n", " ")
    return text if len(text) <= _CELL_MAX else text[: _CELL_MAX - 1] + "…"


def format_rows(rows: Sequence[dict[str, Any]], columns: Sequence[str], fmt: str) -> str:
    """Render rows as an aligned text table, CSV or JSON (a list of objects)."""
    if fmt == "json":
        return json.dumps([{c: r.get(c) for c in columns} for r in rows], indent=2, default=str)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore",
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return buffer.getvalue().rstrip("\n")
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(lines)


def emit_rows(rows: Sequence[dict[str, Any]], columns: Sequence[str], fmt: str) -> None:
    click.echo(format_rows(rows, columns, fmt))


@click.command("query")
@click.argument("sql")
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
@click.pass_context
def query(ctx: click.Context, sql: str, fmt: str) -> None:
    """Run read-only SQL over the evidence views (capsule, verdict, skill_event, llm_call, round)."""
    store = EvidenceStore(require_run_dir(ctx))
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise click.ClickException(f"cannot parse SQL: {exc}") from exc
    if not statements:
        raise click.UsageError("empty SQL; e.g. ratchet --db RUN query \"select count(*) from capsule\"")
    for statement in statements:
        if statement.type not in _READ_ONLY:
            raise click.UsageError(f"query is read-only: {statement.type.name} statements are not "
                                   "allowed; use SELECT over the evidence views")
    con = store.connect(sandboxed=True)
    try:
        cursor = None
        for statement in statements:
            cursor = con.execute(statement.query)
        columns = [d[0] for d in cursor.description] if cursor.description else []
        rows = [dict(zip(columns, row)) for row in cursor.fetchall()]
    except duckdb.Error as exc:
        raise click.ClickException(f"query failed: {exc}") from exc
    finally:
        con.close()
    emit_rows(rows, columns, fmt)


@click.group("capsule")
def capsule() -> None:
    """Capsule evidence maintenance."""


@capsule.command("prune")
@click.option("--keep-days", type=click.FloatRange(min=0), required=True,
              help="Keep capsule parts holding any row newer than this many days.")
@click.option("--dry-run", is_flag=True, help="List the parts that would be removed; remove nothing.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def prune(ctx: click.Context, keep_days: float, dry_run: bool, yes: bool) -> None:
    """Delete capsule parts older than --keep-days (the only command that removes evidence)."""
    store = EvidenceStore(require_run_dir(ctx))
    doomed = store.prune_parts("capsule", keep_days=keep_days, dry_run=True)
    rows = sum(_rows_in(p) for p in doomed)
    click.echo(f"{len(doomed)} capsule part(s), {rows} row(s), older than {keep_days:g} day(s)")
    if dry_run or not doomed:
        for path in doomed:
            click.echo(f"  would remove {path}")
        return
    if not yes:
        click.confirm("Permanently delete these capsule parts?", abort=True)
    removed = store.prune_parts("capsule", keep_days=keep_days)
    click.echo(f"removed {len(removed)} part(s)")


def _rows_in(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


COMMANDS: list[click.Command] = [query, capsule]
