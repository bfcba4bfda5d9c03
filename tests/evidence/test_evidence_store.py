"""EvidenceStore: atomic append-only parts, typed DuckDB views, crashes mid-write, pruning."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from skill_builders import routed_capsules

from ratchet_ray.evidence.schema import SCHEMAS, EvidenceSchemaError
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.types import BenchResult, Capsule, RoundSummary, Verdict

ROOT = Path(__file__).resolve().parents[2]


def test_schema_columns_match_the_data_model():
    assert SCHEMAS["capsule"].names == list(Capsule.model_fields)
    assert SCHEMAS["verdict"].names == list(Verdict.model_fields)


def test_append_writes_one_hive_partitioned_part_per_call(store):
    first = store.append("capsule", 3, routed_capsules("run1", "s1", 3, 2, 1))
    second = store.append("capsule", 3, routed_capsules("run1", "s2", 3, 1, 0))
    assert first != second and first.parent.name == "round=3" and first.name.startswith("part-")
    con = store.connect()
    assert con.execute("select count(*), min(round), max(round) from capsule").fetchone() == (4, 3, 3)
    types = {row[0]: row[1] for row in con.execute("describe capsule").fetchall()}
    assert types["round"] == "INTEGER" and types["passed"] == "BOOLEAN"


def test_empty_kinds_are_empty_typed_views(store):
    con = store.connect()
    for kind, schema in SCHEMAS.items():
        assert con.execute(f'select count(*) from "{kind}"').fetchone() == (0,)
        assert [row[0] for row in con.execute(f'describe "{kind}"').fetchall()] == schema.names
    assert store.append("verdict", 0, []) is None and store.capsule_ids() == set()


def test_rows_must_fit_the_schema_and_the_partition(store):
    rows = routed_capsules("run1", "s1", 2, 1, 0)
    with pytest.raises(EvidenceSchemaError, match="appended to round 1"):
        store.append("capsule", 1, rows)
    with pytest.raises(EvidenceSchemaError, match=r"unknown column\(s\) \['colour'\]"):
        store.append("skill_event", 0, [{"run_id": "r", "round": 0, "skill_id": "s",
                                          "event": "added", "colour": "red"}])
    with pytest.raises(EvidenceSchemaError, match=r"missing required column\(s\) \['event'\]"):
        store.append("skill_event", 0, [{"run_id": "r", "round": 0, "skill_id": "s"}])
    with pytest.raises(EvidenceSchemaError, match="unknown evidence kind 'capsules'"):
        store.append("capsules", 0, rows)
    assert not store.root.exists() or store.row_count("capsule") == 0


def test_round_summaries_are_flattened(store):
    summary = RoundSummary(round=4, eval=BenchResult(split="eval", round=4, total=40, resolved=10),
                           skills_created=["a", "b"], rollback_fired=True)
    store.append("round", 4, [summary])
    row = store.connect().execute("select eval_total, eval_pass_at_1, train_total, skills_created, "
                              "rollback_fired from round").fetchone()
    assert row == (40, 0.25, None, ["a", "b"], True)


def test_a_lone_surrogate_in_any_text_is_stored_escaped_not_a_stopped_run(store):
    """A solution that raises ``ValueError('\\ud800')``, or a model reply or test log holding a
    lone surrogate: Parquet refused the capsule (``UnicodeEncodeError``) and the run stopped,
    again on every resume. Every text column stores it as its escape."""
    capsule = routed_capsules("run1", "s1", 1, 0, 1)[0].model_copy(update={
        "output": "def f():\n    raise ValueError('\ud800')", "grader_trace": "ValueError: \udcff",
        "exit_status": "raised_ValueError"})
    store.append("capsule", 1, [capsule])
    output, trace = store.connect().execute(
        "select output, grader_trace from capsule").fetchone()
    assert output == "def f():\n    raise ValueError('\\ud800')" and trace == "ValueError: \\udcff"


def test_queries_over_capsules_and_verdicts(store):
    from ratchet_ray.evidence import named_queries as nq
    from ratchet_ray.evidence.queries import recent_verdicts, skill_stats

    store.append("capsule", 1, routed_capsules("run1", "s1", 1, 3, 7)
                 + routed_capsules("run1", "NONE", 1, 5, 0)
                 + routed_capsules("run1", "s1", 1, 4, 0, split="eval"))
    infra = routed_capsules("run1", "s2", 2, 0, 1)[0].model_copy(update={"infra_failure": True})
    store.append("capsule", 2, [infra])
    for round_ in range(1, 8):
        store.append("verdict", round_, [Verdict(capsule_id=f"c{round_}", run_id="run1", round=round_,
                                                 task_id="t", attribution="hurt", pattern=f"p{round_}",
                                                 confidence=0.5)])
    con = store.connect()
    stats = skill_stats(con)
    assert set(stats) == {"s1"} and (stats["s1"].trials, stats["s1"].successes) == (10, 3)
    assert stats["s1"].contribution == -0.4
    assert skill_stats(con, "eval")["s1"].contribution == 1.0
    assert [v.round for v in recent_verdicts(con, current_round=7, window=6)] == [2, 3, 4, 5, 6, 7]
    by_round = {(r["round"], r["split"]): r for r in nq.fetch_dicts(con, "pass_at_1_by_round")}
    assert (by_round[(1, "train")]["total"], by_round[(1, "train")]["resolved"]) == (15, 8)
    assert by_round[(2, "train")]["infra_failures"] == 1 and by_round[(2, "train")]["total"] == 1


def test_capsule_ids_for_resume(store):
    rows = routed_capsules("run1", "s1", 0, 1, 1)
    store.append("capsule", 0, rows)
    store.append("capsule", 1, routed_capsules("run1", "s1", 1, 1, 0))
    assert store.capsule_ids(0) == {c.capsule_id for c in rows}
    assert len(store.capsule_ids()) == 3


CRASH_CHILD = textwrap.dedent("""
    import os, sys
    sys.path[:0] = [{root!r}, {tests!r}]
    import pyarrow.parquet as pq
    from skill_builders import routed_capsules
    from ratchet_ray.evidence.store import EvidenceStore
    store = EvidenceStore({run_dir!r})
    store.append("capsule", 0, routed_capsules("run1", "good", 0, 2, 1))
    mode = sys.argv[1]
    if mode == "mid-write":
        def half_then_die(table, where, **kw):
            where.write(b"PAR1" + b"x" * 4096)   # a torn, unreadable parquet file
            where.flush()
            os._exit(137)
        pq.write_table = half_then_die
    elif mode == "before-publish":
        def die(*a, **k):
            os._exit(137)
        os.link = die
    elif mode == "loop":
        import itertools
        for i in itertools.count(1):
            store.append("capsule", 0, routed_capsules("run1", f"loop{{i}}", 0, 500, 500))
    store.append("capsule", 0, routed_capsules("run1", "lost", 0, 5, 5))
