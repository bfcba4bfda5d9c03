"""Doors of the read side met as a hostile user meets them: a pack or skill file this user may not
read, a folder that is neither format, an ``-o`` that is a symbolic link (or a loop of them), a
skill file that is no UTF-8 or huge, an evidence part that is a folder, SQL that is two
statements or no SQL. Each is one ``Error:`` line naming the cause and the fix (or a warning
naming the file, where the command still has something true to show), never a traceback, click's
bare "is not readable", or output silently wrong.

As root the mode bits bind only a process without the capabilities that let root past them
(``setpriv``), as in ``test_cli_read_doors.py``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fakes import HashEmbedder

from library_fixtures import two_round_run
from one_line import process_error_line, ratchet_denied
from refusals import ratchet, refused
from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.settings.schema import LoopConfig


@pytest.fixture
def run(run_dir) -> Path:
    """A two-round run: config.yaml, skills 'one' and 'two', capsules of rounds 0 and 1."""
    return two_round_run(run_dir, ("one", "two"))


@pytest.fixture
def pack(run, tmp_path) -> Path:
    out = tmp_path / "pack"
    assert ratchet("skill", "export", str(run), "-o", str(out)).exit_code == 0
    return out


# ---- packs ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [
    ["run", "mbpp", "--rounds", "1", "--bank", "PACK", "--set", "results_dir=OUT", "--dry-run"],
    ["ablations", "mbpp", "--bank", "PACK", "--out", "OUT", "--dry-run"],
], ids=["run", "ablations"])
def test_a_bank_pack_this_user_may_not_read_names_the_fix(pack, deny, tmp_path, command):
    """It was click's "Invalid value for '--bank': Directory ... is not readable.", no fix."""
    deny(pack)
    done = ratchet_denied(*[a.replace("PACK", str(pack)).replace("OUT", str(tmp_path / "o"))
                            for a in command])
    process_error_line(done, f"--bank {pack}: cannot read it: Permission denied",
                       "give this user read access", "or run as its owner")


@pytest.mark.parametrize("part", ["", "pack.json", "skills", "skills/one.yaml"],
                         ids=["folder", "manifest", "skills-folder", "skill-file"])
def test_a_pack_part_this_user_may_not_read_is_named_with_the_fix_not_re_export(
        run, pack, deny, part):
    """``skill import`` said click's "Path ... is not readable." for the folder; a manifest or
    skill file it may not read was 'unreadable manifest ([Errno 13] ...); re-export the pack', a
    fix that cannot help; a skills folder it may not list was a traceback."""
    deny(pack / part if part else pack)
    done = ratchet_denied("skill", "import", str(pack), "--into", str(run))
    line = process_error_line(done, "cannot read it: Permission denied",
                              "give this user read access")
    assert "re-export" not in line and str(pack / part if part else pack) in line


def test_a_folder_of_neither_format_names_both_and_skill_load(run, tmp_path):
    """It was 'no pack.json; pass a folder written by `ratchet skill export`', though
    `skill import` takes Agent Skills too; a folder of skill YAML files got no word of
    `skill load`, the command that reads them."""
    empty = tmp_path / "empty"
    empty.mkdir()
    line = refused(ratchet("skill", "import", str(empty), "--into", str(run)),
                   "neither a skill pack (no pack.json)", "nor a folder of Agent Skills (no "
                   "SKILL.md", "ratchet skill export -o PACK", "--as agent-skills")
    assert "skill load" not in line
    yamls = tmp_path / "yamls"
    yamls.mkdir()
    (yamls / "one.yaml").write_text((run / "skills" / "one.yaml").read_text())
    refused(ratchet("skill", "import", str(yamls), "--into", str(run)),
            "neither a skill pack", f"`ratchet --db {run} skill load {yamls}`")


# ---- the report's bank files ---------------------------------------------------------------------
def _page_note(page: Path) -> str:
    text = page.read_text()
    assert "Files of the run not shown whole" in text, "the page does not name the file"
    return text.split("Files of the run not shown whole", 1)[1].split("</ul>", 1)[0]


def test_a_skill_file_this_user_may_not_read_is_named_by_the_report(run, deny, tmp_path):
    """The report was written with exit 0 and not a word: the skill's row looked whole, its YAML
    a comment only a click on the row showed."""
    skill = run / "skills" / "two.yaml"
    deny(skill)
    page = tmp_path / "out" / "report.html"
    done = ratchet_denied("report", "--no-tasks", str(run), "-o", str(page))
    assert done.returncode == 0, done.stderr[-3000:]
    warning = f"warning: {skill}: cannot read it: Permission denied; fix: give this user read"
    assert warning in done.stderr, done.stderr
    assert f"{skill}: cannot read it: Permission denied" in _page_note(page)


