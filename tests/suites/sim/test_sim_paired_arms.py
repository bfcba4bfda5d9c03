"""Paired statistics on a real sim sweep (``evidence.comparisons`` through the ablation table):
an arm known to differ from the Default (A1: no skill injection, so no learning) is told apart,
and an arm that changes nothing these rounds can reach (A7: a cap of 100 where the bank stays
far below the Default's 50) differs by exactly 0."""

from __future__ import annotations

import pytest

from ratchet_ray.report.ablation_report import write_report

from sim_helpers import run_sim, sim_config

pytestmark = pytest.mark.slow
SETTINGS = ("rounds=8", "n_train=40", "n_eval=40")


def test_a1_is_told_apart_from_the_default_and_a7_is_exactly_the_default(ray_local, tmp_path):
    for arm in ("default", "A1", "A7"):
        run_sim(sim_config(tmp_path / "runs" / f"{arm}_s42", *SETTINGS,
                           arm=None if arm == "default" else arm))
    md, _, summaries = write_report(tmp_path)
    by_arm = {s.arm: s for s in summaries}
    a1, a7 = by_arm["A1"].vs_default, by_arm["A7"].vs_default
    assert a1.interval.high < 0 and a1.real, a1
    assert a1.default_better > a1.arm_better and a1.p_value < 0.05
    assert (a7.diff, a7.interval.low, a7.interval.high) == (0.0, 0.0, 0.0)
    assert (a7.arm_better, a7.default_better, a7.p_value) == (0, 0, 1.0)
    text = md.read_text()
    assert f"| **{a1.diff:+.3f} {a1.interval.describe()}** |" in text
    assert "| +0.000 [+0.000, +0.000] | 1 |" in text
