"""EvidenceStore(cached=True): the loop's long-lived readers load only new parts, and read exactly
what the views over the Parquet parts read."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pyarrow.parquet as pq
from skill_builders import routed_capsules

from ratchet_ray.evidence.schema import KINDS, SCHEMAS, to_records
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.types import RoundSummary


def _all_rows(store: EvidenceStore) -> dict[str, list]:
    with store.connect() as con:
        return {kind: con.execute(f'SELECT * FROM "{kind}" ORDER BY ALL').fetchall()
                for kind in KINDS}


def test_cached_reads_equal_the_views_and_see_every_new_part(run_dir):
    writer, cached = EvidenceStore(run_dir), EvidenceStore(run_dir, cached=True)
    assert _all_rows(cached) == {kind: [] for kind in KINDS}  # typed empty tables first
    writer.append("capsule", 0, routed_capsules("run1", "s1", 0, 2, 1))
    writer.append("round", 0, [to_records("round", [RoundSummary(round=0)])[0]
                               | {"run_id": "run1"}])
    assert _all_rows(cached) == _all_rows(writer)
    writer.append("capsule", 1, routed_capsules("run1", "s2", 1, 1, 3))
    writer.append("skill_event", 1, [{"run_id": "run1", "round": 1, "skill_id": "s2",
                                      "event": "added"}])
    rows = _all_rows(cached)
    assert rows == _all_rows(writer) and len(rows["capsule"]) == 7
    con = cached.connect()
    described = con.execute("DESCRIBE capsule").fetchall()
    con.close()
    view = writer.connect()
    assert described == view.execute("DESCRIBE capsule").fetchall()  # same names and types


def test_a_pruned_part_is_dropped_from_the_cache(run_dir):
    writer, cached = EvidenceStore(run_dir), EvidenceStore(run_dir, cached=True)
    old = writer.append("capsule", 0, routed_capsules("run1", "old", 0, 1, 1))
    writer.append("capsule", 0, routed_capsules("run1", "new", 0, 1, 0))
    assert len(_all_rows(cached)["capsule"]) == 3
    old.unlink()  # what prune_parts does to a whole part
    assert {row[8] for row in _all_rows(cached)["capsule"]} == {"new"}


def test_a_part_without_a_newer_column_reads_it_as_null(run_dir):
    # A part written before a column existed (here: capsule ``attempt``) still loads.
    writer, cached = EvidenceStore(run_dir), EvidenceStore(run_dir, cached=True)
    writer.append("capsule", 0, routed_capsules("run1", "s1", 0, 1, 0))
    full = pq.read_table(writer.part_paths("capsule")[0])
    folder = writer.partition_dir("capsule", 1)
    folder.mkdir(parents=True)
    older = full.drop_columns(["attempt"]).set_column(
        full.schema.get_field_index("round"), "round", pa.array([1], pa.int32()))
    pq.write_table(older, folder / "part-older.parquet")
    rows = _all_rows(cached)["capsule"]
    assert rows == _all_rows(writer)["capsule"] and len(rows) == 2
    names = SCHEMAS["capsule"].names
    by_round = {row[names.index("round")]: row for row in rows}
    assert by_round[1][names.index("attempt")] is None
    assert by_round[0][names.index("attempt")] is not None


def test_a_cached_store_pickles_without_its_database(run_dir):
    cached = EvidenceStore(run_dir, cached=True)
    EvidenceStore(run_dir).append("capsule", 0, routed_capsules("run1", "s1", 0, 1, 0))
    assert len(_all_rows(cached)["capsule"]) == 1
    copy = pickle.loads(pickle.dumps(cached))
    assert copy.cached and len(_all_rows(copy)["capsule"]) == 1
