"""Doors of the read-side and maintenance commands not met elsewhere: a run dir this user may
not read in part (a copy made by another user, a ``chmod`` gone wrong), a part that is a link
to nowhere, a maintenance command while a run writes. Each is one ``Error:`` line naming the
cause and the fix, never a traceback or a round missing without a word, and nothing of the run
is set aside or removed that is not broken.

Root reads whatever the mode bits say, so as root a command meeting them runs without the
capabilities that let it (``setpriv``); as another user ``chmod`` alone does it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from offline_data import mbpp_plus_path
from library_fixtures import two_round_run
from one_line import process_error_line, ratchet_denied
from refusals import ratchet, refused
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.llm.cache import SolverCache
from ratchet_ray.storage.runlock import RunLock


@pytest.fixture
def run(run_dir) -> Path:
    """A two-round run: config.yaml, a skill, capsules of rounds 0 and 1."""
    return two_round_run(run_dir, ("one",))


@pytest.mark.parametrize("what", ["round folder", "evidence folder"])
def test_evidence_this_user_may_not_read_is_named_not_skipped(run, deny, what):
    """A round folder it may not list was skipped by the glob (the round's capsules missing from
    every answer, `evidence verify` finding nothing wrong); the evidence folder was a
    traceback."""
    folder = (run / "evidence" / "capsule" / "round=1" if what == "round folder"
              else run / "evidence")
    deny(folder)
    for args in (["query", "select count(*) from capsule"], ["evidence", "verify"]):
        done = ratchet_denied("--db", str(run), *args)
        process_error_line(done, f"{folder} may not be read by this user", "read access",
                           "`evidence repair` would not help")


@pytest.mark.parametrize("name, command", [
    ("skills", ["--db", "RUN", "skill", "list"]),
    ("loop.json", ["report", "RUN", "-o", "OUT/report.html"]),
    ("loop.json", ["plot", "RUN", "-o", "OUT"]),
], ids=["skill-list", "report", "plot"])
def test_a_run_file_this_user_may_not_read_is_named_as_a_read(run, deny, tmp_path, name,
                                                               command):
    """The skills folder was a traceback (listed for the bank); an unreadable loop.json was
    'cannot write the report ... pass a writable file with -o', a fix that cannot help."""
    deny(run / name)
    done = ratchet_denied(*[a.replace("RUN", str(run)).replace("OUT", str(tmp_path / "out"))
                            for a in command])
    process_error_line(done, f"{run / name}: cannot read it: Permission denied", "read access")


@pytest.mark.parametrize("command", [["run", "--resume", "RUN"],
                                     ["run", "mbpp", "--config", "RUN/config.yaml"]],
                         ids=["resume", "config"])
def test_a_config_file_this_user_may_not_read_names_the_fix(run, deny, command):
    """It was 'RUN/config.yaml: cannot read it: Permission denied', naming no fix."""
    deny(run / "config.yaml")
    done = ratchet_denied(*[a.replace("RUN", str(run)) for a in command])
    process_error_line(done, f"{run / 'config.yaml'}: cannot read it: Permission denied",
                       "give this user read access", "or run as its owner")


def test_a_subset_file_this_user_may_not_read_names_the_fix(tmp_path, deny):
    """It was click's "Invalid value for '--subset': File ... is not readable.", naming no fix."""
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": ["Mbpp/2"], "eval_ids": ["Mbpp/3"]}))
    deny(subset)
    done = ratchet_denied("run", "mbpp", "--rounds", "1", "--subset", str(subset), "--set",
                          f"results_dir={tmp_path / 'results'}", "--dry-run")
    process_error_line(done, f"subset file {subset}: cannot read it: Permission denied",
                       "give this user read access")


def test_a_split_file_this_user_may_not_read_names_the_fix(run, deny):
    """It was a PermissionError's traceback on ``run --resume``."""
    mbpp_plus_path()  # the run's tasks load before its split files are read
    for name, ids in (("train_ids.json", ["Mbpp/2"]), ("eval_ids.json", ["Mbpp/3"])):
        (run / name).write_text(json.dumps(ids))
    deny(run / "eval_ids.json")
    done = ratchet_denied("run", "--resume", str(run))
    process_error_line(done, f"{run / 'eval_ids.json'}: cannot read it: Permission denied",
                       "give this user read access")


