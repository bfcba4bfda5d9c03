"""``ratchet experiment run`` as a process: SIGKILL mid-attempt and resume; the shipped demo."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from experiment_helpers import demo_repo, git, make_repo, params, rows, write_script
from waiting import wait_for
from ratchet_ray.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _cli_args(repo: Path, script: Path, *extra: str) -> list[str]:
    return ["experiment", "run", "--repo", str(repo), "--editable", "params.txt",
            "--protected", "data/**", "--evaluator", f"{sys.executable} evaluate.py",
            "--proposer", f"script:{script}", "--name", "t", "--budget-s", "300", *extra]


def _appeared(path: Path, proc: subprocess.Popen) -> bool:
    """Whether ``path`` exists; an engine that exited before writing it fails the test."""
    if path.exists():
        return True
    if proc.poll() is not None:
        raise AssertionError(f"the engine exited ({proc.returncode}) before the evaluator "
                             f"started: {proc.stdout.read()}")
    return False


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_run_resumes_after_sigkill_mid_evaluation(tmp_path):
    repo = make_repo(tmp_path)
    script = write_script(tmp_path, [params(2), params(3, mode="hang"), params(4)])
    (tmp_path / "HANG_FLAG").write_text("hang while this exists")
    proc = subprocess.Popen([sys.executable, "-m", "ratchet_ray.cli", *_cli_args(repo, script)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        # iteration 2's candidate is being evaluated
        wait_for(lambda: _appeared(tmp_path / "eval.pid", proc), 60, "the evaluator's eval.pid")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    evaluator_pid = int((tmp_path / "eval.pid").read_text())
    assert _alive(evaluator_pid)  # its own session: the engine's kill did not reach it
    (tmp_path / "HANG_FLAG").unlink()
    before = (repo / "results.tsv").read_bytes()
    assert [(r.iteration, r.status) for r in rows(repo)] == [(0, "keep"), (1, "keep")]
    assert git(repo, "status", "--porcelain") != ""  # the killed attempt left the tree dirty
    kept_1 = rows(repo)[1].head_commit
    assert git(repo, "rev-parse", "HEAD") != kept_1  # its candidate commit is still checked out

    try:
        result = CliRunner().invoke(main, _cli_args(repo, script))
    finally:
        if _alive(evaluator_pid):
            os.kill(evaluator_pid, signal.SIGKILL)
    assert result.exit_code == 0, result.output
    # the resumed run killed the stray evaluator first
    wait_for(lambda: not _alive(evaluator_pid), 5, f"the stray evaluator {evaluator_pid} to end")
    ledger = rows(repo)
    assert [(r.iteration, r.status, r.note) for r in ledger] == [
        (0, "keep", "baseline"), (1, "keep", ""), (2, "discard", "interrupted"),
        (2, "keep", ""), (3, "keep", "")]
    assert ledger[2].head_commit == kept_1 and ledger[3].base_commit == kept_1
    assert (repo / "results.tsv").read_bytes().startswith(before)
    assert (repo / "params.txt").read_text() == "value = 4\n"
    assert git(repo, "status", "--porcelain") == ""
    assert not (repo / ".ratchet-experiment" / "t" / "attempt.json").exists()
    # the branch holds exactly the kept lineage: start + three keeps
    assert git(repo, "rev-list", "--count", "HEAD") == "4"
    assert "stopped: proposer exhausted" in result.output


def test_demo_runs_through_the_cli_with_every_status(tmp_path):
    demo = demo_repo(tmp_path)
    result = CliRunner().invoke(main, [
        "experiment", "run", "--repo", str(demo), "--editable", "model.py",
        "--protected", "proposals.yaml", "--evaluator", f"{sys.executable} evaluate.py",
        "--proposer", f"script:{demo / 'proposals.yaml'}", "--max-iterations", "6",
        "--budget-s", "120", "--name", "demo"])
    assert result.exit_code == 0, result.output
    ledger = rows(demo)
    assert [r.status for r in ledger] == ["keep", "keep", "revert", "veto", "policy_violation",
                                          "revert"]
    assert ledger[1].scalar > ledger[0].scalar + ledger[1].noise_margin
    assert ledger[5].fix_attempts == 1  # the inverse-distance vote crashed once, then was fixed
    assert "K = 5" in (demo / "model.py").read_text()
    assert git(demo, "status", "--porcelain") == ""


def test_cli_reports_a_dirty_worktree_as_a_usage_problem(tmp_path):
    repo = make_repo(tmp_path)
    (repo / "params.txt").write_text("value = 5\n")
    result = CliRunner().invoke(main, _cli_args(repo, write_script(tmp_path, [params(2)])))
    assert result.exit_code == 1 and "uncommitted changes in params.txt" in result.output
