"""Crash safety of the run dir: atomic writes, snapshot swaps, the evidence sink, the writer
lock, evidence verify/repair, typed partitions, redaction, readable errors, logged bank flips."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from skill_builders import TOPICS, make_skill, routed_capsules
from fakes import HashEmbedder

from ratchet_ray.storage import fsutil
from ratchet_ray.bank import checkpoints
from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.cli import main as ratchet
from ratchet_ray.evidence import integrity
from ratchet_ray.evidence.store import EvidenceStore, UnreadableEvidence
from ratchet_ray.loop import replay
from ratchet_ray.loop.execute import EvidenceSink
from ratchet_ray.loop.rundir import RunDir, RunFileError
from ratchet_ray.sweep.folder import lock_sweep
from ratchet_ray.sweep.spec import SweepError
from ratchet_ray.storage.runlock import RunDirBusy, RunLock, holder

ROOT = Path(__file__).resolve().parents[2]


def test_atomic_write_keeps_the_old_file_when_the_write_fails(tmp_path):
    path = tmp_path / "a" / "data.json"
    fsutil.atomic_write_json(path, {"v": 1})

    def full(handle):
        handle.write(b"{half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError) as info:
        fsutil.atomic_write_with(path, full)
    assert fsutil.disk_full(info.value)
    assert json.loads(path.read_text()) == {"v": 1}
    assert [p.name for p in path.parent.iterdir()] == ["data.json"]  # no temp file left


def test_atomic_write_refuses_to_replace_a_device_fifo_or_a_link_to_one(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)  # /dev/stdout is such a link
    for target in (fifo, link):
        with pytest.raises(OSError, match="not a regular file") as info:
            fsutil.atomic_write_text(target, "report")
        assert info.value.filename == str(target)
    assert fifo.is_fifo() and link.is_symlink()  # neither replaced by a regular file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "pipe"]  # no temp file


def test_a_snapshot_swap_cut_between_its_renames_leaves_a_readable_snapshot(run_dir, monkeypatch):
    skills = [make_skill("s1", TOPICS[0])]
    checkpoints.write_snapshot(run_dir, 2, skills, [], "run1")
    real_rename, calls = os.rename, []

    def crash_on_second(src, dst):
        calls.append(dst)
        if len(calls) == 2:  # target -> target.prev done; new -> target never happens
            raise KeyboardInterrupt("power cut")
        real_rename(src, dst)

    monkeypatch.setattr(fsutil.os, "rename", crash_on_second)
    with pytest.raises(KeyboardInterrupt):
        checkpoints.write_snapshot(run_dir, 2, skills + [make_skill("s2", TOPICS[1])], [], "run1")
    monkeypatch.setattr(fsutil.os, "rename", real_rename)
    assert not checkpoints.checkpoint_dir(run_dir, 2).exists()
    assert checkpoints.available_rounds(run_dir) == [2]
    assert [s.id for s in checkpoints.read_snapshot(run_dir, 2)[0]] == ["s1"]  # the old one
    checkpoints.write_snapshot(run_dir, 2, skills + [make_skill("s2", TOPICS[1])], [], "run1")
    assert [s.id for s in checkpoints.read_snapshot(run_dir, 2)[0]] == ["s1", "s2"]
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["round_02"]


class FlakyStore(EvidenceStore):
    """Its first ``llm_call`` append fails with a full disk."""

    def __init__(self, run_dir):
        super().__init__(run_dir)
        self.failures = 1

    def append(self, kind, round_, rows):
        if kind == "llm_call" and self.failures:
            self.failures -= 1
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().append(kind, round_, rows)


def test_sink_clears_each_buffer_exactly_when_its_part_is_published(run_dir):
    store = FlakyStore(run_dir)
    sink = EvidenceSink(store, 0, set(), flush_every=100)
    for capsule in routed_capsules("run1", "s1", 0, 2, 1):
        sink.add(capsule, [{"run_id": "run1", "round": 0, "role": "solver"}])
    with pytest.raises(OSError):
        sink.flush()  # capsules published, llm_call not
    sink.flush()  # the retry (the runner's `finally`) writes only what is missing
    con = store.connect()
    assert con.execute("select count(*), count(distinct capsule_id) from capsule").fetchone() == (3, 3)
    assert con.execute("select count(*) from llm_call").fetchone() == (3,)
    assert len(store.part_paths("capsule")) == 1 and sink.written == 3


LOCK_CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    from ratchet_ray.storage.runlock import RunLock
    RunLock({folder!r}, "child writer").acquire()
    print("locked", flush=True)
    time.sleep(600)
""")


