"""An experiment's own files gone bad: a ledger line edited wrong, a ledger torn mid-character
by a kill, an ``attempt.json`` that is not one this engine wrote. Each is one line naming the
file (and line) and the fix, or, for the torn write, read past as the contract says; nothing of
the ledger is rewritten."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

from experiment_helpers import make_repo, params, rows, run, write_script
from ratchet_ray.cli import main
from ratchet_ray.experiment.ledger import LEDGER_FILE, COLUMNS, LedgerError
from ratchet_ray.experiment.state import ARTIFACTS_DIR, AttemptMarkerError


@pytest.fixture
def ran(tmp_path):
    """A repo whose experiment ``t`` ran its baseline and one kept attempt."""
    repo = make_repo(tmp_path)
    run(repo, write_script(tmp_path, [params(2)]))
    assert [r.status for r in rows(repo)] == ["keep", "keep"]
    return repo


def _edit_cell(repo, line: int, column: str, value: bytes) -> bytes:
    ledger = repo / LEDGER_FILE
    lines = ledger.read_bytes().split(b"\n")
    cells = lines[line - 1].split(b"\t")
    cells[COLUMNS.index(column)] = value
    lines[line - 1] = b"\t".join(cells)
    ledger.write_bytes(b"\n".join(lines))
    return ledger.read_bytes()


@pytest.mark.parametrize("column, value, said", [
    ("iteration", b"x1", "column iteration holds 'x1'"),
    ("metrics", b"{not json", "column metrics holds '{not json'"),
    ("status", b"kept", "unknown ledger status 'kept'"),
    ("note", b"caf\xe9", "'utf-8' codec can't decode byte 0xe9"),
], ids=["int", "json", "status", "not-utf8"])
def test_a_ledger_line_edited_wrong_names_the_file_the_line_and_the_fix(ran, tmp_path, column,
                                                                       value, said):
    """It was the bare parse error ("invalid literal for int() with base 10: 'x1'"), naming
    neither the file nor the line."""
    before = _edit_cell(ran, 3, column, value)
    with pytest.raises(LedgerError) as caught:
        rows(ran)
    text = str(caught.value)
    assert f"{ran / LEDGER_FILE} line 3 is not a ledger row: {said}" in text, text
    assert "fix: correct that line" in text and "never rewrites" in text, text
    done = CliRunner().invoke(main, [
        "experiment", "run", "--repo", str(ran), "--editable", "params.txt", "--protected",
        "data/**", "--evaluator", f"{sys.executable} evaluate.py", "--proposer",
        f"script:{tmp_path / 'proposals.yaml'}", "--name", "t"])
    assert done.exit_code == 1 and "Traceback" not in done.output, done.output
    assert f"Error: {ran / LEDGER_FILE} line 3 is not a ledger row" in done.output, done.output
    assert (ran / LEDGER_FILE).read_bytes() == before


def test_a_row_torn_mid_character_by_a_kill_is_read_past(ran):
    """A kill inside a multi-byte character made the whole ledger unreadable
    (UnicodeDecodeError), so the experiment could not resume."""
    ledger = ran / LEDGER_FILE
    ledger.write_bytes(ledger.read_bytes() + "2\tkeep\tnote \u00e9".encode()[:-1])
    assert [r.iteration for r in rows(ran)] == [0, 1]


@pytest.mark.parametrize("marker", ["{garbage", '{"iteration": 1}', "[]", b"\xff\xfe"],
                         ids=["not-json", "fields-missing", "a-list", "not-utf8"])
def test_an_attempt_marker_not_this_engine_wrote_is_named_with_the_fix(ran, tmp_path, marker):
    """It was a traceback (JSONDecodeError, TypeError) from `ratchet experiment run`."""
    path = ran / ARTIFACTS_DIR / "t" / "attempt.json"
    path.write_bytes(marker if isinstance(marker, bytes) else marker.encode())
    with pytest.raises(AttemptMarkerError, match=f"{path} is not an attempt marker this engine "
                       "wrote .*; fix: delete it, and the next run names what is left to undo"):
        run(ran, write_script(tmp_path, [params(3)], "more.yaml"))
    assert path.exists() and [r.iteration for r in rows(ran)] == [0, 1]


def test_a_proposal_script_not_utf8_is_one_usage_line(tmp_path):
    """It was a UnicodeDecodeError traceback from `ratchet experiment run`."""
    repo = make_repo(tmp_path)
    script = tmp_path / "proposals.yaml"
    script.write_bytes(b"\xff\xfe- reasoning: x")
    done = CliRunner().invoke(main, [
        "experiment", "run", "--repo", str(repo), "--editable", "params.txt", "--evaluator",
        f"{sys.executable} evaluate.py", "--proposer", f"script:{script}", "--name", "t"])
    assert done.exit_code == 2 and isinstance(done.exception, SystemExit), done.output
    assert (f"Error: cannot read the proposal script {script}: 'utf-8' codec can't decode "
            "byte 0xff") in done.output, done.output


def test_a_file_where_the_artifact_folder_should_be_is_one_line(tmp_path):
    """It was a NotADirectoryError traceback from `ratchet experiment run`."""
    repo = make_repo(tmp_path)
    (repo / ".git" / "info" / "exclude").write_text(f"/{ARTIFACTS_DIR}\n")
    (repo / ARTIFACTS_DIR).write_text("in the way")
    done = CliRunner().invoke(main, [
        "experiment", "run", "--repo", str(repo), "--editable", "params.txt", "--evaluator",
        f"{sys.executable} evaluate.py", "--proposer",
        f"script:{write_script(tmp_path, [params(2)])}", "--name", "t"])
    assert done.exit_code == 1 and isinstance(done.exception, SystemExit), done.output
    assert (f"Error: cannot write the experiment's artifacts into {repo / ARTIFACTS_DIR / 't'}: "
            "Not a directory") in done.output and "move aside what is in the way" in done.output
    assert (repo / ARTIFACTS_DIR).read_text() == "in the way"
