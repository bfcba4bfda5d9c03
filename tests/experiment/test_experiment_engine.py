"""The keep/revert engine on a temporary git repo with a scripted proposer and a real evaluator."""

from __future__ import annotations

import os
import time

import pytest

from experiment_helpers import git, make_repo, params, rows, run, snapshot, write_script
from ratchet_ray.experiment.engine import DirtyWorktree, ExperimentEngine, ExperimentError
from ratchet_ray.experiment.evaluator import EvaluatorChanged
from ratchet_ray.experiment.proposals import Proposal, ScriptProposer


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path)


def statuses(repo):
    return [(r.iteration, r.status) for r in rows(repo)]


def test_improving_change_is_kept_as_a_commit_on_the_experiment_branch(tmp_path, repo):
    start = git(repo, "rev-parse", "HEAD")
    report = run(repo, write_script(tmp_path, [params(2)]))
    assert statuses(repo) == [(0, "keep"), (1, "keep")]
    base, kept = rows(repo)
    assert base.note == "baseline" and base.scalar == 1.0 and base.seeds == [42, 7, 13]
    assert kept.scalar == 2.0 and kept.best_scalar == 1.0 and kept.base_commit == start
    assert kept.head_commit == kept.candidate_commit == git(repo, "rev-parse", "HEAD") != start
    assert kept.reasoning.startswith("try value 2") and kept.patch.endswith("iter001_try1.diff")
    assert "+value = 2" in (repo / kept.patch).read_text()
    assert (repo / "params.txt").read_text() == "value = 2\n"
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "experiment/t" == report.branch
    assert report.best_scalar == 2.0 and report.stop_reason.startswith("proposer exhausted")
    assert git(repo, "status", "--porcelain") == ""  # ledger and artifacts are git-excluded
    assert not (repo / "scratch").exists()  # the evaluator's untracked output was cleaned


def test_worse_change_is_reverted_and_the_tree_is_byte_identical(tmp_path, repo):
    run(repo, write_script(tmp_path, [params(2)]), max_iterations=1)
    head, before = git(repo, "rev-parse", "HEAD"), snapshot(repo)
    run(repo, write_script(tmp_path, [params(2), params(0.5)], "more.yaml"), max_iterations=2)
    assert statuses(repo)[-1] == (2, "revert")
    revert = rows(repo)[-1]
    assert revert.scalar == 0.5 and revert.head_commit == head and revert.candidate_commit
    assert git(repo, "rev-parse", "HEAD") == head
    assert snapshot(repo) == before  # scratch/out.txt, created by the attempt, is gone too
    # the rejected candidate is no longer on the branch
    assert revert.candidate_commit not in git(repo, "rev-list", "experiment/t")


def test_change_to_a_protected_path_is_a_policy_violation_with_no_commit(tmp_path, repo):
    head, before = git(repo, "rev-parse", "HEAD"), snapshot(repo)
    script = write_script(tmp_path, [
        {"reasoning": "edit the frozen data", "edits": [
            {"path": "params.txt", "content": "value = 9\n"},
            {"path": "data/labels.txt", "content": "easier data\n"}]},
        {"reasoning": "edit a file nobody listed", "edits": [{"path": "notes.txt", "content": "x"}]},
        {"reasoning": "edit the evaluator", "edits": [
            {"path": "evaluate.py", "search": "import json", "replace": "import json  # easier"}]},
        {"reasoning": "write outside the repo", "edits": [{"path": "../escape.txt", "content": "x"}]},
    ])
    run(repo, script)
    assert [s for _, s in statuses(repo)[1:]] == ["policy_violation"] * 4
    notes = [r.note for r in rows(repo)[1:]]
    assert notes[0] == "data/labels.txt: protected" and notes[1] == "notes.txt: not editable"
    assert notes[2] == "evaluate.py: protected" and "not a relative path inside the repo" in notes[3]
    assert all(r.candidate_commit == "" for r in rows(repo)[1:])
    assert git(repo, "rev-list", "--count", "--all") == "1"  # no commit object on any ref
    assert git(repo, "rev-parse", "HEAD") == head and snapshot(repo) == before
    assert not (tmp_path / "escape.txt").exists()


