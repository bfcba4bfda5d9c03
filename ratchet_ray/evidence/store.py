"""Append-only evidence: one Parquet part per write, DuckDB views for reading.

Layout: ``<run_dir>/evidence/<kind>/round=<R>/part-<uuid>.parquet`` (kinds in ``KINDS``). ``R`` is
unpadded so a raw ``read_parquet(..., hive_partitioning=true)`` types ``round`` as an integer;
older padded ``round=03`` folders stay readable and ``migrate_partitions`` renames them.

Contracts:
- ``append`` writes one new part atomically (temp file, fsync, ``os.link``, which never replaces
  a part): a crash leaves at most a ``.tmp`` file no reader globs. Empty ``rows`` write nothing
  (None); a row whose ``round`` is not ``round_`` raises before writing.
- ``connect`` returns an in-memory DuckDB connection with one view per kind over every part
  present when a query runs; a kind with no parts at connect time gets an empty typed view.
  ``sandboxed=True`` limits file access to the evidence folder and locks the configuration (for
  user SQL). With ``cached=True`` (the loop's long-lived readers) one in-memory database per
  store holds a *table* per kind; each ``connect`` loads only the parts that appeared since the
  last (a pruned part reloads its kind), so reads stay flat over a long run. Writes are always
  on disk before ``append`` returns.
- A read that fails on an unreadable part (a crash's or a full disk's leftovers) raises
  ``UnreadableEvidence`` (a ``ValueError``) naming the part and the commands that list and move
  such parts (``ratchet --db RUN evidence verify`` / ``evidence repair``) on one line; an
  evidence folder or part this user may not read is ``UnreadableEvidence`` naming it and the
  access it needs (never a part to set aside: it is not damaged);
  ``read_error(exc)`` does the same for a later query's DuckDB error (``exc`` itself when no part
  is unreadable: a mistake in the SQL stays the SQL's); it checks every footer, and decodes in
  full the parts ``exc`` names (all of them when it names none), as a page past a good footer
  can fail.
- A part of another kind among a kind's parts (a file copied into the wrong folder: columns of
  another kind, not this one's) is unreadable as this kind: every read of that kind (a view at
  ``connect``, the cache's load) raises ``UnreadableEvidence`` naming it, the kind it holds and
  both commands, instead of counting its rows as this kind's with nulls.
- ``prune_parts`` is the only code that deletes evidence: whole parts older than the cutoff.

Example::

    store = EvidenceStore(run_dir)
    store.append("skill_event", 3, [{"run_id": "r1", "round": 3, "skill_id": "s", "event": "added"}])
    store.connect().execute("select count(*) from skill_event").fetchone()
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Sequence

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel

from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.schema import (KINDS, SCHEMAS, EvidenceSchemaError, check_kind,
                                         duckdb_type, to_records)
from ratchet_ray.storage.fsutil import atomic_write_with, fsync_dir, may_read, read_access

EVIDENCE_DIR = "evidence"
PART_GLOB = "round=*/part-*.parquet"


class UnreadableEvidence(ValueError):
    """An evidence part cannot be read; the message names it, the run and the two commands that
    list and move such parts (module contracts)."""


def _columns_present(paths: list[Path], names: list[str]) -> set[str]:
    """The columns of ``names`` at least one part holds, newest parts read first (a part this
    code wrote holds them all, so a current run reads one footer). ``round`` is the partition."""
    wanted, present = set(names) - {"round"}, {"round"}
    for path in reversed(paths):
        try:
            present |= set(pq.read_schema(path).names) & wanted
        except (OSError, pa.ArrowException):
            return set(names)  # an unreadable part: DuckDB's read names it (read_error)
        if present >= wanted:
            break
    return present


def _holds(names: set[str], kind: str) -> str | None:
    """The other kind whose columns ``names`` are (every column a subset of its schema, some
    not of ``kind``'s), or None."""
    known = set(SCHEMAS[kind].names)
    return next((other for other in KINDS if other != kind and names - known
                 and names <= set(SCHEMAS[other].names) | {"round"}), None)


def _foreign(present: set[str], kind: str) -> bool:
    """Whether the columns ``present`` over a kind's parts include one of another kind's
    schema: then a part of that kind may be among them (the parts are checked one by one: a
    newer ratchet-ray's column of the same name is no sign); a column no kind has is not."""
    others = {name for other in KINDS if other != kind for name in SCHEMAS[other].names}
    return bool((present - set(SCHEMAS[kind].names)) & others)


def part_problem(path: Path, kind: str, *, full: bool = True) -> str | None:
    """Why ``path`` is not a readable part of ``kind`` (its footer, its columns and, ``full``,
    every row), or None when it is. A part holding every column of the kind and more (a newer
    ratchet-ray's) is readable: the views take the kind's columns. A part with another kind's
    columns says so (``a verdict part, not a capsule one``)."""
    try:
        parquet = pq.ParquetFile(path)
        names, known = set(parquet.schema_arrow.names), set(SCHEMAS[kind].names)
        other = _holds(names, kind)
        if other is not None:
            return f"unexpected columns {sorted(names - known)}: a {other} part, not a {kind} one"
        if not names <= known and not known <= names:
            return f"unexpected columns {sorted(names - known)}"
        if full:
            parquet.read()
    except (OSError, pa.ArrowException, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"[:300]
    return None




# DuckDB errors that a statement makes by itself (a user's SQL in `ratchet query`), never a part.
_SQL_ERRORS = (duckdb.ParserException, duckdb.SyntaxException, duckdb.BinderException,
               duckdb.CatalogException, duckdb.ConversionException, duckdb.OutOfRangeException,
               duckdb.TypeMismatchException, duckdb.InvalidTypeException,
               duckdb.NotImplementedException, duckdb.InterruptException)


def query_interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is how DuckDB reports a SIGINT that arrived during one of its queries: its
    own ``InterruptException``, or a ``RuntimeError`` "Query interrupted", never Python's
    ``KeyboardInterrupt``; a run and a command treat it as Ctrl-C."""
    return (isinstance(exc, duckdb.InterruptException)
            or (isinstance(exc, RuntimeError) and str(exc).startswith("Query interrupted")))


def _select_list(kind: str, present: set[str]) -> str:
    """The kind's columns in schema order; one no part holds yet (written before the column
    existed) reads as a typed null."""
    return ", ".join(f.name if f.name in present
                     else f"CAST(NULL AS {duckdb_type(f.type)}) AS {f.name}"
                     for f in SCHEMAS[kind])


def _sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def duckdb_path(path: str | Path) -> str:
    """``path`` as DuckDB's file readers take it literally: each glob character (``*``, ``?``,
    ``[``) in brackets. DuckDB globs every path it reads, so a run dir named ``run[1]`` matched
    nothing and ``run?`` matched its siblings' parts too."""
    return re.sub(r"([*?\[])", r"[\1]", str(path))


class EvidenceStore:
    """The run's append-only evidence log (see module docstring for the contracts)."""

    KINDS = KINDS

    def __init__(self, run_dir: str | Path, *, cached: bool = False):
        self.run_dir = Path(run_dir)
        self.root = self.run_dir / EVIDENCE_DIR
        self._root = self.run_dir if self.run_dir.is_dir() else None  # never made again once found
        self.cached = cached
        self._cache: _PartCache | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        # A DuckDB database and a lock do not pickle; a copy rebuilds its cache on first use.
        return {**self.__dict__, "_cache": None, "_lock": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ writing
    def partition_dir(self, kind: str, round_: int) -> Path:
        check_kind(kind)
        return self.root / kind / f"round={round_}"

    def append(self, kind: str, round_: int, rows: Sequence[dict | BaseModel]) -> Path | None:
        """Validate ``rows`` against the kind's schema and write them as one new part."""
        records = to_records(kind, rows)
        if not records:
            return None
        wrong = sorted({r["round"] for r in records if r["round"] != round_})
        if wrong:
            raise EvidenceSchemaError(
                f"{kind}: rows carry round(s) {wrong} but are appended to round {round_}; "
                "append each round's rows separately")
        try:
            table = pa.Table.from_pylist(records, schema=SCHEMAS[kind])
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as exc:
            raise EvidenceSchemaError(f"{kind}: a value does not fit its column type: {exc}") from exc
        return self.append_table(kind, round_, table)

    def append_table(self, kind: str, round_: int, table: pa.Table) -> Path | None:
        """``append`` of an Arrow table with exactly the kind's columns (cast to its types)."""
        check_kind(kind)
        schema = SCHEMAS[kind]
        if table.num_rows == 0:
            return None
        if set(table.column_names) != set(schema.names):
            raise EvidenceSchemaError(
                f"{kind}: table columns {sorted(table.column_names)} differ from the schema's "
                f"{sorted(schema.names)}")
        table = table.select(schema.names).cast(schema)
        rounds = set(table.column("round").unique().to_pylist())
        if rounds != {round_}:
            raise EvidenceSchemaError(f"{kind}: table holds rounds {sorted(rounds)}, expected only {round_}")
        return self._write_part(self.partition_dir(kind, round_), table)

    def _write_part(self, folder: Path, table: pa.Table) -> Path:
        final = folder / f"part-{uuid.uuid4().hex}.parquet"
        return atomic_write_with(
            final, lambda handle: pq.write_table(table, handle, compression="zstd"),
            replace=False, root=self._root)

    def vanished(self) -> list[Path]:
        """The parts this cached store has read that are gone since (deleted under it)."""
        cache = self._cache  # its rebuild after a part went forgets the part, ``gone`` keeps it
        return [] if cache is None else sorted(cache.gone | {
            p for paths in cache.loaded.values() for p in paths if not p.exists()})

    def migrate_partitions(self) -> list[Path]:
        """Rename padded partition folders (``round=03``) to ``round=3``; returns those renamed.
        Writers call it on taking the run dir: mixed padded and unpadded values make DuckDB type
        the partition as VARCHAR."""
        moved: list[Path] = []
        for kind in KINDS:
            before = len(moved)
            for folder in sorted((self.root / kind).glob("round=0*")):
                value = folder.name.split("=", 1)[1]
                if not folder.is_dir() or not value.isdigit() or value == "0":
                    continue
                target = folder.with_name(f"round={int(value)}")
                if target.exists():
                    for part in folder.iterdir():
                        os.rename(part, target / part.name)  # uuid names never collide
                    folder.rmdir()
                else:
                    os.rename(folder, target)
                moved.append(folder)
            if len(moved) > before:
                fsync_dir(self.root / kind)
        return moved

    # ------------------------------------------------------------------ reading
    def part_paths(self, kind: str) -> list[Path]:
        """The kind's parts, sorted; one this user may not read (or a folder it may not list,
        which a glob would skip silently) is ``UnreadableEvidence`` (module contracts)."""
        check_kind(kind)
        folder = self.root / kind
        self._require_access(self.root, folder)
        rounds = sorted(r for r in folder.glob("round=*") if r.is_dir())
        self._require_access(*rounds)
        parts = [p for r in rounds for p in sorted(r.glob("part-*.parquet"))]
        self._require_access(*parts)
        return parts

    def _require_access(self, *paths: Path) -> None:
        for path in paths:
            if not may_read(path):
                raise UnreadableEvidence(
                    f"{path} may not be read by this user (permission denied), so the evidence "
                    f"of {self.run_dir} cannot be read whole; fix: {read_access(self.root)}; "
                    "nothing there is damaged, so `evidence repair` would not help")

    def view_sql(self, kind: str) -> str:
        """The SELECT behind the ``kind`` view (typed and empty when the kind has no parts)."""
        parts = self.part_paths(kind)
        if not parts:
            return f"SELECT {_select_list(kind, set())} WHERE false"
        pattern = _sql_literal(f"{duckdb_path(self.root.resolve() / kind)}/{PART_GLOB}")
        columns = _select_list(kind, _columns_present(parts, SCHEMAS[kind].names))
        return (f"SELECT {columns} FROM read_parquet({pattern}, "
                "hive_partitioning=true, hive_types={'round': INTEGER}, union_by_name=true)")

    def connect(self, *, sandboxed: bool = False,
                kinds: Sequence[str] = KINDS) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection with one view (or, ``cached``, one table) per kind (module doc);
        ``kinds`` limits an uncached connection to those views (a reader that needs one view
        skips scanning the others' parts)."""
        if self.cached and not sandboxed and tuple(kinds) == tuple(KINDS):
            with self._lock:
                if self._cache is None:
                    self._cache = _PartCache(self)
                self._cache.refresh()
                return self._cache.con.cursor()
        con = duckdb.connect(":memory:")
        try:
            for kind in kinds:  # DuckDB reads every part's footer here (union_by_name)
                con.execute(f'CREATE VIEW "{kind}" AS {self.view_sql(kind)}')
                parts = self.part_paths(kind)
                if parts:  # the columns over every part: another kind's part shows here
                    pattern = _sql_literal(f"{duckdb_path(self.root.resolve() / kind)}/"
                                           f"{PART_GLOB}")
                    present = {row[0] for row in con.execute(
                        f"DESCRIBE SELECT * FROM read_parquet({pattern}, union_by_name=true)")
                        .fetchall()}
                    self.refuse_misplaced(kind, present, parts)
        except duckdb.Error as exc:
            con.close()
            error = self.read_error(exc)
            if error is exc:
                raise
            raise error from exc
        except UnreadableEvidence:
            con.close()
            raise
        if sandboxed:
            allowed = _sql_literal(str(self.root.resolve()) + os.sep)
            con.execute(f"SET allowed_directories=[{allowed}]")
            con.execute("SET enable_external_access=false")
            con.execute("SET lock_configuration=true")
        return con

    def bad_parts(self, *, full: bool = True, only: set[Path] = frozenset()
                  ) -> list[tuple[str, Path, str]]:
        """``(kind, part, why)`` of every part ``part_problem`` finds unreadable (``full``: every
        row decoded too), or of the parts in ``only`` (resolved paths) when it names some."""
        return [(kind, path, reason) for kind in KINDS for path in self.part_paths(kind)
                if not only or path.resolve() in only
                if (reason := part_problem(path, kind, full=full)) is not None]

    def read_error(self, exc: BaseException) -> BaseException:
        """``UnreadableEvidence`` naming an unreadable part of this run, else ``exc`` itself
        (module contracts)."""
        if isinstance(exc, _SQL_ERRORS):  # the statement's own mistake: no part to blame
            return exc
        named = {Path(p).resolve() for p in re.findall(r"[^'\"\s]+\.parquet", str(exc))}
        bad = self.bad_parts(full=False) or self.bad_parts(only=named)
        if not bad:
            return exc
        return self._unreadable(bad)

    def _unreadable(self, bad: list[tuple[str, Path, str]]) -> UnreadableEvidence:
        """The one line naming the first of ``bad`` (``bad_parts``' items) and both commands."""
        _, path, reason = bad[0]
        what = (f"evidence part {path}" if len(bad) == 1
                else f"{len(bad)} evidence parts, e.g. {path},")
        return UnreadableEvidence(
            f"{what} cannot be read ({' '.join(reason.split())}); fix: `ratchet --db "
            f"{self.run_dir} evidence verify` lists every unreadable part, then `ratchet --db "
            f"{self.run_dir} evidence repair` moves them to quarantine/ (nothing is deleted)")

    def refuse_misplaced(self, kind: str, present: set[str], paths: Sequence[Path]) -> None:
        """``UnreadableEvidence`` (``_unreadable``'s line) when ``present``, the columns over
        ``paths`` (parts of ``kind``), shows another kind's and a part of ``paths`` holds
        another kind's columns (module contracts); nothing when none does."""
        if not _foreign(present, kind):
            return
        bad = [(kind, path, reason) for path in paths
               if (reason := part_problem(path, kind, full=False)) is not None]
        if bad:
            raise self._unreadable(bad)

    def capsule_ids(self, round_: int | None = None) -> set[str]:
        """Capsule ids already recorded (all rounds, or one): a resumed run skips them."""
        with self.connect() as con:
            rows = (nq.fetch_all(con, "capsule_ids") if round_ is None
                    else nq.fetch_all(con, "capsule_ids_of_round", round=round_))
        return {row[0] for row in rows}

    def row_count(self, kind: str) -> int:
        check_kind(kind)
        return sum(pq.ParquetFile(p).metadata.num_rows for p in self.part_paths(kind))

    # ------------------------------------------------------------------ pruning
    def prune_parts(self, kind: str, *, keep_days: float, dry_run: bool = False,
                    now: float | None = None) -> list[Path]:
        """Delete the parts of ``kind`` whose every row is older than ``keep_days`` (a part is never
        edited); returns the parts removed (``dry_run``: that would be). An unreadable part
        (its age unknown) is ``UnreadableEvidence`` before anything is deleted."""
        if keep_days < 0:
            raise ValueError(f"keep_days must be >= 0, got {keep_days}")
        cutoff = (time.time() if now is None else now) - keep_days * 86400.0
        try:
            doomed = [p for p in self.part_paths(kind) if self._newest_created_at(p) < cutoff]
        except (OSError, pa.ArrowException) as exc:
            raise self.read_error(exc) from exc
        if not dry_run:
            for path in doomed:
                path.unlink()
        return doomed

    @staticmethod
    def _newest_created_at(path: Path) -> float:
        column = pq.read_table(path, columns=["created_at"]).column("created_at")
        newest = pc.max(column).as_py()
        return float("inf") if newest is None else float(newest)


class _PartCache:
    """The parts of every kind loaded into one in-memory DuckDB database (``cached=True``)."""

    def __init__(self, store: EvidenceStore):
        self.store = store
        self.con = duckdb.connect(":memory:")
        self.loaded: dict[str, set[Path]] = {kind: set() for kind in KINDS}
        self.gone: set[Path] = set()  # parts loaded once and gone since
        for kind in KINDS:
            self._create(kind)

    def _create(self, kind: str) -> None:
        columns = ", ".join(f"{f.name} {duckdb_type(f.type)}" for f in SCHEMAS[kind])
        self.con.execute(f'CREATE OR REPLACE TABLE "{kind}" ({columns})')

    def refresh(self) -> None:
        """Load the parts that appeared since the last refresh (all of a kind that lost one)."""
        for kind in KINDS:
            present = set(self.store.part_paths(kind))
            if not self.loaded[kind] <= present:  # pruned: rebuild from what is left
                self.gone |= self.loaded[kind] - present
                self._create(kind)
                self.loaded[kind] = set()
            new = sorted(present - self.loaded[kind])
            if new:
                try:
                    self._load(kind, new)
                except duckdb.Error as exc:
                    error = self.store.read_error(exc)
                    if error is exc:
                        raise
                    raise error from exc
                self.loaded[kind].update(new)

    def _load(self, kind: str, paths: list[Path]) -> None:
        files = "[" + ", ".join(_sql_literal(duckdb_path(p.resolve())) for p in paths) + "]"
        source = (f"read_parquet({files}, hive_partitioning=true, "
                  "hive_types={'round': INTEGER}, union_by_name=true)")
        present = {row[0] for row in self.con.execute(f"DESCRIBE SELECT * FROM {source}")
                   .fetchall()}
        self.store.refuse_misplaced(kind, present, paths)
        self.con.execute(f'INSERT INTO "{kind}" SELECT {_select_list(kind, present)} FROM {source}')