def test_one_writer_per_run_dir_released_when_the_holder_dies(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", LOCK_CHILD.format(
        root=str(ROOT), folder=str(tmp_path))], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "locked"
        with pytest.raises(RunDirBusy, match=f"pid {child.pid} on host .*child writer"):
            RunLock(tmp_path, "second").acquire()
        assert holder(tmp_path)["pid"] == child.pid
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert holder(tmp_path) is None  # the kernel dropped the dead holder's lock
    with RunLock(tmp_path, "third") as lock:
        assert lock.held and holder(tmp_path)["purpose"] == "third"
        with pytest.raises(RunDirBusy):  # a second writer in the same process too
            RunLock(tmp_path, "fourth").acquire()
    assert holder(tmp_path) is None


def test_cli_writers_take_the_lock_and_readers_do_not(run_dir, bank):
    bank.add(make_skill("s1", TOPICS[0]), round_=0)
    with RunLock(run_dir, "ratchet run"):
        for args in (["skill", "load"], ["curate"], ["evidence", "repair"]):
            result = CliRunner().invoke(ratchet, ["--db", str(run_dir), *args])
            assert result.exit_code != 0 and f"pid {os.getpid()}" in result.output, args
        for args in (["skill", "list"], ["audit"], ["curate", "--dry-run"],
                     ["query", "select count(*) from skill_event"], ["evidence", "verify"]):
            result = CliRunner().invoke(ratchet, ["--db", str(run_dir), *args])
            assert result.exit_code == 0, (args, result.output)
    assert CliRunner().invoke(ratchet, ["--db", str(run_dir), "skill", "load"]).exit_code == 0


def test_a_second_sweep_on_the_same_out_is_refused(tmp_path):
    first = lock_sweep(tmp_path / "sweep")
    with pytest.raises(SweepError, match=f"pid {os.getpid()}"):
        lock_sweep(tmp_path / "sweep")
    first.release()
    lock_sweep(tmp_path / "sweep").release()


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_verify_lists_bad_parts_and_repair_quarantines_them(run_dir, store):
    store.append("capsule", 0, routed_capsules("run1", "s1", 0, 2, 1))
    bad = store.append("capsule", 1, routed_capsules("run1", "s1", 1, 1, 1))
    store.append("verdict", 1, [{"capsule_id": "c", "run_id": "run1", "round": 1,
                                 "attribution": "none", "pattern": "p"}])
    _truncate(bad)
    with pytest.raises(UnreadableEvidence, match=f"evidence part {bad} cannot be read"):
        store.connect().execute("select count(*) from capsule").fetchone()
    (run_dir / "config.yaml").write_text("{}\n")
    with pytest.raises(integrity.CorruptEvidence) as refused:
        RunDir(run_dir).acquire("ratchet run --resume")
    assert "evidence verify" in str(refused.value) and "evidence repair" in str(refused.value)
    assert holder(run_dir) is None  # a refused writer keeps no lock

    verify = CliRunner().invoke(ratchet, ["--db", str(run_dir), "evidence", "verify"])
    assert verify.exit_code == 1 and f"BAD  {bad}" in verify.output
    repair = CliRunner().invoke(ratchet, ["--db", str(run_dir), "evidence", "repair"])
    assert repair.exit_code == 0, repair.output
    assert "lost: capsule part of round 1" in repair.output
    kept = list((run_dir / "quarantine").rglob(bad.name))
    assert len(kept) == 1 and not bad.exists() and kept[0].parent.name == "round=1"
    assert store.connect().execute("select count(*) from capsule").fetchone() == (3,)
    assert CliRunner().invoke(ratchet, ["--db", str(run_dir), "evidence", "verify"]).exit_code == 0
    RunDir(run_dir).acquire("resume")  # accepted now