def test_crash_gets_bounded_fix_attempts_then_status_crash(tmp_path, repo):
    crash = params(5, mode="crash")
    script = write_script(tmp_path, [
        {**crash, "fixes": [params(5, mode="crash", spread=k) for k in (1, 2, 3)]},  # never fixed
        {**params(3, mode="crash"), "fixes": [params(3)]},          # fixed on the first try
        params(4, mode="nocontract"),                               # exit 0, no contract line
        {**params(6, mode="crash"), "fixes": [                      # a "fix" of frozen data
            {"reasoning": "rig", "edits": [{"path": "data/labels.txt", "content": "rigged\n"}]}]},
    ])
    head = git(repo, "rev-parse", "HEAD")
    run(repo, script, max_fix_attempts=2)
    first, fixed, silent, rigged = rows(repo)[1:]
    assert (first.status, first.fix_attempts) == ("crash", 2)
    assert "after 2 fix attempt(s)" in first.note and "status 1" in first.note
    assert "boom" in (repo / first.log).read_text()  # the evaluator's output went to the log
    assert (fixed.status, fixed.fix_attempts, fixed.scalar) == ("keep", 1, 3.0)
    assert fixed.patch.endswith("iter002_try2.diff")
    assert (repo / "params.txt").read_text() == "value = 3\n"
    assert silent.status == "crash" and "no contract line" in silent.note
    assert (rigged.status, rigged.note) == ("policy_violation", "data/labels.txt: protected")
    assert git(repo, "rev-parse", "HEAD") == fixed.head_commit != head
    assert git(repo, "rev-list", "--count", "HEAD") == "2"  # start + the keep (fix amended it)
    assert git(repo, "log", "-1", "--format=%s").startswith("experiment t #2 fix 1: try value 3")
    assert (repo / "data" / "labels.txt").read_text() == "frozen data\n"


def test_evaluator_timeout_kills_the_evaluator_and_records_a_crash(tmp_path, repo):
    pidfile = tmp_path / "eval.pid"
    started = time.monotonic()
    # 8 s: room for the baseline's interpreter start on a loaded machine; the sleep is 60 s
    run(repo, write_script(tmp_path, [params(7, mode="sleep")]), eval_timeout_s=8,
        max_fix_attempts=0)
    assert time.monotonic() - started < 50
    timeout = rows(repo)[-1]
    assert timeout.status == "crash" and "ran past its 8 s budget" in timeout.note
    pid = int(pidfile.read_text())
    for _ in range(50):  # the process group was killed; give the kernel a moment to reap it
        if not os.path.exists(f"/proc/{pid}") or "Z" in open(f"/proc/{pid}/stat").read().split()[2]:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"evaluator pid {pid} still runs after the timeout")
    assert (repo / "params.txt").read_text() == "value = 1.0\n"


def test_a_veto_beats_a_better_scalar(tmp_path, repo):
    head = git(repo, "rev-parse", "HEAD")
    run(repo, write_script(tmp_path, [params(50, mode="veto")]))
    veto = rows(repo)[-1]
    assert veto.status == "veto" and veto.scalar == 50.0 and veto.vetoes == ["too costly"]
    assert git(repo, "rev-parse", "HEAD") == head


def test_noise_margin_comes_from_the_evaluator_seeds_unless_given(tmp_path, repo):
    script = write_script(tmp_path, [params(1.2, spread=0.5)])
    run(repo, script)
    within = rows(repo)[-1]
    # baseline has no spread: margin = sqrt(0 + 0.25 / 3)
    assert within.status == "revert" and within.noise_margin == pytest.approx(0.288675, abs=1e-5)
    other = make_repo(tmp_path / "b")
    run(other, script, noise_margin=0.0)
    assert rows(other)[-1].status == "keep"


def test_iteration_cap_and_patience_bound_the_run(tmp_path, repo):
    script = write_script(tmp_path, [params(v) for v in (2, 3, 4, 5, 6)])
    report = run(repo, script, max_iterations=3)
    assert [i for i, _ in statuses(repo)] == [0, 1, 2, 3] and "iteration cap (3)" in report.stop_reason
    again = run(repo, script, max_iterations=3)  # a rerun at the cap does nothing
    assert again.rows == [] and len(rows(repo)) == 4
    worse = make_repo(tmp_path / "p")
    report = run(worse, write_script(tmp_path, [params(0.1)] * 6, "worse.yaml"), patience=2)
    assert [s for _, s in statuses(worse)] == ["keep", "revert", "revert"]
    assert "no improvement in the last 2" in report.stop_reason


