"""``ratchet query``, ``ratchet capsule prune`` and ``ratchet evidence verify|repair``.

Contracts:
- ``query`` runs only SELECT / EXPLAIN on a sandboxed connection (files limited to the run's
  evidence, configuration locked) over the views capsule, verdict, skill_event, llm_call,
  round. A table that is no view is named with the views; any other error is DuckDB's text on
  one line; an unreadable part names ``evidence verify`` / ``repair``.
- ``capsule prune --keep-days N``, the only command that removes evidence, deletes whole
  capsule parts older than N days after confirmation (or ``--yes``); ``--dry-run`` lists them.
- ``evidence verify [--quick]`` lists unreadable parts (exit 1 if any); ``evidence repair``
  moves them to ``<run>/quarantine/`` (deletes nothing) and says what each held.
- Commands that change a run take its writer lock (``writer_lock``); read-only ones never lock.
- ``emit_rows`` / ``require_run_dir`` / ``run_config`` / ``writer_lock`` serve the other commands.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Sequence

import click
import duckdb

from ratchet_ray.cli.options import NumberRange, format_option, one_line, yes_option
from ratchet_ray.evidence import integrity
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.run_config.files import ConfigError, load_config
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.storage.runlock import RunDirBusy, RunLock

_READ_ONLY = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
_CELL_MAX = 60


RUN_DIR_MARKERS = ("config.yaml", "evidence", "skills", "loop.json")
"""What a run dir holds (any one of them): what ``ratchet run`` writes first."""
_SEARCH_DEPTH = 4  # results/ -> <suite>/ -> <run>; a sweep: <out>/runs/<arm_seed>/<suite>/<run>
_SEARCH_LIMIT = 5000  # folders looked at, at most (``--db /`` must not walk the disk)
_LISTED = 10


def runs_below(folder: Path) -> list[Path]:
    """Run dirs (folders with a ``config.yaml``) under ``folder``, at most ``_SEARCH_DEPTH``
    levels down, sorted; a run dir's own subfolders are not searched."""
    found: list[Path] = []
    level, seen = [folder], 0
    for _ in range(_SEARCH_DEPTH):
        below: list[Path] = []
        for parent in level:
            try:
                children = sorted(p for p in parent.iterdir()
                                  if p.is_dir() and not p.name.startswith("."))
            except OSError:  # unreadable folder: nothing to list there
                continue
            for child in children:
                seen += 1
                if seen > _SEARCH_LIMIT:
                    return sorted(found)
                (found if (child / "config.yaml").is_file() else below).append(child)
        level = below
    return sorted(found)


def check_run_dir(run_dir: Path) -> Path:
    """``run_dir`` when it is a run dir (holding one of ``RUN_DIR_MARKERS``), else
    ``click.UsageError`` naming what a run dir holds and listing the run dirs below it (``--db
    results/sim`` lists that suite's runs); a run dir whose ``evidence`` is no folder is one too."""
    run_dir = Path(run_dir)
    if not run_dir.exists():
        raise click.UsageError(f"--db {run_dir}: no such run directory; pass a run dir, e.g. "
                               "results/mbpp/<run-id> (`ls results/*/`)")
    if not run_dir.is_dir():
        raise click.UsageError(f"--db {run_dir} is a file; pass its run dir (the folder holding "
                               "config.yaml and evidence/)")
    if any((run_dir / marker).exists() for marker in RUN_DIR_MARKERS):
        evidence = run_dir / "evidence"
        if evidence.exists() and not evidence.is_dir():  # every query would read no part
            raise click.UsageError(f"{evidence} is not a folder: the run's evidence is the "
                                   "Parquet parts in it; restore it from a copy of the run")
        return run_dir
    runs = runs_below(run_dir)
    expected = (f"--db {run_dir} is not a run dir (expected a folder with config.yaml and "
                "evidence/, as `ratchet run` writes)")
    if not runs:
        raise click.UsageError(f"{expected}; no run dir below it either: pass the folder "
                               "printed when the run started, e.g. results/mbpp/<run-id>")
    more = f"\n  ... and {len(runs) - _LISTED} more" if len(runs) > _LISTED else ""
    raise click.UsageError(f"{expected}; run dirs below it ({len(runs)}), pass one:\n"
                           + "\n".join(f"  {p}" for p in runs[:_LISTED]) + more)