""")


def _child(run_dir: Path, mode: str) -> subprocess.Popen:
    code = CRASH_CHILD.format(root=str(ROOT), tests=str(ROOT / "tests"), run_dir=str(run_dir))
    return subprocess.Popen([sys.executable, "-c", code, mode], stderr=subprocess.PIPE)


@pytest.mark.parametrize("mode", ["mid-write", "before-publish"])
def test_a_crash_during_a_write_leaves_nothing_duckdb_reads(run_dir, mode):
    proc = _child(run_dir, mode)
    assert proc.wait(timeout=120) == 137, proc.stderr.read().decode()
    store = EvidenceStore(run_dir)
    leftovers = list((store.root / "capsule" / "round=0").glob(".*.tmp"))
    assert len(leftovers) == 1  # the torn file is there, hidden from every reader
    con = store.connect()
    assert con.execute("select skill_id, count(*) from capsule group by all").fetchall() == [("good", 3)]
    store.append("capsule", 0, routed_capsules("run1", "after", 0, 1, 0))  # the store still works
    assert len(store.capsule_ids()) == 4


def test_sigkill_while_appending_in_a_loop_keeps_every_visible_part_whole(run_dir):
    proc = _child(run_dir, "loop")
    store = EvidenceStore(run_dir)
    deadline = time.time() + 60
    while len(store.part_paths("capsule")) < 4 and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    parts = store.part_paths("capsule")
    assert len(parts) >= 4
    total = store.connect().execute("select count(*) from capsule").fetchone()[0]
    assert total == 3 + 1000 * (len(parts) - 1) == store.row_count("capsule")


def test_parts_are_never_overwritten(store, monkeypatch):
    path = store.append("capsule", 0, routed_capsules("run1", "s1", 0, 1, 0))
    before = path.read_bytes()
    import uuid

    monkeypatch.setattr(uuid, "uuid4", lambda: type("U", (), {"hex": path.stem[5:]})())
    with pytest.raises(FileExistsError):
        store.append("capsule", 0, routed_capsules("run1", "s2", 0, 1, 0))
    assert path.read_bytes() == before and store.row_count("capsule") == 1


def test_prune_removes_only_whole_parts_older_than_the_cutoff(store):
    old = [c.model_copy(update={"created_at": time.time() - 10 * 86400})
           for c in routed_capsules("run1", "old", 0, 2, 0)]
    old_part = store.append("capsule", 0, old)
    mixed = old[:1] + routed_capsules("run1", "new", 0, 1, 0)
    store.append("capsule", 0, [c.model_copy(update={"capsule_id": c.capsule_id + "m"}) for c in mixed])
    assert store.prune_parts("capsule", keep_days=5, dry_run=True) == [old_part]
    assert old_part.exists()
    assert store.prune_parts("capsule", keep_days=5) == [old_part]
    assert not old_part.exists() and store.row_count("capsule") == 2
    with pytest.raises(ValueError, match="keep_days"):
        store.prune_parts("capsule", keep_days=-1)


def test_sandboxed_connection_reads_views_but_no_other_files(store):
    store.append("capsule", 0, routed_capsules("run1", "s1", 0, 1, 0))
    con = store.connect(sandboxed=True)
    assert con.execute("select count(*) from capsule").fetchone() == (1,)
    import duckdb

    with pytest.raises(duckdb.Error):
        con.execute("select * from read_csv('/etc/passwd')").fetchall()
    with pytest.raises(duckdb.Error):
        con.execute("SET enable_external_access=true")
    assert os.path.exists(store.root)


@pytest.mark.parametrize("name", ["run[1]", "run?", "run*"])
@pytest.mark.parametrize("cached", [False, True])
def test_a_run_dir_named_with_glob_characters_reads_its_own_parts_only(tmp_path, name, cached):
    """DuckDB globs every path it reads: ``run[1]`` found no part (a traceback) and ``run?`` or
    ``run*`` read a sibling run's parts as their own."""
    from ratchet_ray.report.capsules import capsule_rows

    sibling = EvidenceStore(tmp_path / "runX")
    sibling.append("capsule", 0, routed_capsules("runX", "s", 0, 3, 0))
    own = EvidenceStore(tmp_path / name, cached=cached)
    own.append("capsule", 0, routed_capsules(name, "s", 0, 1, 1))
    with own.connect() as con:
        assert con.execute("select count(*) from capsule").fetchone() == (2,)
    assert len(capsule_rows(own.run_dir, 100, [])) == 2  # the report's browser reads them too