def test_budget_is_summed_over_the_ledger_and_stops_the_run(tmp_path, repo):
    script = write_script(tmp_path, [params(v) for v in range(2, 10)])
    run(repo, script, max_iterations=2)
    spent = sum(r.wall_s for r in rows(repo))
    assert spent > 0
    report = run(repo, script, budget_s=spent)  # a resumed run continues the same budget
    assert report.stop_reason == f"budget of {spent:.0f} s spent" and report.rows == []
    report = run(repo, script, budget_s=spent + 3600, max_iterations=3)
    assert [r.iteration for r in report.rows] == [3]


def test_ledger_is_append_only_across_runs(tmp_path, repo):
    script = write_script(tmp_path, [params(2), params(0), params(3), params(1)])
    run(repo, script, max_iterations=2)
    first = (repo / "results.tsv").read_bytes()
    run(repo, script, max_iterations=4)
    second = (repo / "results.tsv").read_bytes()
    assert second.startswith(first) and len(second) > len(first)
    assert second.count(b"\n") == 1 + 5  # the header once, then one row per outcome
    assert [s for _, s in statuses(repo)] == ["keep", "keep", "revert", "keep", "revert"]


def test_refuses_to_start_on_a_dirty_worktree(tmp_path, repo):
    script = write_script(tmp_path, [params(2)])
    (repo / "params.txt").write_text("value = 99\n")
    with pytest.raises(DirtyWorktree, match="uncommitted changes in params.txt"):
        run(repo, script)
    git(repo, "checkout", "--", "params.txt")
    (repo / "evaluate.py").write_text("print('rigged')\n")
    with pytest.raises(DirtyWorktree, match=r"protected/evaluator path\(s\) evaluate.py"):
        run(repo, script)
    git(repo, "checkout", "--", "evaluate.py")
    (repo / "data" / "new.txt").write_text("x")
    with pytest.raises(DirtyWorktree, match="data/new.txt"):
        run(repo, script)
    assert not (repo / "results.tsv").exists()
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") != "experiment/t"


def test_evaluator_inside_the_editable_globs_is_refused(tmp_path, repo):
    with pytest.raises(ExperimentError, match="evaluate.py match an --editable glob"):
        run(repo, write_script(tmp_path, [params(2)]), editable=["*.py", "params.txt"])


class _TamperingProposer(ScriptProposer):
    """Changes a frozen evaluator file outside the repo while proposing (a moved yardstick)."""

    def __init__(self, path, target):
        super().__init__(path)
        self.target = target

    def propose(self, ctx) -> Proposal:
        self.target.write_text("changed\n")
        return super().propose(ctx)


def test_evaluator_hash_is_checked_before_each_run(tmp_path, repo):
    outside = tmp_path / "metric.cfg"
    outside.write_text("frozen\n")
    from experiment_helpers import settings

    engine = ExperimentEngine(settings(repo, evaluator_paths=[str(outside)]),
                              _TamperingProposer(write_script(tmp_path, [params(2)]), outside))
    head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(EvaluatorChanged, match="metric.cfg changed since"):  # names the file
        engine.run()
    last = rows(repo)[-1]
    assert last.status == "discard" and "run stopped" in last.note
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "status", "--porcelain") == ""


def test_unapplicable_proposal_is_a_discard(tmp_path, repo):
    run(repo, write_script(tmp_path, [
        {"reasoning": "missing text", "edits": [{"path": "params.txt", "search": "nope", "replace": "x"}]},
        {"reasoning": "same content", "edits": [{"path": "params.txt", "content": "value = 1.0\n"}]},
    ]))
    (a, b) = rows(repo)[1:]
    assert (a.status, b.status) == ("discard", "discard")
    assert "was not found" in a.note and "empty" in b.note


def test_lower_is_better_comes_from_the_evaluator_and_a_contradicting_flag_stops(tmp_path, repo):
    (repo / "params.txt").write_text("value = 5\nlower = 1\n")
    git(repo, "commit", "-qam", "lower is better")
    script = write_script(tmp_path, [params(3, lower=1), params(4, lower=1)])
    with pytest.raises(ExperimentError, match="lower_is_better=True but the run was started "
                                              "with lower_is_better=False"):
        run(repo, script, lower_is_better=False)
    report = run(repo, script, name="low")
    assert [(r.status, r.scalar) for r in rows(repo) if r.branch == "experiment/low"] == [
        ("keep", 5.0), ("keep", 3.0), ("revert", 4.0)]
    assert report.best_scalar == 3.0