def test_repair_names_what_a_damaged_part_of_every_kind_held(run_dir, store):
    """``evidence repair`` over a damaged ``validation`` part (``ratchet swe validate``'s rows)
    ended in a KeyError: the loss table lacked that kind. Every kind has its words."""
    from ratchet_ray.evidence.schema import KINDS

    assert sorted(integrity.LOSSES) == sorted(KINDS)
    bad = store.append("validation", 0, [{
        "run_id": "v1", "round": 0, "instance_id": "calc-1", "patch": "gold", "repeat": 0,
        "passed": True, "valid": True}])
    _truncate(bad)
    repair = CliRunner().invoke(ratchet, ["--db", str(run_dir), "evidence", "repair"])
    assert repair.exit_code == 0, repair.output
    assert "lost: validation part of round 0" in repair.output
    assert "swebench_validation.json still holds" in repair.output
    assert not bad.exists() and len(list((run_dir / "quarantine").rglob(bad.name))) == 1


def test_raw_duckdb_reads_give_an_integer_round_and_old_padded_dirs_are_migrated(run_dir, store):
    for r in (0, 2, 10):
        store.append("capsule", r, routed_capsules("run1", "s1", r, 1, 0))
    glob = f"{store.root}/capsule/**/*.parquet"
    rows = duckdb.sql(f"select round, typeof(round) from read_parquet('{glob}', "
                      "hive_partitioning=true) order by round").fetchall()
    assert rows == [(0, "BIGINT"), (2, "BIGINT"), (10, "BIGINT")]
    assert duckdb.sql(f"select count(*) from read_parquet('{glob}', hive_partitioning=true) "
                      "where round = 2").fetchall() == [(1,)]
    # An old run dir (zero-padded folders, and one round in both spellings) reads through the
    # views as it is, and a writer's migration makes raw reads integer too.
    os.rename(store.root / "capsule" / "round=2", store.root / "capsule" / "round=02")
    (store.root / "capsule" / "round=00").mkdir()
    os.rename(next((store.root / "capsule" / "round=0").glob("part-*")),
              store.root / "capsule" / "round=00" / "part-old.parquet")
    store.append("capsule", 0, routed_capsules("run1", "s2", 0, 1, 0))
    assert store.connect().execute("select round, count(*) from capsule group by all order by 1"
                                   ).fetchall() == [(0, 2), (2, 1), (10, 1)]
    assert duckdb.sql(f"select distinct typeof(round) from read_parquet('{glob}', "
                      "hive_partitioning=true)").fetchall() == [("VARCHAR",)]
    assert len(store.migrate_partitions()) == 2
    assert sorted(p.name for p in (store.root / "capsule").iterdir()) == [
        "round=0", "round=10", "round=2"]
    assert duckdb.sql(f"select round, count(*) from read_parquet('{glob}', "
                      "hive_partitioning=true) group by all order by 1").fetchall() == [
        (0, 2), (2, 1), (10, 1)]


def test_corrupt_run_files_name_the_file_and_the_fix(tmp_path):
    run = RunDir(tmp_path)
    run.write_round_json(3, "synth_skills.json", {"created": []})
    run.round_file(3, "synth_skills.json").write_text("{garbage")
    with pytest.raises(RunFileError, match=r"round_03/synth_skills.json is not valid JSON.*--resume"):
        run.read_round_json(3, "synth_skills.json")
    run.round_file(3, "summary.json").write_bytes(b"\x00\x01 not json")
    with pytest.raises(RunFileError, match=r"round_03/summary.json is not a valid round summary"
                                           r".*move it out of"):
        run.summaries()
    (tmp_path / "train_ids.json").write_text("[")
    with pytest.raises(RunFileError, match="train_ids.json"):
        run.train_ids()


def test_a_malformed_checkpoint_names_the_file(run_dir):
    checkpoints.write_snapshot(run_dir, 1, [make_skill("s1", TOPICS[0])], [], "run1")
    (checkpoints.checkpoint_dir(run_dir, 1) / "skills" / "s1.yaml").write_text("id: [broken")
    with pytest.raises(ValueError, match=r"(?s)round_01/skills/s1.yaml: malformed YAML.*restore"):
        checkpoints.read_snapshot(run_dir, 1)


