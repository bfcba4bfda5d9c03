"""Inline SVG charts of the report, written as strings (no chart library, no network).

Contracts:
- Every chart is one ``<svg class="chart" ...>`` string with a ``<title>`` per point or bar (the
  browser's tooltip), ``data-*`` attributes the tests read (``data-series``, ``data-x``,
  ``data-y``), and colours from ``PALETTE`` (colour-blind safe, Okabe–Ito).
- Rounds are integers: x ticks are integers (``int_ticks``) and never fall between rounds.
- Count axes (skills, tokens, cost) start at 0 and never go below it (``count_ticks``).
- Text is escaped; nothing here reads files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape
from typing import Sequence

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
           "#000000", "#999999")
ROLLBACK, RESTORED = "#D55E00", "#009E73"
W, H = 760, 260
ML, MR, MT, MB = 52, 16, 26, 38


@dataclass
class Series:
    name: str
    points: list[tuple[float, float]]
    color: str = PALETTE[0]
    dash: str | None = None
    width: float = 1.8
    markers: bool = True
    step: bool = False
    opacity: float = 1.0
    path: bool = True
    """Join the points with a line; False draws the markers alone (a step chart of two rounds
    would read as one vertical line)."""


@dataclass
class Band:
    """A shaded band between ``lo`` and ``hi`` (mean ± std over seeds)."""

    name: str
    points: list[tuple[float, float, float]]
    color: str = PALETTE[0]


@dataclass
class VLine:
    x: float
    color: str
    label: str
    dash: str | None = None


@dataclass
class Frame:
    x0: float
    x1: float
    y0: float
    y1: float
    width: int = W
    height: int = H
    top: int = MT
    """Top margin: the title's line, and legend rows under it when they do not fit beside it."""
    lines: list[str] = field(default_factory=list)

    def sx(self, x: float) -> float:
        span = (self.x1 - self.x0) or 1.0
        return ML + (x - self.x0) / span * (self.width - ML - MR)

    def sy(self, y: float) -> float:
        span = (self.y1 - self.y0) or 1.0
        return self.height - MB - (y - self.y0) / span * (self.height - self.top - MB)


def _nice(step: float) -> float:
    exp = math.floor(math.log10(step)) if step > 0 else 0
    for m in (1, 2, 2.5, 5, 10):
        if m * 10 ** exp >= step:
            return m * 10 ** exp
    return 10 ** (exp + 1)


def int_ticks(lo: int, hi: int, most: int = 12) -> list[int]:
    """Integer ticks from ``lo`` to ``hi`` (rounds): every 1, 2, 5, 10, 20, 25, 50... rounds."""
    if hi <= lo:
        return [lo]
    step = max(1, int(_nice((hi - lo) / most)))
    first = math.ceil(lo / step) * step
    return list(range(first, hi + 1, step))


def count_ticks(top: float, most: int = 5, integer: bool = True) -> list[float]:
    """Ticks from 0 up to at least ``top`` (never negative); integers for counts."""
    top = max(top, 1.0 if integer else 1e-9)
    step = _nice(top / most)
    if integer:
        step = max(1, math.ceil(step))
    n = math.ceil(top / step - 1e-9)
    return [round(i * step, 10) for i in range(n + 1)]


def _fmt(v: float) -> str:
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"


def _axes(f: Frame, xticks: Sequence[float], yticks: Sequence[float], y_label: str, title: str,
          yfmt=_fmt) -> None:
    out = f.lines
    out.append(f'<text x="{ML}" y="16" class="ct">{escape(title)}</text>')
    for y in yticks:
        py = f.sy(y)
        out.append(f'<line x1="{ML}" x2="{f.width - MR}" y1="{py:.1f}" y2="{py:.1f}" class="grid"/>')
        out.append(f'<text x="{ML - 6}" y="{py + 4:.1f}" class="yt">{escape(yfmt(y))}</text>')
    base = f.height - MB
    for x in xticks:
        px = f.sx(x)
        out.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{base}" y2="{base + 4}" class="ax"/>')
        out.append(f'<text x="{px:.1f}" y="{base + 16}" class="xt">{escape(_fmt(x))}</text>')
    out.append(f'<line x1="{ML}" x2="{f.width - MR}" y1="{base}" y2="{base}" class="ax"/>')
    out.append(f'<text x="{(ML + f.width - MR) / 2:.0f}" y="{f.height - 4}" class="xl">'
               'round</text>')
    out.append(f'<text transform="translate(12,{(f.top + base) / 2:.0f}) rotate(-90)" '
               f'class="yl">{escape(y_label)}</text>')


LEGEND_ROW = 15
"""Height of one legend row set under the title (multi-run charts have many series)."""


def _item_width(name: str) -> int:
    return 7 * len(name) + 28