def require_run_dir(ctx: click.Context, given: Path | None = None,
                    option: str | None = None) -> Path:
    """``given`` (the command's own ``option``, e.g. RUN), else the group's ``--db RUN_DIR``,
    checked to be a run dir (``check_run_dir``); neither is a ``UsageError`` naming both."""
    run_dir = given if given is not None else (ctx.obj or {}).get("run_dir")
    if run_dir is None and option is not None:
        raise click.UsageError(f"name the run: {option} RUN_DIR (or ratchet --db RUN_DIR ...), "
                               "e.g. results/mbpp/<run-id>")
    if run_dir is None:
        raise click.UsageError("this command works on a run: pass --db RUN_DIR before the command, "
                               "e.g. ratchet --db results/mbpp/<run-id> skill list")
    return check_run_dir(Path(run_dir))


def run_config(run_dir: Path) -> LoopConfig:
    """The run's resolved ``config.yaml`` (the Default when it has none); a garbled one is its
    one-line error naming the file."""
    path = run_dir / "config.yaml"
    with one_line(ConfigError):
        return load_config([path] if path.is_file() else [])


def _cell(value: Any) -> str:
    text = "" if value is None else (f"{value:.4g}" if isinstance(value, float) else str(value))
    text = text.replace("\n", " ")
    return text if len(text) <= _CELL_MAX else text[: _CELL_MAX - 1] + "…"


def emit_rows(rows: Sequence[dict[str, Any]], columns: Sequence[str], fmt: str) -> None:
    """Print rows as an aligned text table, CSV or JSON (a list of objects)."""
    if fmt == "json":
        click.echo(json.dumps([{c: r.get(c) for c in columns} for r in rows], indent=2,
                              default=str))
        return
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore",
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        click.echo(buffer.getvalue().rstrip("\n"))
        return
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    click.echo("\n".join(lines))


@click.command("query")
@click.argument("sql")
@format_option()
@click.pass_context
def query(ctx: click.Context, sql: str, fmt: str) -> None:
    """Run read-only SQL over the evidence views (capsule, verdict, skill_event, llm_call, round,
    validation)."""
    store = EvidenceStore(require_run_dir(ctx))
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:  # one line: the statement is on the user's screen already
        raise click.ClickException(f"cannot parse SQL: {_one_line(exc)}; fix the statement, e.g. "
                                   "ratchet --db RUN query \"select count(*) from capsule\"") from exc
    if not statements:
        raise click.UsageError("empty SQL; e.g. ratchet --db RUN query \"select count(*) from capsule\"")
    for statement in statements:
        if statement.type not in _READ_ONLY:
            raise click.UsageError(f"query is read-only: {statement.type.name} statements are not "
                                   "allowed; use SELECT over the evidence views")
    if len(statements) > 1:  # only the last one's rows would be shown: the others' lost
        raise click.UsageError(f"{len(statements)} statements given; query runs one and prints "
                               "its rows: give one per `ratchet query` (or join them with UNION "
                               "ALL)")
    con = store.connect(sandboxed=True)
    try:
        cursor = None
        for statement in statements:
            cursor = con.execute(statement.query)
        columns = [d[0] for d in cursor.description] if cursor.description else []
        rows = [dict(zip(columns, row)) for row in cursor.fetchall()]
    except duckdb.CatalogException as exc:
        raise click.ClickException(f"query failed: {_catalog_error(exc)}") from exc
    except duckdb.OutOfMemoryException as exc:  # its own hints are SET statements, refused here
        raise click.ClickException(
            f"query failed: DuckDB ran out of memory ({str(exc).strip().splitlines()[0]}); fix: "
            "ask for less at once: aggregate in the SQL (count, avg ... group by), select fewer "
            "columns or add a LIMIT") from exc
    except duckdb.Error as exc:
        cause = store.read_error(exc)  # an unreadable part, or the SQL's own mistake
        raise click.ClickException(str(cause) if cause is not exc
                                   else f"query failed: {_one_line(exc)}") from exc
    finally:
        con.close()
    emit_rows(rows, columns, fmt)


def _one_line(exc: duckdb.Error) -> str:
    """DuckDB's message on one line: its text without the ``LINE n:`` excerpt and caret under
    it (the statement is the user's own, on their screen)."""
    return " ".join(str(exc).split("\n\nLINE ", 1)[0].split())


