"""Rollback firings per decisions (the paper audits its gate: 2 firings in 300 round
decisions) and the setting every table and report title names (model, tasks, whether that is
the paper's setting, the retirement rules beyond its Default), in the ablation table
(``ablations.md`` / ``.json``), the run summary (``loop_summary.md``) and the HTML report, over
hand-built run dirs with real Parquet evidence."""

from __future__ import annotations

import html
import json
from pathlib import Path

import yaml

from ratchet_ray.arm_summary import run_result
from ratchet_ray.report.ablation_report import write_report
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.report.plot import plot_run
from ratchet_ray.run_config.files import config_text, layered_files, load_config
from ratchet_ray.run_config.profiles import HARDENED, PAPER, profile_files
from ratchet_ray.settings.setting_label import setting_line


def make_run(root: Path, arm: str, seed: int, rounds: int, fired: tuple[int, ...],
             profiles: tuple[str, ...] = ()) -> Path:
    """A finished run of ``rounds`` rounds whose gate fired in the rounds ``fired``, its
    ``config.yaml`` resolved with ``profiles``."""
    run = root / f"{arm}_s{seed}" / "mbpp" / f"run_{arm}_{seed}"
    run.mkdir(parents=True)
    (run / "loop.json").write_text(json.dumps({
        "run_id": run.name, "suite": "mbpp", "arm": arm, "seed": seed, "rounds_planned": rounds,
        "rounds": [{"round": r, "eval_pass_at_1": 0.5, "rollback_fired": r in fired,
                    "restored_round": 0 if r in fired else None, "active_skills": 1,
                    "deprecated_skills": 0} for r in range(rounds)]}))
    config = load_config(layered_files("mbpp", profile_files(profiles, "mbpp")),
                         [f"seed={seed}", f'arm="{arm}"'])
    (run / "config.yaml").write_text(config_text(config))
    EvidenceStore(run).append("skill_event", 0, [{"run_id": run.name, "round": 0,
                                                  "skill_id": "s", "event": "added",
                                                  "status_after": "active"}])
    return run


def test_rollback_firings_per_decisions_per_run_and_summed_per_arm(tmp_path):
    paper = (PAPER,)
    make_run(tmp_path, "default", 42, 100, (61,), paper)
    make_run(tmp_path, "default", 7, 100, (), paper)
    make_run(tmp_path, "default", 13, 100, (40,), paper)
    make_run(tmp_path, "A4", 42, 100, (10, 30, 50), paper)
    md, js, summaries = write_report(tmp_path)
    default, a4 = summaries
    assert (default.rollbacks_fired, default.rollback_decisions) == (2, 300)  # the paper's audit
    assert (a4.rollbacks_fired, a4.rollback_decisions) == (3, 100)
    text = md.read_text()
    assert "| rollbacks (fired / decisions) |" in text
    assert text.count("| 2 / 300 |") == 1 and "| 3 / 100 |" in text  # arm table
    assert "| 1 / 100 |" in text and "| 0 / 100 |" in text  # per run
    run = run_result(tmp_path / "A4_s42" / "mbpp" / "run_A4_42")
    assert (run.rollbacks_fired, run.rollback_decisions) == (3, 100)
    arms = {a["arm"]: a for a in json.loads(js.read_text())["arms"]}
    assert (arms["default"]["rollbacks_fired"], arms["default"]["rollback_decisions"]) == (2, 300)
    # the title names the paper's setting: its model, its subset, its Default
    title = text.splitlines()[0]
    assert "bedrock global.anthropic.claude-opus-4-7" in title
    assert "subset mbpp_hard100_t60_e40_seed42.json" in title
    assert "retirement rules: the paper's Default" in title
    assert "not the paper's setting" not in title


def test_a_table_of_the_quickstarts_model_says_it_is_not_the_papers_setting(tmp_path):
    run = make_run(tmp_path, "default", 42, 3, (2,), (HARDENED,))
    md, _, _ = write_report(tmp_path)
    title = md.read_text().splitlines()[0]
    assert "local Gemma 3 270M (the quickstart's model)" in title
    assert "random slice 60 train / 40 eval (seed 42)" in title
    assert "not the paper's setting" in title
    assert "beyond the paper's Default: tampering rule, impossible-twin cheat rule" in title
    _, summary, _ = plot_run(run)
    lines = summary.read_text().splitlines()
    assert lines[0] == f"# {run.name}: {setting_line(yaml.safe_load((run / 'config.yaml').read_text()))}"
    assert "| rollbacks (fired / decisions) | 1 / 3 [2] |" in lines


def test_the_html_report_title_and_headline_name_the_setting_and_the_rollback_rate(tmp_path):
    from ratchet_ray.report.html import build_report

    run = make_run(tmp_path, "default", 42, 4, (3,))
    page = Path(build_report([run], tmp_path / "report.html")).read_text()
    head = html.unescape(page[page.index("<h1>"):page.index("</h1>")])
    assert "the quickstart's model" in head and "not the paper's setting" in head
    assert "rollbacks fired / decisions" in page and "1 / 4" in page
