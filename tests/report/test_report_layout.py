"""Layout of the report's charts and tables with many runs: a curve's legend that does not fit
beside its title goes on rows under it (the plot moves down, nothing overlaps the title), and a
sweep's Markdown table shows its bold cells bold and scrolls inside its section."""

from __future__ import annotations

import re

from ratchet_ray.report import svg
from ratchet_ray.report.sections import _md_tables_to_html

TITLE = "eval pass@1 per round"


def _series(names: list[str]) -> list[svg.Series]:
    return [svg.Series(name, [(0, 0.2), (1, 0.4)], color="#000000") for name in names]


def _legend_ys(chart: str) -> list[float]:
    return [float(y) for y in re.findall(r'<text x="[\d.]+" y="([\d.]+)" class="lg">', chart)]


def test_a_short_legend_stays_on_the_title_line():
    chart = svg.line_chart(_series(["eval", "train"]), title=TITLE, y_label="pass@1",
                           y_range=(0.0, 1.0))
    assert set(_legend_ys(chart)) == {16.0}
    assert f'viewBox="0 0 {svg.W} {svg.H}"' in chart


def test_a_multi_run_legend_goes_under_the_title_and_the_chart_grows():
    names = [f"mbpp_r10_t60_e40_20261206T0{i}0000Z eval" for i in range(6)]
    assert svg.legend_rows([(n, "#000", None) for n in names], TITLE)  # it would not fit
    chart = svg.line_chart(_series(names), title=TITLE, y_label="pass@1", y_range=(0.0, 1.0))
    ys = sorted(set(_legend_ys(chart)))
    assert ys[0] > 16 and len(ys) >= 2  # rows under the title's line, none on it
    extra = svg.LEGEND_ROW * len(ys)
    assert f'viewBox="0 0 {svg.W} {svg.H + extra}"' in chart
    # Every legend item fits the chart's width.
    xs = [float(x) for x in re.findall(r'<text x="([\d.]+)" y="[\d.]+" class="lg">', chart)]
    assert min(xs) >= svg.ML and all(x + 7 * len(n) <= svg.W for x, n in zip(xs, names))


def test_a_sweep_table_shows_bold_cells_bold_and_scrolls():
    html = _md_tables_to_html("| arm | gain |\n|---|---|\n| A1 | **+0.120** |\n")
    assert "<strong>+0.120</strong>" in html and "**" not in html
    assert html.startswith('<div class="scroll"><table>')
