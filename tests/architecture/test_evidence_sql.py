"""Evidence SQL lives in ``ratchet_ray/evidence/`` only, and no SQL text is built by formatting.

How it decides: every Python module of the shipped packages is parsed; a string constant that is
not a docstring is SQL when it starts with a statement keyword (SELECT, WITH, INSERT, CREATE,
DELETE, UPDATE, COPY, DESCRIBE) or holds ``SELECT ... FROM``. An f-string is SQL by the same rule
applied to its literal parts. ``bench/`` is not shipped: it times SQL engines against each
other and writes its own SQL on purpose.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import duckdb
import pytest

from ratchet_ray.evidence import named_queries as nq

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ratchet_ray", "jobs", "actors")
EVIDENCE = ROOT / "ratchet_ray" / "evidence"
SQL = re.compile(r"^\s*(SELECT|WITH|INSERT|CREATE|DELETE|UPDATE|COPY|DESCRIBE)\b"
                 r"|\bSELECT\b[\s\S]*\bFROM\b")
# DuckDB cannot bind a parameter inside a view definition or in an identifier, so the store
# splices the (quoted) part glob, kind names and column lists into its DDL; nothing else may.
FORMATTED_DDL = {("store.py", "view_sql"), ("store.py", "connect"), ("store.py", "_create"),
                 ("store.py", "_load")}


def _modules():
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def _docstrings(tree: ast.AST) -> set[int]:
    nodes = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, nodes) and ast.get_docstring(n, clean=False) is not None}


def _sql_literals(path: Path) -> tuple[list[str], list[tuple[str, int]]]:
    """(plain SQL constants as 'line: text', formatted SQL as (enclosing function, line))."""
    tree = ast.parse(path.read_text())
    docs = _docstrings(tree)
    formatted_parts: set[int] = set()
    formatted = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if isinstance(node, ast.JoinedStr):
            parts = [v for v in node.values if isinstance(v, ast.Constant)]
            formatted_parts.update(id(v) for v in parts)
            if SQL.search("".join(str(v.value) for v in parts)):
                formatted.append((function, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, "<module>")
    plain = [f"{n.lineno}: {n.value.strip()[:60]!r}" for n in ast.walk(tree)
             if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
             and id(n) not in formatted_parts and SQL.search(n.value)]
    return plain, sorted(set(formatted))


def test_no_module_outside_evidence_writes_sql():
    found = {}
    for path in _modules():
        if EVIDENCE not in path.parents:
            plain, formatted = _sql_literals(path)
            if plain or formatted:
                found[str(path.relative_to(ROOT))] = plain + [f"{ln}: f-string in {fn}"
                                                              for fn, ln in formatted]
    assert not found, ("SQL outside ratchet_ray/evidence/: add a named query to "
                       f"ratchet_ray/evidence/named_queries.py and call it by name: {found}")


def test_evidence_formats_sql_only_for_ddl_duckdb_cannot_bind():
    formatted = {(path.name, fn): line for path in sorted(EVIDENCE.rglob("*.py"))
                 for fn, line in _sql_literals(path)[1]}
    assert set(formatted) <= FORMATTED_DDL, sorted(set(formatted) - FORMATTED_DDL)


def test_the_checker_sees_sql_in_every_form(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('"""SELECT x FROM docstring is prose."""\n'
                      'A = "SELECT a FROM capsule"\n'
                      'def f(where):\n'
                      '    return f"SELECT * FROM capsule WHERE {where}"\n'
                      'B = "use SELECT over the evidence views"\n')
    plain, formatted = _sql_literals(sample)
    assert plain == ["2: 'SELECT a FROM capsule'"] and formatted == [("f", 4)]


def test_every_named_query_prepares_against_the_evidence_views(tmp_path):
    """Each query binds its parameters and plans against the real (empty, typed) views."""
    from ratchet_ray.evidence.store import EvidenceStore

    sample = {"round": 0, "split": "train", "none": "NONE", "ids": ["c"], "since": 0.0,
              "events": ["created"], "files": [], "splits": ["eval"], "floor": 1,
              "statuses": ["tampered"], "screen_only": "screen", "pattern": "%screen%",
              "prefix": "cheat:", "after": 0, "last": 1, "limit": 5}
    with EvidenceStore(tmp_path).connect() as con:
        for name, query in sorted(nq.QUERIES.items()):
            if name == "capsules_with_verdicts":  # reads parts by path: none in an empty run
                continue
            rows = nq.fetch_all(con, name, **{p: sample[p] for p in query.params})
            assert isinstance(rows, list), name


def test_a_named_query_refuses_unknown_names_and_wrong_parameters():
    con = duckdb.connect()
    with pytest.raises(KeyError, match="no named evidence query 'nope'"):
        nq.fetch_all(con, "nope")
    with pytest.raises(KeyError, match=r"takes parameters \['round'\], got \[\]"):
        nq.fetch_one(con, "verdicts_of_round")