def test_a_flip_logged_but_cut_before_its_file_is_finished_on_open(run_dir, config, bank,
                                                                  monkeypatch):
    bank.add(make_skill("s1", TOPICS[0]), round_=0)
    monkeypatch.setattr(bank, "_set_status", lambda *a: (_ for _ in ()).throw(
        KeyboardInterrupt("killed")))
    with pytest.raises(KeyboardInterrupt):
        bank.retire("s1", round_=2, reason="test")
    assert "status: active" in (run_dir / "skills" / "s1.yaml").read_text()
    reader = SkillBank(run_dir, embedder=None, config=config, run_id="run1", recover=False)
    assert reader.recovered == [] and "status: active" in (run_dir / "skills" / "s1.yaml").read_text()
    reopened = SkillBank(run_dir, embedder=None, config=config, run_id="run1")
    assert reopened.recovered == ["s1"] and not reopened.get("s1").is_active
    events = EvidenceStore(run_dir).connect().execute(
        "select event, count(*) from skill_event group by all order by 1").fetchall()
    assert events == [("added", 1), ("retired", 1)]  # nothing logged twice
    assert SkillBank(run_dir, embedder=None, config=config, run_id="run1").recovered == []


def test_a_cut_synth_is_replayed_from_the_bank_events_never_rerun(run_dir, bank):
    run = RunDir(run_dir)
    store = EvidenceStore(run_dir)
    replay.begin(run, 2, "synth_skills.json")
    assert replay.recover_synth(run, store, 2, "synth_skills.json") is None  # nothing added yet
    replay.begin(run, 2, "synth_skills.json")
    bank.add(make_skill("s9", TOPICS[2]), round_=2)  # the cut attempt's one add
    done = replay.recover_synth(run, store, 2, "synth_skills.json")
    assert done["created"] == ["s9"] and run.read_round_json(2, "synth_skills.json") == done
    lost = store.connect().execute("select role, ok, error from llm_call").fetchall()
    assert len(lost) == 2 and all(r[:2] == ("synthesizer", False) for r in lost)
    assert "tokens and cost are unknown" in lost[0][2]


def test_a_batch_commits_with_its_events_or_not_at_all(run_dir, config, bank, monkeypatch):
    small = config.model_copy(update={"curator": config.curator.model_copy(update={"active_cap": 1})})
    bank.config = small
    bank.add(make_skill("s1", TOPICS[0]), round_=0)
    bank.begin_batch()
    assert bank.add(make_skill("s2", TOPICS[1]), round_=1).evicted == ["s1"]
    assert [s.id for s in bank.active()] == ["s2"]  # the batch answers as if it were made
    assert not (run_dir / "skills" / "s2.yaml").exists()
    # Killed before the commit: a new bank sees nothing of the batch.
    fresh = SkillBank(run_dir, embedder=None, config=small, run_id="run1")
    assert [s.id for s in fresh.active()] == ["s1"] and fresh.batch_recovery == ""
    # Killed inside the commit, after the events were written: the next open moves the files in.
    real_move_in = bank._move_in
    monkeypatch.setattr(bank, "_move_in", lambda folder: (_ for _ in ()).throw(
        KeyboardInterrupt("killed")))
    with pytest.raises(KeyboardInterrupt):
        bank.commit_batch()
    monkeypatch.setattr(bank, "_move_in", real_move_in)
    reopened = SkillBank(run_dir, embedder=HashEmbedder(), config=small, run_id="run1")
    assert reopened.batch_recovery == "committed"
    assert [s.id for s in reopened.active()] == ["s2"] and not reopened.get("s1").is_active
    events = EvidenceStore(run_dir).connect().execute(
        "select skill_id, event from skill_event order by created_at").fetchall()
    assert events == [("s1", "added"), ("s1", "evicted"), ("s2", "added")]
    # A batch staged but cut before its events: dropped on open, nothing logged.
    reopened.begin_batch()
    reopened.add(make_skill("s3", TOPICS[2]), round_=2)
    monkeypatch.setattr(reopened.log, "flush", lambda: (_ for _ in ()).throw(
        KeyboardInterrupt("killed")))
    with pytest.raises(KeyboardInterrupt):
        reopened.commit_batch()
    again = SkillBank(run_dir, embedder=None, config=small, run_id="run1")
    assert again.batch_recovery == "dropped" and "s3" not in {s.id for s in again.all()}
    assert not (run_dir / "skills" / ".batch").exists()