@pytest.mark.parametrize("cached", [False, True])
def test_another_kinds_part_among_a_kinds_parts_is_named_not_read_as_nulls(run_dir, cached):
    """Was: a verdict part copied into the capsule folder was read as capsules with nulls
    (``ratchet query`` counted its rows: 'passed' null); now every read names the part, the kind
    it holds and both commands, and ``evidence verify`` lists it."""
    from ratchet_ray.evidence.integrity import verify
    from ratchet_ray.evidence.store import UnreadableEvidence

    store = EvidenceStore(run_dir, cached=cached)
    store.append("capsule", 1, routed_capsules("run1", "s1", 1, 2, 1))
    verdict = store.append("verdict", 1, [Verdict(capsule_id="c1", run_id="run1", round=1,
                                                  task_id="t", attribution="hurt", pattern="p",
                                                  confidence=0.5)])
    assert store.connect().execute("select count(*) from capsule").fetchone() == (3,)
    stray = store.partition_dir("capsule", 1) / "part-stray.parquet"
    stray.write_bytes(verdict.read_bytes())
    with pytest.raises(UnreadableEvidence) as raised:
        store.connect().execute("select count(*) from capsule").fetchone()
    assert str(raised.value) == (
        f"evidence part {stray} cannot be read (unexpected columns ['attribution', 'confidence', "
        "'pattern', 'rationale']: a verdict part, not a capsule one); fix: `ratchet --db "
        f"{run_dir} evidence verify` lists every unreadable part, then `ratchet --db {run_dir} "
        "evidence repair` moves them to quarantine/ (nothing is deleted)")
    assert [(b.kind, b.path) for b in verify(EvidenceStore(run_dir))] == [("capsule", stray)]