@pytest.mark.parametrize("damage", ["not-utf8", "huge", "not-a-skill"])
def test_a_skill_file_the_bank_cannot_read_is_named_not_shown_as_whole(run, tmp_path, damage):
    """A file that is not UTF-8 was shown as a whole skill (its bytes replaced), though the bank
    refuses it; one of 50 MB went into the page twice, whole; a file that is no skill was shown
    without a word (status from its events)."""
    skill = run / "skills" / "two.yaml"
    if damage == "not-utf8":
        skill.write_bytes(skill.read_bytes() + b"\n# \xff\xfe\n")
        words = ["not UTF-8 text", "fix: save it as UTF-8"]
    elif damage == "huge":
        skill.write_bytes(skill.read_bytes() + b"#" + b"x" * 50_000_000 + b"\n")
        words = ["larger than 1,000,000 bytes", "shown cut and not read as a skill"]
    else:
        skill.write_text("id: two\nintent: [unclosed\n")
        words = ["malformed YAML at line 3"]
    page = tmp_path / "report.html"
    done = ratchet("report", "--no-tasks", str(run), "-o", str(page))
    assert done.exit_code == 0, done.output
    warnings = [ln for ln in done.stderr.splitlines() if ln.startswith(f"warning: {skill}: ")]
    assert len(warnings) == 1 and all(w in warnings[0] for w in words), done.stderr
    assert all(w in _page_note(page) for w in words)
    assert page.stat().st_size < 3_000_000  # the huge file is cut, not embedded whole


def test_skill_list_names_a_skill_file_that_is_not_utf8_with_the_fix(run):
    """It was "cannot read file: 'utf-8' codec can't decode byte 0xff in position 514: invalid
    start byte", naming no fix."""
    skill = run / "skills" / "two.yaml"
    skill.write_bytes(skill.read_bytes() + b"\n# \xff\n")
    refused(ratchet("--db", str(run), "skill", "list"), f"{skill}: cannot read file: not UTF-8 "
            "text (byte", "fix: save it as UTF-8")


# ---- -o through symbolic links -------------------------------------------------------------------
@pytest.mark.parametrize("target_exists", [True, False], ids=["to-a-file", "to-a-new-file"])
def test_report_o_a_link_writes_through_it_and_keeps_it(run, tmp_path, target_exists):
    """The link was replaced by a regular file (what it named left stale), where `plot -o` and
    `export --inspect -o` write through a link to a folder."""
    target = tmp_path / "published" / "latest.html"
    target.parent.mkdir()
    if target_exists:
        target.write_text("old report")
    link = tmp_path / "report.html"
    link.symlink_to(target)
    done = ratchet("report", "--no-tasks", str(run), "-o", str(link))
    assert done.exit_code == 0, done.output
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("command", [
    ["report", "--no-tasks", "RUN", "-o", "LOOP"],
    ["plot", "RUN", "-o", "LOOP"],
    ["plot", "RUN", "-o", "FOLDER"],  # the loop is the curve's file inside the folder
    ["export", "--inspect", "RUN", "-o", "LOOP"],
], ids=["report", "plot", "plot-file", "export-inspect"])
def test_an_o_that_is_a_loop_of_links_is_named_as_one(run, tmp_path, command):
    """`plot -o LOOP` said 'File exists; free space there, or pass another folder'; `report -o
    LOOP` replaced the loop by the page; `export --inspect` said 'File exists'."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "loop_curve.png").symlink_to(folder / "loop_curve.png")
    line = refused(ratchet(*[{"RUN": str(run), "LOOP": str(loop), "FOLDER": str(folder)}.get(a, a)
                             for a in command]), "a loop of symbolic links")
    assert "free space" not in line and "File exists" not in line
    assert loop.is_symlink() and os.readlink(loop) == str(loop)


def test_plot_o_a_link_to_a_folder_writes_through_links_and_keeps_them(run, tmp_path):
    folder = tmp_path / "figures"
    folder.mkdir()
    link = tmp_path / "latest"
    link.symlink_to(folder)
    curve = tmp_path / "paper_curve.png"
    (folder / "loop_curve.png").symlink_to(curve)
    done = ratchet("plot", str(run), "-o", str(link))
    assert done.exit_code == 0, done.output
    assert (folder / "loop_curve.png").is_symlink() and curve.read_bytes()[:4] == b"\x89PNG"
    assert (folder / "loop_summary.md").is_file()


# ---- evidence ----------------------------------------------------------------------------------
def test_report_names_a_folder_where_an_evidence_part_should_be(run, tmp_path):
    """It was 'cannot write the report: Cannot open for reading: ... is a directory; pass a
    writable file with -o', a fix that cannot help; `evidence repair` sets the folder aside."""
    part = run / "evidence" / "capsule" / "round=1" / "part-folder.parquet"
    part.mkdir()
    line = refused(ratchet("report", "--no-tasks", str(run), "-o", str(tmp_path / "r.html")),
                   f"evidence part {part} cannot be read", "is a directory",
                   f"ratchet --db {run} evidence verify", "evidence repair")
    assert "cannot write" not in line and "pass a writable file" not in line