def legend_rows(items: list[tuple[str, str, str | None]], title: str,
                width: int = W) -> list[list[tuple[str, str, str | None]]]:
    """The legend's rows under the title, or ``[]`` when it fits on the title's line to the
    right of the title (both estimated at 7 px per character, as ``_legend`` places them)."""
    beside = width - MR - (ML + 7 * len(title) + 16)
    if sum(_item_width(n) for n, _, _ in items) <= beside:
        return []
    rows: list[list[tuple[str, str, str | None]]] = [[]]
    used = 0
    for item in items:
        w = _item_width(item[0])
        if rows[-1] and used + w > width - MR - ML:
            rows.append([])
            used = 0
        rows[-1].append(item)
        used += w
    return rows


def _legend_item(f: Frame, x: float, y: float, name: str, color: str, dash: str | None) -> None:
    d = f' stroke-dasharray="{dash}"' if dash else ""
    f.lines.append(f'<line x1="{x:.0f}" x2="{x + 18:.0f}" y1="{y - 4:.0f}" y2="{y - 4:.0f}" '
                   f'stroke="{color}" stroke-width="2.5"{d}/><text x="{x + 22:.0f}" y="{y:.0f}" '
                   f'class="lg">{escape(name)}</text>')


def _legend(f: Frame, items: list[tuple[str, str, str | None]],
            rows: list[list[tuple[str, str, str | None]]] = ()) -> None:
    """Right-aligned on the title's line, or ``rows`` (``legend_rows``) under the title."""
    for k, row in enumerate(rows):
        x = ML
        for name, color, dash in row:
            _legend_item(f, x, 16 + LEGEND_ROW * (k + 1), name, color, dash)
            x += _item_width(name)
    if rows:
        return
    x = f.width - MR
    for name, color, dash in reversed(items):
        x -= _item_width(name)
        _legend_item(f, x, 16, name, color, dash)


def _wrap(f: Frame, kind: str) -> str:
    return (f'<svg class="chart" data-chart="{kind}" viewBox="0 0 {f.width} {f.height}" '
            f'width="100%" preserveAspectRatio="xMidYMid meet" role="img" '
            f'xmlns="http://www.w3.org/2000/svg">' + "".join(f.lines) + "</svg>")


def _path(f: Frame, pts: list[tuple[float, float]], step: bool) -> str:
    out = []
    for i, (x, y) in enumerate(pts):
        if i and step:
            out.append(f"L{f.sx(x):.1f},{f.sy(pts[i - 1][1]):.1f}")
        out.append(f"{'L' if i else 'M'}{f.sx(x):.1f},{f.sy(y):.1f}")
    return "".join(out)


def line_chart(series: list[Series], *, title: str, y_label: str,
               y_range: tuple[float, float] | None = None, bands: Sequence[Band] = (),
               vlines: Sequence[VLine] = (), kind: str = "line", height: int = H) -> str:
    """Lines over integer rounds; ``y_range`` None = counts from 0 (``count_ticks``)."""
    xs = [x for s in series for x, _ in s.points] + [x for b in bands for x, _, _ in b.points]
    x0, x1 = (int(min(xs)), int(max(xs))) if xs else (0, 1)
    x1 = max(x1, x0 + 1)
    if y_range is None:
        top = max([y for s in series for _, y in s.points] or [1])
        yticks = count_ticks(top)
        y_range = (0.0, yticks[-1])
    else:
        yticks = [y_range[0] + i * (y_range[1] - y_range[0]) / 5 for i in range(6)]
    legend = ([(s.name, s.color, s.dash) for s in series if s.points and s.opacity >= 0.9]
              + [(v.label.split()[0], v.color, v.dash) for v in
                 {v.label.split()[0]: v for v in vlines}.values()])
    rows = legend_rows(legend, title)  # many runs: rows under the title, never over it
    extra = LEGEND_ROW * len(rows)
    f = Frame(x0, x1, y_range[0], y_range[1], height=height + extra, top=MT + extra)
    _axes(f, int_ticks(x0, x1), yticks, y_label, title)
    for b in bands:
        if not b.points:
            continue
        upper = [(x, min(hi, f.y1)) for x, _, hi in b.points]
        lower = [(x, max(lo, f.y0)) for x, lo, _ in reversed(b.points)]
        d = _path(f, upper + lower, False) + "Z"
        f.lines.append(f'<path d="{d}" fill="{b.color}" opacity="0.15" data-band="'
                       f'{escape(b.name)}"><title>{escape(b.name)}</title></path>')
    for v in vlines:
        px = f.sx(v.x)
        d = f' stroke-dasharray="{v.dash}"' if v.dash else ""
        f.lines.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{f.top}" y2="{f.height - MB}" '
                       f'stroke="{v.color}" stroke-width="1.5" opacity="0.8"{d} '
                       f'data-marker="{escape(v.label.split()[0])}" data-x="{v.x:g}">'
                       f'<title>{escape(v.label)}</title></line>')
    for s in series:
        if not s.points:
            continue
        d = f' stroke-dasharray="{s.dash}"' if s.dash else ""
        if s.path:
            f.lines.append(f'<path d="{_path(f, s.points, s.step)}" fill="none" '
                           f'stroke="{s.color}" stroke-width="{s.width}" opacity="{s.opacity}"{d} '
                           f'data-series="{escape(s.name)}"/>')
        if s.markers or not s.path:
            for x, y in s.points:
                f.lines.append(
                    f'<circle cx="{f.sx(x):.1f}" cy="{f.sy(y):.1f}" r="2.6" fill="{s.color}" '
                    f'opacity="{s.opacity}" data-series="{escape(s.name)}" data-x="{x:g}" '
                    f'data-y="{y:.6g}"><title>{escape(s.name)}: round {x:g}, '
                    f'{y:.3f}</title></circle>')
    _legend(f, legend, rows)
    return _wrap(f, kind)


