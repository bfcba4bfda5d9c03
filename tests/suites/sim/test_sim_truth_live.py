"""The truth report against the live bank, on every arm: short real sim runs (Ray on 127.0.0.1)
whose governance is set to deprecate skills every way it can (retire after 4 trials, an active
cap of 4, a rollback on any round below the best), then ``analyze_run`` / ``sim-report`` and the
ablation table must agree with the bank the run left behind: the same status per skill, the same
ACTIVE count, and created - deprecated = active. The sim ablation table of docs/ablations.md
(``suites.sim.ablation_table``) is rendered from such runs only when that check passes.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from ratchet_ray.arm_summary import run_result
from ratchet_ray.bank.skill_io import load_skill_folder
from ratchet_ray.suites.sim.ablation_table import (BEGIN, END, bank_disagreements, main,
                                                   render, replace_block, sweep_rows)
from ratchet_ray.suites.sim.report import write_sim_report
from ratchet_ray.suites.sim.truth import analyze_run

from local_ray import start_local_ray
from sim_helpers import run_sim, legacy_config as sim_config  # legacy-world numbers

pytestmark = pytest.mark.slow
ALL_ARMS = ("default", "A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "A10")
# `make test` runs six arms, a run each (about 10 s of the two cores): the Default, two that
# change what a Solver is shown (A2 retrieval only, A3 no meta-skills), the two the sim report
# marks as without effect (A7, A8) and A10's refinements; `make sim-arms` (SIM_ARMS=all) all
# eleven. The others change what the runs here cannot tell apart or what other tests check
# (A1 never injects: test_sim_governance; A4's curator is overridden below; A5, A6, A9).
QUICK_ARMS = ("default", "A2", "A3", "A7", "A8", "A10")
ARMS = ALL_ARMS if os.environ.get("SIM_ARMS") == "all" else QUICK_ARMS
# Every deprecation cause within a few rounds: retirement (4 trials), eviction (cap 4) and a
# rollback whenever a round's eval pass@1 is below the best so far. Applied to every arm (a
# --set wins over the arm's file, so A4's and A7's own values give way here: this test is
# about the report agreeing with the bank, not about the arms' effects).
FAST_GOVERNANCE = ("rounds=6", "n_train=20", "n_eval=10", "curator.min_trials=4",
                   "curator.active_cap=4", "rollback.threshold=0.0", "rollback.consecutive=1")
# A10 refines a skill once one verdict blames it (3 by default), so a refinement (a deprecation
# of its own kind) happens within the few rounds before retirement takes the skill.
ARM_SETS = {"A10": ("synth.refine_min_failures=1",)}


@pytest.fixture(scope="module")
def arm_runs(tmp_path_factory, _ray_session):
    start_local_ray()
    root = tmp_path_factory.mktemp("truth_live")
    return {arm: run_sim(sim_config(root / arm, *FAST_GOVERNANCE, *ARM_SETS.get(arm, ()),
                                    arm=None if arm == "default" else arm)) for arm in ARMS}


def test_truth_agrees_with_the_live_bank_on_every_arm(arm_runs):
    causes = {"retired": 0, "evicted": 0, "rollback": 0, "refined": 0, "reactivated": 0}
    for arm, run_dir in arm_runs.items():
        truth = analyze_run(run_dir)
        folder = run_dir / "skills"
        live = ({s.id: s.status.value for s in load_skill_folder(folder)}
                if folder.is_dir() else {})
        assert {s.skill_id: s.status for s in truth.skills} == live, arm
        final = json.loads((run_dir / "loop.json").read_text())["rounds"][-1]
        active = sum(1 for status in live.values() if status == "active")
        assert truth.active_at_end() == active == final["active_skills"], arm
        result = run_result(run_dir)
        assert result.skills_created - result.skills_deprecated == result.active_at_end, arm
        assert result.skills_deprecated == (result.deprecated_retired + result.deprecated_evicted
                                            + result.deprecated_rollback
                                            + result.deprecated_refined), arm
        stats = truth.retirement()
        for cause in ("retired", "evicted", "rollback", "refined"):
            assert stats[f"deprecated_{cause}"] == getattr(result, f"deprecated_{cause}"), \
                (arm, cause)
        for cause in ("retired", "evicted", "rollback", "refined"):
            causes[cause] += getattr(result, f"deprecated_{cause}")
        causes["reactivated"] += sum(1 for s in truth.skills
                                     if s.active and s.status_changes > 0)
        assert bank_disagreements(run_dir, truth, result) == [], arm
    # The runs exercised every path the report must follow (else this test proves little).
    assert all(causes[c] for c in ("retired", "evicted", "rollback", "refined")), causes
    print("deprecations by cause over the arms:", causes)


def test_the_sim_table_renders_every_arm_from_runs_that_agree_with_their_bank(arm_runs):
    rows = sweep_rows(arm_runs["default"].parents[2])
    assert [r.arm for r in rows] == list(ARMS) and all(not r.disagreements for r in rows)
    table = render(rows)
    for arm in ARMS:
        assert sum(line.startswith(f"| {arm} |") for line in table.splitlines()) == 1, arm
    default = rows[0]
    title, lines = table.splitlines()[0], table.splitlines()
    assert title.startswith("**Ablations on sim · model sim") and "not the paper's setting" in title
    default_row = next(line for line in lines if line.startswith("| default |"))
    assert f"| {default.result.skills_created:.1f} |" in default_row
    assert "checked against its live bank" in table and f"{len(ARMS)} arm-seeds" in table
    page = f"# Ablations\n\nbefore\n{BEGIN}\nold table\n{END}\nafter\n"
    rendered = replace_block(page, table)
    assert "old table" not in rendered and table in rendered
    assert rendered.startswith("# Ablations\n\nbefore\n") and rendered.endswith("\nafter\n")
    with pytest.raises(ValueError, match="sim-ablation-table"):
        replace_block("# no markers\n", table)


def test_a_bank_that_differs_from_the_truth_is_named_and_no_table_is_written(arm_runs,
                                                                              tmp_path):
    run_dir = arm_runs["default"]  # retires within 4 trials: its bank holds both kinds
    copy = tmp_path / "sweep" / run_dir.name
    shutil.copytree(run_dir, copy)
    active = next(s for s in load_skill_folder(copy / "skills") if s.status.value == "active")
    path = next(p for p in (copy / "skills").glob("*.yaml") if p.stem == active.id)
    path.write_text(path.read_text().replace("status: active", "status: deprecated", 1))
    found = bank_disagreements(copy, analyze_run(copy), run_result(copy))
    assert any(active.id in line and "bank file says deprecated" in line for line in found)
    assert any(line.startswith("ACTIVE at end differs") for line in found), found
    doc = tmp_path / "page.md"
    doc.write_text(f"{BEGIN}\nold\n{END}\n")
    outcome = CliRunner().invoke(main, [str(tmp_path / "sweep"), "--doc", str(doc)])
    assert outcome.exit_code != 0 and active.id in outcome.output, outcome.output
    assert doc.read_text() == f"{BEGIN}\nold\n{END}\n"


def test_sim_report_marks_the_arms_without_effect(arm_runs, tmp_path):
    write_sim_report(arm_runs["default"].parents[2], out=tmp_path)
    text = (tmp_path / "sim_report.md").read_text()
    assert "| A7 (not modelled in sim) |" in text and "| A8 (not modelled in sim) |" in text
    assert "- A7: not modelled in the sim world" in text
    assert "| default |" in text and "rolled back" in text


def test_a_damaged_or_unfinished_run_is_named_not_silently_dropped(arm_runs, tmp_path):
    """A sweep holding a good run, one whose config.yaml was garbled and one whose loop.json
    plans more rounds than it ran: the table rests on the good run alone, and the other two
    are each named on stderr with why (they were silently left out before)."""
    run_dir = arm_runs["default"]
    good, garbled, unfinished = (tmp_path / "sweep" / name for name in ("good", "garbled", "short"))
    for copy in (good, garbled, unfinished):
        shutil.copytree(run_dir, copy)
    (garbled / "config.yaml").write_bytes(b"suite: [sim\n")
    loop = json.loads((unfinished / "loop.json").read_text())
    loop["rounds_planned"] = len(loop["rounds"]) + 3
    (unfinished / "loop.json").write_text(json.dumps(loop))
    left_out: list[str] = []
    assert [r.result.run_dir for r in sweep_rows(tmp_path / "sweep", left_out)] == [str(good)]
    assert len(left_out) == 2 and any(line.startswith(f"{garbled}: ") and "config.yaml" in line
                                      for line in left_out), left_out
    assert f"{unfinished}: incomplete ({len(loop['rounds'])} of {loop['rounds_planned']} rounds)" \
        in left_out, left_out
    outcome = CliRunner().invoke(main, [str(tmp_path / "sweep")])
    assert outcome.exit_code == 0, outcome.output
    assert f"left out: {garbled}: " in outcome.stderr and f"left out: {unfinished}: " in outcome.stderr
