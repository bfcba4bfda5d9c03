"""Per-skill contribution query: DuckDB over the Parquet evidence vs the same rows in SQLite.

Writes N synthetic capsules (default 1,000,000) over R rounds (100) routed to S skills (200, plus
the NONE route) through ``EvidenceStore.append_table`` -- one part per round, the real write path
-- and the same rows into SQLite, the reference implementation's store (one ``capsules`` table
holding the full forensic payload, indexed on ``skill_id``; a forced full scan of that table and
a copy with a covering index, SQLite's best case, are shown too). Then it times the curator's
query (named query ``skill_stats``: trials and successes per skill over train capsules) on each,
checks that all answers agree, and prints median timings and the ratios.
Target: DuckDB >= 10x faster than SQLite's reference table and < 1 s.

    .venv/bin/python bench/evidence_query.py [--capsules 1000000] [--repeats 7] [--keep DIR]
"""

from __future__ import annotations

import argparse
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ratchet_ray.evidence.named_queries import QUERIES  # noqa: E402
from ratchet_ray.evidence.queries import skill_stats  # noqa: E402
from ratchet_ray.evidence.schema import SCHEMAS  # noqa: E402
from ratchet_ray.evidence.store import EvidenceStore  # noqa: E402
from ratchet_ray.types import NONE_SKILL  # noqa: E402

OUTPUTS = [f"def solve_{i}(xs):\n    total = 0\n    for x in xs:\n        total += x * {i}\n"
           f"    return total  # candidate {i}" + " " * (i % 50) for i in range(64)]
TRACES = [f"AssertionError: solve_{i}([1, 2, 3]) == {i * 6} failed on hidden test {i % 9}"
          for i in range(64)]


def round_table(rng: np.random.Generator, round_: int, n: int, skills: int) -> pa.Table:
    names = np.array([f"skill_{i:03d}" for i in range(skills)], dtype=object)
    skill_idx = rng.integers(-1, skills, n)  # -1 is the NONE route
    skill_ids = np.where(skill_idx < 0, NONE_SKILL, names[np.maximum(skill_idx, 0)])
    split = np.where(rng.random(n) < 0.6, "train", "eval")
    base = f"r{round_:03d}-"
    columns = {
        "capsule_id": [base + str(i) for i in range(n)], "run_id": ["bench"] * n,
        "arm": ["default"] * n, "seed": np.full(n, 42), "round": np.full(n, round_, dtype=np.int32),
        "split": split, "task_id": [f"Mbpp/{i % 400}" for i in range(n)],
        "attempt": np.zeros(n, dtype=np.int32), "skill_id": skill_ids,
        "passed": rng.random(n) < 0.45, "exit_status": ["ok"] * n,
        "infra_failure": rng.random(n) < 0.01,
        "output": [OUTPUTS[i % 64] for i in range(n)], "grader_trace": [TRACES[i % 64] for i in range(n)],
        "input_tokens": rng.integers(200, 900, n), "output_tokens": rng.integers(20, 300, n),
        "latency_s": rng.random(n) * 3, "cost_usd": rng.random(n) / 1000,
        "created_at": np.full(n, time.time()),
    }
    # Every column of today's schema, in its order; one the bench does not make (``impossible``:
    # null outside the cheat probe's twins, or one added later) is null, so the bench follows the
    # schema instead of breaking on it.
    schema = SCHEMAS["capsule"]
    return pa.Table.from_arrays(
        [pa.array(columns[f.name], f.type) if f.name in columns else pa.nulls(n, f.type)
         for f in schema], schema=schema)


_SQLITE_TYPES = {pa.string(): "TEXT", pa.int64(): "INTEGER", pa.int32(): "INTEGER",
                 pa.bool_(): "INTEGER", pa.float64(): "REAL"}


def sqlite_ddl() -> str:
    """The reference store's table: the capsule schema's columns, indexed on ``skill_id``."""
    columns = ", ".join(f"{f.name} {_SQLITE_TYPES[f.type]}"
                        + (" PRIMARY KEY" if f.name == "capsule_id" else "")
                        for f in SCHEMAS["capsule"])
    return (f"CREATE TABLE capsules ({columns});\n"
            "CREATE INDEX capsules_skill ON capsules(skill_id);\n")


