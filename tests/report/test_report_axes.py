"""Axes of the report's SVG charts and of ``ratchet plot``: whole rounds, counts from 0."""

from __future__ import annotations

import json

import re

import pytest

from ratchet_ray.report.plot import plot_run
from ratchet_ray.report import svg
from ratchet_ray.report.data import wilson_contribution


@pytest.mark.parametrize("lo,hi", [(0, 1), (0, 3), (0, 7), (0, 99), (5, 42), (0, 1000)])
def test_round_ticks_are_integers_inside_the_range(lo, hi):
    ticks = svg.int_ticks(lo, hi)
    assert all(isinstance(t, int) for t in ticks) and ticks == sorted(set(ticks))
    assert lo <= ticks[0] and ticks[-1] <= hi and 2 <= len(ticks) <= 13


@pytest.mark.parametrize("top", [0, 0.2, 1, 3, 9, 11, 250, 45_123])
def test_count_ticks_start_at_zero_and_cover_the_top(top):
    ticks = svg.count_ticks(top)
    assert ticks[0] == 0 and min(ticks) >= 0 and ticks[-1] >= top
    assert all(float(t).is_integer() for t in ticks)


def test_a_bank_chart_of_empty_banks_never_goes_negative():
    chart = svg.line_chart([svg.Series("active", [(0, 0), (1, 0), (2, 0)])], title="t",
                           y_label="skills")
    ys = [float(v) for v in re.findall(r'class="yt">([^<]+)<', chart)]
    assert ys and min(ys) == 0
    assert "2.5" not in re.findall(r'class="xt">([^<]+)<', chart)


def test_a_two_round_bank_chart_is_drawn_as_points():
    from pathlib import Path

    from ratchet_ray.report.data import RunData
    from ratchet_ray.report.sections import bank_chart

    def run(rounds: int) -> RunData:
        rows = [{"round": r, "active_skills": r + 1, "deprecated_skills": 0}
                for r in range(rounds)]
        return RunData(run_dir=Path("r"), identity={}, rounds=rows, metrics=None, stop={},
                       usage=[], models=[], skills=[], events=[], metaskills=[])

    two = bank_chart([run(2)])
    assert not re.findall(r'<path[^>]*data-series="active"', two)  # no riser at round 1
    assert len(re.findall(r'<circle[^>]*data-series="active"', two)) == 2
    three = bank_chart([run(3)])
    assert re.findall(r'<path[^>]*data-series="active"', three)


def test_wilson_contribution_brackets_the_estimate():
    low, high = wilson_contribution(0, 4, 4)  # c-hat -1 over 4 trials
    assert -1 <= low < high <= 1 and low == pytest.approx(-1, abs=1e-9)
    low, high = wilson_contribution(30, 10, 50)  # ties: c_cf = 0.4
    assert low < 0.4 < high
    assert wilson_contribution(0, 0, 0) is None


def test_plot_has_integer_round_ticks_and_a_skill_axis_from_zero(tmp_path, monkeypatch):
    rows = [{"round": r, "eval_pass_at_1": 0.5, "train_pass_at_1": 0.4, "active_skills": 0,
             "deprecated_skills": 0, "rollback_fired": False} for r in range(3)]
    (tmp_path / "loop.json").write_text(json.dumps({"run_id": "r", "rounds_planned": 3,
                                                    "rounds": rows}))
    import matplotlib.pyplot as plt

    kept = []
    monkeypatch.setattr(plt, "close", kept.append)  # keep the figure to read its axes
    plot_run(tmp_path)
    (fig,) = kept
    top, bottom = fig.axes
    assert bottom.get_ylim()[0] == 0
    ticks = [t for t in bottom.get_xticks() if 0 <= t <= 2]
    assert ticks and all(float(t).is_integer() for t in ticks)
    assert all(float(t).is_integer() for t in bottom.get_yticks())
    monkeypatch.undo()
    plt.close(fig)
