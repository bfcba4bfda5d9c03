"""``--db`` must name a run dir (an empty folder or a suite folder is refused, listing the runs
below it), ``query`` on an unknown table names the evidence views, ``curate --round`` takes no
negative round; each refusal is one ``Error:`` line, a non-zero exit and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from skill_builders import routed_capsules

from refusals import error_line, no_ray, ratchet, refused  # noqa: F401 (no_ray: a fixture)
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.run_config.files import dump_config
from ratchet_ray.evidence.store import EvidenceStore

pytestmark = pytest.mark.usefixtures("no_ray")


def make_run(path: Path) -> Path:
    """A run dir as ``ratchet run`` starts one: config.yaml and one round of capsules."""
    path.mkdir(parents=True)
    dump_config(LoopConfig(), path / "config.yaml")
    EvidenceStore(path).append("capsule", 0, routed_capsules(path.name, "NONE", 0, 1, 0,
                                                             split="eval"))
    return path


def test_db_on_an_empty_folder(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    refused(ratchet("--db", str(empty), "query", "select count(*) from capsule"),
            f"--db {empty} is not a run dir", "config.yaml", "evidence/",
            "no run dir below it either")
    assert list(empty.iterdir()) == []  # nothing written into it


def test_db_on_a_suite_folder_lists_its_runs(tmp_path):
    sim = tmp_path / "results" / "sim"
    runs = [make_run(sim / f"sim_r1_t4_e4_2026010{i}T000000Z") for i in range(3)]
    (sim / "notes").mkdir()  # not a run: not listed
    for args in (["query", "select count(*) from capsule"], ["skill", "list"], ["audit"]):
        out = ratchet("--db", str(sim), *args)
        line = error_line(out)
        assert f"--db {sim} is not a run dir" in line and "run dirs below it (3)" in line
        listed = out.output.split(line, 1)[1].split()
        assert listed == [str(r) for r in runs], out.output
    # The results folder above finds them too (two levels down).
    out = ratchet("--db", str(tmp_path / "results"), "skill", "list")
    assert all(str(r) in out.output for r in runs) and out.exit_code != 0


def test_db_on_a_sweep_folder_lists_the_runs_of_its_arms(tmp_path):
    sweep = tmp_path / "ablations_main"
    runs = [make_run(sweep / "runs" / f"{arm}_s42" / "sim" / f"sim_{arm}") for arm in ("A1", "A2")]
    out = ratchet("--db", str(sweep), "query", "select 1")
    assert "run dirs below it (2)" in error_line(out)
    assert all(str(r) in out.output for r in runs)


def test_db_that_does_not_exist_or_is_a_file(tmp_path):
    refused(ratchet("--db", str(tmp_path / "nope"), "skill", "list"),
            f"--db {tmp_path / 'nope'}: no such run directory")
    run = make_run(tmp_path / "run")
    refused(ratchet("--db", str(run / "config.yaml"), "skill", "list"), "is a file")


def test_db_on_a_run_dir_works(tmp_path):
    run = make_run(tmp_path / "run")
    out = ratchet("--db", str(run), "query", "select count(*) as n from capsule", "--format",
                  "csv")
    assert out.exit_code == 0 and out.output.split() == ["n", "1"], out.output


def test_query_on_an_unknown_table_names_the_evidence_views(tmp_path):
    run = make_run(tmp_path / "run")
    line = refused(ratchet("--db", str(run), "query", "select * from capsules"),
                   "capsules does not exist", "The evidence views are capsule, verdict, "
                   "skill_event, llm_call, round")
    assert "pg_" not in line  # not DuckDB's guess among its system tables


def test_query_errors_other_than_a_table_are_duckdbs(tmp_path):
    run = make_run(tmp_path / "run")
    out = ratchet("--db", str(run), "query", "select no_such_column from capsule")
    assert "no_such_column" in error_line(out)


@pytest.mark.parametrize("command", [["curate"], ["curate", "--dry-run"], ["skill", "load"]])
def test_a_negative_round_is_refused(tmp_path, command):
    run = make_run(tmp_path / "run")
    before = sorted(run.rglob("*"))
    refused(ratchet("--db", str(run), *command, "--round", "-3"), "'--round'", "-3",
            "x>=0")
    assert sorted(run.rglob("*")) == before