def stacked_bars(rounds: list[int], stacks: dict[str, list[float]], *, title: str,
                 y_label: str, kind: str, money: bool = False) -> str:
    """One bar per round, one coloured segment per key of ``stacks`` (e.g. per role)."""
    if not rounds:
        rounds = [0]
    totals = [sum(v[i] for v in stacks.values()) for i in range(len(rounds))]
    yticks = count_ticks(max(totals or [0]) or 1, integer=not money)
    f = Frame(min(rounds) - 0.5, max(rounds) + 0.5, 0.0, yticks[-1])
    fmt = (lambda v: f"${v:.3g}") if money else (lambda v: f"{v / 1000:.0f}k" if v >= 1000
                                                 else _fmt(v))
    _axes(f, int_ticks(min(rounds), max(rounds)), yticks, y_label, title, fmt)
    bw = max(1.0, (f.sx(1) - f.sx(0)) * 0.8)
    base = [0.0] * len(rounds)
    colors = {}
    for k, (name, values) in enumerate(stacks.items()):
        colors[name] = PALETTE[k % len(PALETTE)]
        for i, r in enumerate(rounds):
            v = values[i]
            if v <= 0:
                continue
            y_top, y_bot = f.sy(base[i] + v), f.sy(base[i])
            f.lines.append(
                f'<rect x="{f.sx(r) - bw / 2:.1f}" y="{y_top:.1f}" width="{bw:.1f}" '
                f'height="{max(0.5, y_bot - y_top):.1f}" fill="{colors[name]}" '
                f'data-series="{escape(name)}" data-x="{r}" data-y="{v:.6g}"><title>round {r}, '
                f'{escape(name)}: {fmt(v)}</title></rect>')
            base[i] += v
    _legend(f, [(n, c, None) for n, c in colors.items()])
    return _wrap(f, kind)


@dataclass
class Lane:
    """One skill's life: a bar from ``start`` to ``end`` (None = still alive at ``last``)."""

    label: str
    start: int
    end: int | None
    color: str
    marks: list[tuple[int, str, str]]  # (round, symbol colour, tooltip)
    tooltip: str
    skill_id: str = ""


def timeline(lanes: list[Lane], last_round: int, *, title: str, kind: str = "timeline") -> str:
    """The bank's life: one lane per skill, born to retired / evicted / still active."""
    lane_h, top = 14, 30
    label_w = 190
    height = top + lane_h * max(1, len(lanes)) + 30
    width = W
    x0, x1 = 0, max(1, last_round + 1)

    def sx(x: float) -> float:
        return label_w + (x - x0) / (x1 - x0) * (width - label_w - MR)

    out = [f'<text x="4" y="16" class="ct">{escape(title)}</text>']
    for t in int_ticks(x0, x1 - 1):
        out.append(f'<line x1="{sx(t):.1f}" x2="{sx(t):.1f}" y1="{top - 6}" '
                   f'y2="{height - 24}" class="grid"/><text x="{sx(t):.1f}" y="{height - 10}" '
                   f'class="xt">{t}</text>')
    for i, lane in enumerate(lanes):
        y = top + i * lane_h
        end = lane.end if lane.end is not None else x1 - 1
        label = lane.label if len(lane.label) <= 28 else lane.label[:27] + "…"
        out.append(f'<g class="lane" data-skill="{escape(lane.skill_id or lane.label)}">'
                   f'<text x="{label_w - 6}" y="{y + 10}" class="yt">{escape(label)}</text>'
                   f'<rect x="{sx(lane.start):.1f}" y="{y + 2}" '
                   f'width="{max(2.0, sx(end + 1) - sx(lane.start)):.1f}" height="{lane_h - 4}" '
                   f'rx="2" fill="{lane.color}" opacity="0.75"><title>{escape(lane.tooltip)}'
                   f'</title></rect>')
        for r, color, tip in lane.marks:
            out.append(f'<circle cx="{sx(r + 0.5):.1f}" cy="{y + lane_h / 2:.1f}" r="3.4" '
                       f'fill="{color}" stroke="#fff" stroke-width="0.8"><title>{escape(tip)}'
                       f'</title></circle>')
        out.append("</g>")
    return (f'<svg class="chart" data-chart="{kind}" viewBox="0 0 {width} {height}" width="100%" '
            f'style="max-width:{width * 1.25:.0f}px" role="img" xmlns="http://www.w3.org/2000/svg">' + "".join(out) + "</svg>")