def _catalog_error(exc: duckdb.CatalogException) -> str:
    """DuckDB's message, with the evidence views instead of its guess (e.g. ``pg_sequences``,
    a system table) when the name is not a table."""
    first = str(exc).strip().splitlines()[0]
    if "Table with name" not in first:
        return str(exc)
    return (f"{first.removeprefix('Catalog Error: ')} The evidence views are "
            f"{', '.join(EvidenceStore.KINDS)} (columns: ratchet --db RUN query "
            "\"select * from capsule limit 1\").")


@click.group("capsule")
def capsule() -> None:
    """Capsule evidence maintenance."""


@capsule.command("prune")
@click.option("--keep-days", type=NumberRange(min=0), required=True,
              help="Keep capsule parts holding any row newer than this many days.")
@click.option("--dry-run", is_flag=True, help="List the parts that would be removed; remove nothing.")
@yes_option()
@click.pass_context
def prune(ctx: click.Context, keep_days: float, dry_run: bool, yes: bool) -> None:
    """Delete capsule parts older than --keep-days (the only command that removes evidence)."""
    store = EvidenceStore(require_run_dir(ctx))
    import pyarrow.parquet as pq

    doomed = store.prune_parts("capsule", keep_days=keep_days, dry_run=True)
    rows = sum(pq.ParquetFile(p).metadata.num_rows for p in doomed)
    click.echo(f"{len(doomed)} capsule part(s), {rows} row(s), older than {keep_days:g} day(s)")
    if dry_run or not doomed:
        for path in doomed:
            click.echo(f"  would remove {path}")
        return
    if not yes:
        click.confirm("Permanently delete these capsule parts?", abort=True)
    with writer_lock(store.run_dir, "ratchet capsule prune"):
        removed = store.prune_parts("capsule", keep_days=keep_days)
    click.echo(f"removed {len(removed)} part(s)")


@click.group("evidence")
def evidence() -> None:
    """Check the evidence parts and move unreadable ones aside."""


@evidence.command("verify")
@click.option("--quick", is_flag=True, help="Read only each part's footer (what a resume checks).")
@click.pass_context
def verify_cmd(ctx: click.Context, quick: bool) -> None:
    """List the parts that cannot be read (exit 1 when there is any)."""
    store = EvidenceStore(require_run_dir(ctx))
    bad = integrity.verify(store, full=not quick)
    parts = sum(len(store.part_paths(k)) for k in store.KINDS)
    for part in bad:
        click.echo(f"BAD  {part.path}  {part.reason}")
    leftovers = integrity.leftover_temp_files(store)
    if leftovers:
        click.echo(f"{len(leftovers)} leftover temp file(s) of interrupted writes (harmless, "
                   "ignored by every reader)")
    click.echo(f"{parts} part(s) checked, {len(bad)} unreadable")
    if bad:
        click.echo(f"fix: ratchet --db {store.run_dir} evidence repair  (moves them to "
                   f"{store.run_dir / integrity.QUARANTINE_DIR}, deletes nothing)")
        raise SystemExit(1)


@evidence.command("repair")
@click.pass_context
def repair_cmd(ctx: click.Context) -> None:
    """Move unreadable parts to <run>/quarantine/ (never deletes) and say what they held."""
    run_dir = require_run_dir(ctx)
    store = EvidenceStore(run_dir)
    with writer_lock(run_dir, "ratchet evidence repair"):
        moved = integrity.quarantine(store, integrity.verify(store, full=True))
        store.migrate_partitions()
    for part, target in moved:
        click.echo(f"moved {part.path} -> {target}")
        click.echo(f"  lost: {integrity.describe_loss(part)}")
    click.echo(f"{len(moved)} part(s) quarantined; the evidence views read again"
               + (f"; continue the run with --resume {run_dir}" if moved else ""))


def writer_lock(run_dir: Path, purpose: str) -> RunLock:
    """The run dir's writer lock for a CLI command that changes it (ClickException naming the
    holder if busy, or if the run dir cannot be written: a read-only copy or mount)."""
    with one_line(RunDirBusy):
        try:
            return RunLock(run_dir, purpose).acquire()
        except OSError as exc:  # its lock file cannot be made: nothing else could be written
            raise click.ClickException(
                f"{purpose} changes the run dir, and {run_dir} cannot be written: "
                f"{exc.strerror or exc}; copy it to a writable place (cp -a RUN "
                "/a/writable/path/) and run the command on the copy") from exc


COMMANDS: list[click.Command] = [query, capsule, evidence]
