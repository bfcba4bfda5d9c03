"""``ratchet report`` on the scripted governance run: the page's numbers are the evidence's."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from loop_helpers import BAD_ID, GENERIC_ID, GOOD_ID
from ratchet_ray.cli import main as ratchet
from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.report.html import build_report
from report_parse import capsules, chart, json_block, markers, page, points, skill_row

pytestmark = pytest.mark.slow


def _tree(run_dir: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(run_dir)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in run_dir.rglob("*") if p.is_file()}


def test_curves_are_the_evidence_per_round_pass_at_1(scenario_run, tmp_path):
    out = build_report([scenario_run], tmp_path / "report.html")
    html = page(out)
    with EvidenceStore(scenario_run).connect() as con:
        measured = {(r["round"], r["split"]): r["resolved"] / r["total"]
                    for r in nq.fetch_dicts(con, "pass_at_1_by_round")}
        recorded = con.execute("SELECT round, eval_pass_at_1, train_pass_at_1 FROM round "
                               "ORDER BY round").fetchall()
    curve = chart(html, "pass")
    eval_pts, train_pts = points(curve, "eval pass@1"), points(curve, "train pass@1")
    assert sorted(eval_pts) == sorted(train_pts) == [0, 1, 2, 3]
    for round_, eval_p, train_p in recorded:
        assert eval_pts[round_] == pytest.approx(eval_p, abs=1e-6)
        assert eval_pts[round_] == pytest.approx(measured[(round_, "eval")], abs=1e-6)
        assert train_pts[round_] == pytest.approx(train_p, abs=1e-6)
        assert train_pts[round_] == pytest.approx(measured[(round_, "train")], abs=1e-6)
    assert eval_pts == {0: 1.0, 1: 1.0, 2: 1.0, 3: 0.0}  # the scenario's own numbers
    # Round 3's rollback restored round 0's bank: both are marked.
    assert markers(curve, "rollback") == [3] and markers(curve, "restored") == [0]
    bank = chart(html, "bank")
    assert points(bank, "active") == {0: 2, 1: 2, 2: 1, 3: 0}
    assert min(points(bank, "deprecated").values()) >= 0
    # Headline: round 0, peak, rolling gain (the paper's definitions) and the tokens chart.
    # ... each with its n and 95 % interval: 4 eval tasks, all passed in round 0 (Wilson);
    # the gain's bootstrap over those 4 tasks (each passed rounds 0-2 and failed round 3, so
    # every draw gives the same gain) excludes 0.
    assert '<div class="v">1.000 <span class="ci">n=4, 95 % CI 0.51–1.00</span></div>' in html
    assert ('<div class="v">-0.333 <span class="ci">4 tasks, 95 % CI [-0.33, -0.33]: '
            '<b class="real">beyond noise</b></span></div>') in html
    assert chart(html, "tokens").count("<rect") > 0


def test_a_folder_holding_only_loop_json_gives_the_evidences_round_numbers(scenario_run, tmp_path):
    """``round_rows`` falls back to ``loop.json`` where there is no evidence: the same numbers,
    its nested splits (``eval.total``) read as the flat columns (``eval_total``) too."""
    from ratchet_ray.report.data import round_rows

    copy = tmp_path / "copied"
    copy.mkdir()
    (copy / "loop.json").write_bytes((scenario_run / "loop.json").read_bytes())
    from_evidence, from_loop = round_rows(scenario_run), round_rows(copy)
    assert [r["round"] for r in from_loop] == [0, 1, 2, 3]
    assert all(r["eval_total"] == 4 and r["train_total"] for r in from_loop)
    for key in ("eval_pass_at_1", "train_pass_at_1", "eval_total", "eval_resolved",
                "train_total", "train_resolved", "active_skills", "rollback_fired"):
        assert [r[key] for r in from_loop] == [r[key] for r in from_evidence], key


def test_retired_skill_row_says_retired_and_when(scenario_run, tmp_path):
    html = page(build_report([scenario_run], tmp_path / "report.html"))
    bad = skill_row(html, BAD_ID)
    assert bad[2] == "deprecated" and bad[4] == "retired r2"
    assert bad[5] == "4" and bad[6].startswith("-1.000")  # 4 trials, c-hat -1 [interval]
    assert "[" in bad[6]  # with its Wilson interval
    good = skill_row(html, GOOD_ID)
    assert good[2] == "deprecated" and good[4] == "restored r3"  # the rollback deprecated it
    generic = skill_row(html, GENERIC_ID)
    assert generic[4] == "evicted r1"
    skills = json_block(html, "skill-data")
    (per_run,) = skills.values()
    assert "retired in round 2" in per_run[BAD_ID]["life"]
    assert f"id: {BAD_ID}" in per_run[BAD_ID]["yaml"]
    assert 'data-chart="timeline"' in html and f'data-skill="{BAD_ID}"' in html
    # Columns no skill of this run fills are left out: no counterfactual probes here, no
    # tampering; the Curator's own columns stay even where they read 0.
    head = html.split('<section id="skills">')[1].split("</thead>")[0]
    assert ">ĉ_cf [95% Wilson]</th>" not in head and ">probe pairs</th>" not in head
    assert ">tampering (train / eval)</th>" not in head
    assert ">trials</th>" in head and ">routed eval</th>" in head


def test_capsule_browser_holds_every_capsule_and_where_its_row_is(scenario_run, tmp_path):
    html = page(build_report([scenario_run], tmp_path / "report.html"))
    rows = capsules(html)
    with EvidenceStore(scenario_run).connect() as con:
        ids = con.execute("SELECT capsule_id, passed, skill_id FROM capsule").fetchall()
        verdicts = dict(con.execute("SELECT capsule_id, pattern FROM verdict").fetchall())
    assert len(rows) == len(ids) == 4 * 11
    assert {r["capsule_id"]: (r["passed"], r["skill_id"]) for r in rows} == {
        c: (p, s) for c, p, s in ids}
    for r in rows:
        assert r["pattern"] == verdicts.get(r["capsule_id"])
        part = pq.read_table(scenario_run / r["part"]).to_pylist()[r["row"]]
        assert part["capsule_id"] == r["capsule_id"]
        assert part["output"].startswith((r["output"] or "").removesuffix(" […truncated]"))


def test_report_only_reads_the_run_dir(scenario_run, tmp_path):
    before = _tree(scenario_run)
    result = CliRunner().invoke(ratchet, ["report", str(scenario_run), "-o",
                                          str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    assert "r.html" in result.output
    assert _tree(scenario_run) == before  # nothing written, locked or touched
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left


def test_sweep_folder_gets_the_arm_table_and_curves_against_default(scenario_run, tmp_path):
    import shutil

    sweep = tmp_path / "sweep"
    for arm in ("default", "A1"):
        target = sweep / "runs" / f"{arm}_s42" / "mbpp" / scenario_run.name
        shutil.copytree(scenario_run, target)
        loop = json.loads((target / "loop.json").read_text())
        (target / "loop.json").write_text(json.dumps({**loop, "arm": arm}))
    (sweep / "sweep.json").write_text("{}")
    html = page(build_report([sweep], tmp_path / "sweep.html"))
    assert 'id="sweeps"' in html and "Default (full Ratchet)" in html
    assert "no skill injection" in html  # A1's row of the ablation table
    arm_chart = chart(html, "sweep-arm")
    assert 'data-series="default eval"' in arm_chart and 'data-series="A1 eval"' in arm_chart
    assert len(json_block(html, "capsule-data")["runs"]) == 2


def test_report_of_a_folder_without_a_run_names_the_fix(tmp_path):
    result = CliRunner().invoke(ratchet, ["report", str(tmp_path)])
    assert result.exit_code != 0 and "not a run dir" in result.output
    assert os.listdir(tmp_path) == []


def test_report_sizes_read_in_the_unit_that_fits():
    from ratchet_ray.cli.report import human_size

    assert [human_size(n) for n in (812, 39_180, 4_100_000)] == ["812 B", "39.2 kB", "4.1 MB"]
