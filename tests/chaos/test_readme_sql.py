"""Every SQL block of docs/evidence.md's DuckDB section (the queries the docs show users),
verbatim, against a real run dir."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

import chaos_lib

README = Path(__file__).resolve().parents[2] / "docs" / "evidence.md"


def readme_sql() -> list[str]:
    section = README.read_text().split("## Querying the evidence with DuckDB", 1)[1]
    section = section.split("\n## ", 1)[0]
    blocks = re.findall(r"```sql\n(.*?)```", section, re.S)
    assert blocks, "docs/evidence.md's DuckDB section has no ```sql block"
    return [s.query for block in blocks for s in duckdb.extract_statements(block)]


def test_readme_queries_run_verbatim_and_round_is_an_integer(scenario_reference):
    run_dir = scenario_reference(chaos_lib.ROUNDS)
    statements = readme_sql()
    assert len(statements) >= 3
    con = duckdb.connect()
    for sql in statements:
        assert "results/mbpp/RUN" in sql
        cursor = con.execute(sql.replace("results/mbpp/RUN", str(run_dir)))
        names = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
        assert rows, sql
        if "round" in names:
            rounds = [r[names.index("round")] for r in rows]
            assert all(isinstance(r, int) for r in rounds), (sql, rounds)
            assert rounds == sorted(rounds) and set(rounds) == set(range(chaos_lib.ROUNDS))
    # The headline comparison works on the raw files as on the views.
    glob = f"{run_dir}/evidence/capsule/**/*.parquet"
    assert con.execute(f"SELECT count(*) FROM read_parquet('{glob}', hive_partitioning=true) "
                       "WHERE round = 1").fetchall()[0][0] > 0