def test_repair_sets_no_part_aside_that_only_this_user_may_not_read(run, deny):
    """`evidence repair` moved a good part this user may not read into quarantine/, so its
    capsules left every view."""
    part = next((run / "evidence" / "capsule" / "round=1").glob("*.parquet"))
    deny(part)
    done = ratchet_denied("--db", str(run), "evidence", "repair")
    process_error_line(done, f"{part} may not be read by this user")
    assert part.exists() and not (run / "quarantine").exists()


@pytest.mark.parametrize("target", ["nowhere.parquet", "part-itself.parquet"])
def test_a_part_that_is_a_link_to_nowhere_is_listed_and_set_aside(run, target):
    """A part linked to a missing file or to itself: `evidence verify` was a traceback (the
    part's size read through the link)."""
    link = run / "evidence" / "capsule" / "round=1" / "part-itself.parquet"
    link.symlink_to(link.parent / target)
    verify = ratchet("--db", str(run), "evidence", "verify")
    assert verify.exit_code == 1 and f"BAD  {link}" in verify.output, verify.output
    repair = ratchet("--db", str(run), "evidence", "repair")
    assert repair.exit_code == 0 and "1 part(s) quarantined" in repair.output, repair.output
    assert "\n6\n" in ratchet("--db", str(run), "query", "select count(*) from capsule").output


def test_solver_cache_clear_waits_until_no_run_writes_there(run):
    """It emptied the cache of a run that was writing there (the other writers of a run dir
    take its lock)."""
    cache = SolverCache(run / "solver_cache")
    cache.put("ab" * 8, {"reply": {"model": "m", "text": "x"}, "created_at": 1.0})
    with RunLock(run, "ratchet run"):
        refused(ratchet("--db", str(run), "solver-cache", "clear", "--yes"),
                f"pid {os.getpid()}", "read-only commands")
    assert len(list(cache.entries())) == 1
    done = ratchet("--db", str(run), "solver-cache", "clear", "--yes")
    assert done.exit_code == 0 and not list(cache.entries()), done.output


def test_ctrl_c_during_a_query_is_an_abort_not_a_traceback(run, monkeypatch):
    """DuckDB answers a SIGINT during a query with RuntimeError('Query interrupted'), not
    KeyboardInterrupt, and it went out as a traceback. (Raised here: a real SIGINT lands on
    whichever thread the kernel picks, and DuckDB sees it only sometimes.)"""
    class Interrupted:
        def execute(self, sql):
            raise RuntimeError("Query interrupted")

        def close(self):
            pass

    monkeypatch.setattr(EvidenceStore, "connect", lambda self, **kwargs: Interrupted())
    done = ratchet("--db", str(run), "query", "select 1")
    assert done.exit_code == 1 and isinstance(done.exception, SystemExit), repr(done.exception)
    assert done.output.strip() == "Aborted!", done.output


def test_an_audit_limit_past_what_a_query_can_take_shows_every_event(run):
    """A --limit past 64 bits was DuckDB's conversion traceback."""
    done = ratchet("--db", str(run), "audit", "--limit", "99999999999999999999")
    assert done.exit_code == 0 and "one" in done.output and "(1 row)" in done.output, done.output


def test_a_part_a_newer_version_wrote_is_read_and_never_set_aside(run):
    """A part holding every column of its kind and one more (a newer ratchet-ray's) was 'BAD:
    unexpected columns' to verify, and repair moved its capsules out of every view, though the
    views read it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    part = next((run / "evidence" / "capsule" / "round=1").glob("*.parquet"))
    table = pq.read_table(part)
    pq.write_table(table.append_column("newer", pa.array(["x"] * table.num_rows)), part)
    assert ratchet("--db", str(run), "evidence", "verify").exit_code == 0
    repair = ratchet("--db", str(run), "evidence", "repair")
    assert repair.exit_code == 0 and "0 part(s) quarantined" in repair.output, repair.output
    assert "\n6\n" in ratchet("--db", str(run), "query", "select count(*) from capsule").output
