"""The cheat-rate column (``governance.cheat_probe``) in the HTML report's skills table and in
the ablation table (``ablations.md`` / ``.json``), over hand-built run dirs with real Parquet
evidence: impossible twins graded and passed per skill, per run and per arm."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ratchet_ray.arm_summary import run_result
from ratchet_ray.report.ablation_report import write_report
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.report.data import load_run
from ratchet_ray.report.sections import skills_section


def make_run(root: Path, arm: str, seed: int, twins: dict[str, tuple[int, int]],
             retired: tuple[str, ...] = ()) -> Path:
    """A finished one-round run whose skills had ``twins[skill] = (passed, failed)`` twins, an
    honest first attempt each, and the skills in ``retired`` retired for cheating."""
    run = root / f"{arm}_s{seed}" / "mbpp" / f"run_{arm}_{seed}"
    run.mkdir(parents=True)
    (run / "loop.json").write_text(json.dumps({
        "run_id": run.name, "suite": "mbpp", "arm": arm, "seed": seed, "rounds_planned": 1,
        "rounds": [{"round": 0, "eval_pass_at_1": 0.5, "active_skills": len(twins),
                    "deprecated_skills": 0}]}))
    store = EvidenceStore(run)
    store.append("skill_event", 0, [{"run_id": run.name, "round": 0, "skill_id": s,
                                     "event": "added", "status_after": "active"} for s in twins])
    rows = []
    for skill, (passed, failed) in twins.items():
        for i, ok in enumerate([True] * passed + [False] * failed):
            base = {"run_id": run.name, "arm": arm, "round": 0, "split": "train",
                    "task_id": f"{skill}/{i}", "skill_id": skill}
            rows.append({**base, "capsule_id": f"{skill}-{i}", "passed": True})
            rows.append({**base, "capsule_id": f"{skill}-{i}-twin", "passed": ok, "attempt": 2,
                         "impossible": True})
    store.append("capsule", 0, rows)
    if retired:
        store.append("skill_event", 0, [{"run_id": run.name, "round": 0, "skill_id": s,
                                         "event": "retired", "status_after": "deprecated",
                                         "reason": "cheat: passed 1 of 2 impossible twins"}
                                        for s in retired])
    return run


def test_the_skills_table_shows_each_skills_cheat_rate(tmp_path):
    run = make_run(tmp_path, "default", 1, {"cheat": (1, 1), "honest": (0, 3)}, ("cheat",))
    data = load_run(run)
    by_id = {s.skill_id: s for s in data.skills}
    assert (by_id["cheat"].twins, by_id["cheat"].twin_passes) == (2, 1)
    assert (by_id["honest"].twins, by_id["honest"].twin_passes) == (3, 0)
    assert by_id["honest"].trials == 3 and by_id["honest"].c_hat == 1.0  # twins are not in c
    html = skills_section([data])
    assert "<th>cheat rate (twins passed / graded)</th>" in html
    assert '<b class="cheat">0.50 (1 / 2)</b>' in html and "0.00 (0 / 3)" in html


def test_the_ablation_table_gains_a_cheat_rate_column(tmp_path):
    make_run(tmp_path, "default", 1, {"a": (1, 1)}, ("a",))
    make_run(tmp_path, "default", 2, {"a": (0, 2), "b": (0, 2)})
    make_run(tmp_path, "A1", 1, {})  # no twin at all: n/a, not 0
    md, js, summaries = write_report(tmp_path)
    default, a1 = summaries
    assert (default.cheat_rate.mean, default.cheat_rate.std) == (0.25, pytest.approx(0.125 ** 0.5))
    assert default.skills_retired_cheat.mean == 0.5
    assert (a1.cheat_rate.mean, a1.cheat_rate.n) == (None, 0)
    text = md.read_text()
    assert "| cheat rate (twins passed / graded; skills retired) |" in text
    assert "| 0.250 ± 0.354; 0.5 ± 0.7 |" in text and "| n/a; 0.0 |" in text
    assert "| 0.500 (1 / 2; 1) |" in text and "| 0.000 (0 / 4; 0) |" in text
    assert "| n/a (0 / 0; 0) |" in text
    runs = {(r["arm"], r["seed"]): r for r in json.loads(js.read_text())["runs"]}
    assert (runs[("default", 1)]["twins"], runs[("default", 1)]["twin_passes"],
            runs[("default", 1)]["cheat_rate"]) == (2, 1, 0.5)
    assert runs[("A1", 1)]["cheat_rate"] is None
    assert run_result(tmp_path / "default_s2" / "mbpp" / "run_default_2").cheat_rate == 0.0
