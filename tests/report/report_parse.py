"""Reading a written report back: its JSON blocks, chart points and table rows."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path


def page(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def json_block(html: str, node_id: str):
    match = re.search(rf'<script type="application/json" id="{node_id}">(.*?)</script>', html,
                      re.S)
    assert match, f"no #{node_id} block"
    return json.loads(match.group(1).replace("<\\/", "</"))


def chart(html: str, kind: str) -> str:
    match = re.search(rf'<svg class="chart" data-chart="{kind}".*?</svg>', html, re.S)
    assert match, f"no {kind} chart"
    return match.group(0)


def points(svg: str, series: str) -> dict[int, float]:
    """``{round: value}`` of the markers of ``series`` in a chart."""
    found = re.findall(rf'<circle [^>]*data-series="{re.escape(series)}" data-x="([^"]+)" '
                       r'data-y="([^"]+)"', svg)
    return {int(float(x)): float(y) for x, y in found}


def markers(svg: str, kind: str) -> list[int]:
    return sorted(int(float(x)) for x in
                  re.findall(rf'data-marker="{kind}" data-x="([^"]+)"', svg))


def skill_row(html: str, skill_id: str) -> list[str]:
    """The cells (as text) of the skills table's row of ``skill_id``."""
    match = re.search(rf'<tr class="click" data-run="[^"]*" data-skill="{re.escape(skill_id)}"'
                      r'[^>]*>(.*?)</tr>', html, re.S)
    assert match, f"no skills-table row for {skill_id}"
    cells = re.findall(r"<td[^>]*>(.*?)</td>", match.group(1), re.S)
    return [unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells]


def capsules(html: str) -> list[dict]:
    """Every capsule row of the browser's data, interned strings resolved."""
    data = json_block(html, "capsule-data")
    cols, strings = data["columns"], data["strings"]
    interned = {"split", "task_id", "skill_id", "exit_status", "part", "pattern", "attribution"}
    out = []
    for run, rows in zip(data["runs"], data["rows"]):
        for row in rows:
            rec = {c: (strings[v] if c in interned and v is not None else v)
                   for c, v in zip(cols, row)}
            rec["run"] = run
            out.append(rec)
    return out