@pytest.mark.parametrize("sql, words", [
    ("select 1; select count(*) from capsule", ["2 statements given", "one per `ratchet query`"]),
    ("selec 1", ["cannot parse SQL: Parser Error: syntax error at or near \"selec\"",
                 "fix the statement"]),
], ids=["two-statements", "bad-sql"])
def test_query_refuses_in_one_line_what_it_cannot_answer_whole(run, sql, words):
    """Two statements printed the last one's rows only, the first's lost without a word; SQL
    that does not parse was three lines (DuckDB's excerpt and caret) naming no fix."""
    refused(ratchet("--db", str(run), "query", sql), *words)


@pytest.mark.parametrize("content", [b"garbage{", b"[1, 2]", b"\xff\xfe"],
                         ids=["not-json", "not-an-object", "not-utf8"])
def test_a_damaged_stopped_json_is_a_stop_of_unknown_cause_named_not_a_crash(run, tmp_path,
                                                                            content):
    """It was 'Error: Expecting value: line 1 column 1 (char 0)' naming no file, the codec's
    error likewise, or an AttributeError traceback for a list."""
    stopped = run / "stopped.json"
    stopped.write_bytes(content)
    page = tmp_path / "report.html"
    done = ratchet("report", "--no-tasks", str(run), "-o", str(page))
    assert done.exit_code == 0, done.output
    assert f"warning: {stopped}: no stop can be read from it" in done.stderr, done.stderr
    assert "read run.log" in _page_note(page)


def test_a_meta_skill_file_this_user_may_not_read_is_named_by_the_report(run, deny, tmp_path):
    """It stopped the report: 'cannot read it: Permission denied', no page for the rest."""
    bank = SkillBank(run, embedder=HashEmbedder(), config=LoopConfig(), run_id=run.name)
    bank.ensure_default_metaskill("mbpp")
    meta = run / "meta-skills" / "default_mbpp.md"
    deny(meta)
    page = tmp_path / "out" / "report.html"
    done = ratchet_denied("report", "--no-tasks", str(run), "-o", str(page))
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"warning: {meta}: cannot read it: Permission denied" in done.stderr, done.stderr
    assert f"{meta}: cannot read it" in _page_note(page)


def test_report_names_another_kinds_part_among_the_capsules(run, tmp_path):
    """A skill_event part copied into the capsule folder was a TypeError traceback (its rows, all
    null in the capsule view, reached the browser); `evidence verify` lists it."""
    stray = next((run / "evidence" / "skill_event").glob("round=*/part-*.parquet"))
    part = run / "evidence" / "capsule" / "round=1" / "part-stray.parquet"
    part.write_bytes(stray.read_bytes())
    refused(ratchet("report", "--no-tasks", str(run), "-o", str(tmp_path / "r.html")),
            f"evidence part {part} cannot be read (unexpected columns",
            f"ratchet --db {run} evidence verify")


def test_skill_export_as_agent_skills_writes_through_a_link_and_names_a_loop(run, tmp_path):
    """-o a link to an empty folder was a NotADirectoryError line ('Not a directory' on the
    link's rmdir); -o a loop of links said 'Not a directory (<a temp folder>)'."""
    real = tmp_path / "skills_out"
    real.mkdir()
    link = tmp_path / "latest"
    link.symlink_to(real)
    done = ratchet("skill", "export", str(run), "--as", "agent-skills", "-o", str(link))
    assert done.exit_code == 0, done.output
    assert link.is_symlink() and (real / "one" / "SKILL.md").is_file()
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    refused(ratchet("skill", "export", str(run), "--as", "agent-skills", "-o", str(loop)),
            "a loop of symbolic links", str(loop))


def test_a_query_past_duckdbs_memory_is_one_line_with_a_fix_query_allows(run, monkeypatch):
    """It was DuckDB's text whose fixes are SET statements, which `query` refuses, after a
    decode of every part in search of a damaged one."""
    import duckdb

    real = duckdb.connect
    monkeypatch.setattr(duckdb, "connect",
                        lambda database=":memory:", **kw: real(database,
                                                               config={"memory_limit": "20MB"}))
    line = refused(ratchet("--db", str(run), "query", "select list(range) from range(50000000)"),
                   "query failed: DuckDB ran out of memory (Out of Memory Error:",
                   "fix: ask for less at once")
    assert "SET" not in line