def sqlite_dialect(sql: str) -> str:
    """The ``skill_stats`` query as SQLite reads it (no ``count_if``, booleans as 0/1)."""
    sql = sql.replace("count_if(passed)", "sum(passed)").replace("FROM capsule\n", "FROM capsules\n")
    return re.sub(r"coalesce\((\w+), false\)", r"coalesce(\1, 0)", sql)


def median_time(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--capsules", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--skills", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--keep", type=Path, default=None, help="Write here and keep the data.")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="evidence-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        run(args, root)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


def run(args: argparse.Namespace, root: Path) -> None:
    rng = np.random.default_rng(42)
    store = EvidenceStore(root / "run")
    db = sqlite3.connect(root / "history.db")
    db.executescript(sqlite_ddl())
    per_round = args.capsules // args.rounds
    write_parquet = write_sqlite = 0.0
    for round_ in range(args.rounds):
        table = round_table(rng, round_, per_round, args.skills)
        start = time.perf_counter()
        store.append_table("capsule", round_, table)
        write_parquet += time.perf_counter() - start
        rows = list(zip(*(table.column(c).to_pylist() for c in SCHEMAS["capsule"].names)))
        start = time.perf_counter()
        db.executemany(f"INSERT INTO capsules VALUES ({','.join('?' * len(rows[0]))})", rows)
        db.commit()
        write_sqlite += time.perf_counter() - start
    db.execute("ANALYZE")
    total = per_round * args.rounds
    print(f"data: {total:,} capsules, {args.rounds} rounds, {args.skills} skills (+NONE); "
          f"parquet {dir_size(store.root) / 1e6:.0f} MB in {write_parquet:.1f} s, "
          f"sqlite {(root / 'history.db').stat().st_size / 1e6:.0f} MB in {write_sqlite:.1f} s")

    con = store.connect()
    duck_s, duck = median_time(lambda: skill_stats(con, "train"), args.repeats)
    cold_s, _ = median_time(lambda: skill_stats(store.connect(), "train"), args.repeats)
    sqlite_sql = sqlite_dialect(QUERIES["skill_stats"].sql)

    def sqlite_stats(sql: str) -> dict:
        params = {"split": "train", "none": NONE_SKILL}
        return {s: (int(t), int(ok)) for s, t, ok in db.execute(sql, params)}

    db.execute("SELECT count(*) FROM capsules").fetchone()  # warm the page cache like DuckDB's
    lite_s, lite = median_time(lambda: sqlite_stats(sqlite_sql), args.repeats)
    scan_sql = sqlite_sql.replace("FROM capsules\n", "FROM capsules NOT INDEXED\n")
    scan_s, scan = median_time(lambda: sqlite_stats(scan_sql), args.repeats)
    db.executescript("CREATE TABLE capsules_covered AS SELECT * FROM capsules; CREATE INDEX cov ON "
                     "capsules_covered(split, skill_id, infra_failure, impossible, passed); ANALYZE;")
    covered_sql = sqlite_sql.replace("FROM capsules\n", "FROM capsules_covered\n")
    best_s, best = median_time(lambda: sqlite_stats(covered_sql), args.repeats)

    answer = {k: (v.trials, v.successes) for k, v in duck.items()}
    if not answer == lite == scan == best or len(answer) != args.skills:
        raise SystemExit("MISMATCH: DuckDB and SQLite disagree on the per-skill counts")
    print(f"per-skill contribution query (median of {args.repeats}, {len(answer)} skills, answers agree):")
    print(f"  duckdb over parquet (open connection) {duck_s * 1000:8.1f} ms")
    print(f"  duckdb incl. connect + views          {cold_s * 1000:8.1f} ms")
    print(f"  sqlite, reference table (idx skill_id){lite_s * 1000:8.1f} ms")
    print(f"  sqlite, same table, full scan         {scan_s * 1000:8.1f} ms")
    print(f"  sqlite, covering index (best case)    {best_s * 1000:8.1f} ms")
    print(f"ratio sqlite/duckdb: {lite_s / duck_s:.1f}x (reference table), {scan_s / duck_s:.1f}x "
          f"(full scan), {best_s / duck_s:.1f}x (covering index); incl. connect: {lite_s / cold_s:.1f}x")
    ok = lite_s / duck_s >= 10 and duck_s < 1.0
    print(f"target (>= 10x vs reference table and < 1 s): {'MET' if ok else 'NOT MET'}")


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


if __name__ == "__main__":
    main()
