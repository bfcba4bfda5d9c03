"""The report page: ``build_report(paths, out)`` writes one self-contained HTML file.

Contracts:
- It needs nothing but a browser: inline SVG (``svg``), embedded style and script
  (``assets``), data in ``<script type="application/json">`` blocks; no URL is fetched.
  Sections: Headline, Curves, The bank's life, Skills, Capsules, and Sweeps for a sweep folder.
- Inputs are only read; the page is written to a temp file next to ``out`` and renamed over it
  (over what a symbolic link at ``out`` names: the link is kept, ``fsutil.write_target``).
- Capsule texts are cut to fit ``capsules.TEXT_BUDGET`` over all runs; past ``max_capsules``
  the browser keeps whole runs in order and the page names those left out and the option.
"""

from __future__ import annotations

import json
import time
from html import escape
from pathlib import Path
from typing import Any, Callable, Iterable

import duckdb
import pyarrow as pa

from ratchet_ray.report.assets import CSS, JS
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.storage.fsutil import atomic_write_text, write_target
from ratchet_ray.report.capsules import COLUMNS, capsule_rows, text_limit_for
from ratchet_ray.report.data import RunData, guidance_yaml, load_run
from ratchet_ray.report.inspect_export import task_statements
from ratchet_ray.report.sections import (bank_section, compare_section, curves_section,
                                         headline_section, life_text, skills_section,
                                         sweep_section, truth_section)
from ratchet_ray.report.sweep import SweepTable, expand, suite_columns, sweep_table

MAX_CAPSULES = 60_000


def _skill_json(runs: list[RunData]) -> dict[str, dict[str, Any]]:
    """Per run label and skill id: the YAML, its guidance (what the Solver gets) and its life."""
    out: dict[str, dict[str, Any]] = {}
    for run in runs:
        per = out.setdefault(run.label, {})
        for s in run.skills:
            per[s.skill_id] = {"yaml": s.yaml, "guidance": guidance_yaml(s.yaml) or s.yaml,
                               "life": life_text(s)}
    return out


# ---- capsules ----------------------------------------------------------------------------------
def capsule_payload(runs: list[RunData], max_capsules: int = MAX_CAPSULES,
                    with_tasks: bool = True) -> tuple[dict[str, Any], list[str]]:
    """The browser's JSON (runs, columns, strings, rows per run, tasks per run) and the runs
    left out for ``max_capsules``."""
    counts = [EvidenceStore(r.run_dir).row_count("capsule") for r in runs]
    kept, total, left_out = [], 0, []
    for run, n in zip(runs, counts):
        if kept and total + n > max_capsules:
            left_out.append(run.label)
            continue
        kept.append(run)
        total += n
    limit = text_limit_for(total)
    strings: list[str] = []  # interned by every run's table: one for the page
    rows_per_run, tasks = [], []
    for run in kept:
        rows = capsule_rows(run.run_dir, limit, strings)
        rows_per_run.append(rows)
        ids = {strings[r[COLUMNS.index("task_id")]] for r in rows}
        # Statements cut to 1,500 characters; none (the browser shows the task id) when the
        # suite's tasks do not load offline.
        tasks.append(task_statements(run.run_dir, ids, limit=1500) if with_tasks else {})
    return ({"runs": [r.label for r in kept], "columns": list(COLUMNS), "strings": strings,
             "rows": rows_per_run, "tasks": tasks, "text_limit": limit}, left_out)


def capsules_section(payload: dict[str, Any], left_out: list[str]) -> str:
    n = sum(len(r) for r in payload["rows"])
    skipped = ("" if not left_out else
               f'<p class="note">Left out of the browser to keep the file small: '
               f"{escape(', '.join(left_out))} (raise <code>--max-capsules</code>).</p>")
    return f"""<section id="capsules"><h2>Capsules</h2>
<p class="note">{n:,} capsules. Texts longer than {payload['text_limit']:,} characters are cut;
each capsule names its Parquet part and row for the full text (<code>ratchet query</code>).</p>
{skipped}<div class="filters">
<label>run<select id="f-run"></select></label>
<label>round<select id="f-round"></select></label>
<label>split<select id="f-split"><option value="">any split</option><option value="train">
train</option><option value="eval">eval</option></select></label>
<label>skill<select id="f-skill"></select></label>
<label>result<select id="f-result"><option value="">any result</option><option value="pass">
pass</option><option value="fail">fail</option><option value="infra">infra failure</option>
</select></label>
<label>exit status<select id="f-status"></select></label>
<label>task<input id="f-task" type="search" placeholder="task id"></label></div>
<div class="pager"><button type="button" id="prev">‹ prev</button><button type="button"
id="next">next ›</button><span id="capsule-count" class="mute"></span></div>
<table><thead><tr><th>run</th><th class="num">round</th><th>split</th><th>task</th>
<th>skill</th><th>result</th><th>exit status</th><th>Critic: pattern (attribution)</th></tr></thead>
<tbody id="capsule-rows"></tbody></table>
<div id="capsule-detail" class="detail" hidden></div></section>"""


# ---- the page ----------------------------------------------------------------------------------
def _json_block(node_id: str, value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), default=str)
    text = text.replace("</", "<\\/")  # a capsule's text can never close the script element
    return f'<script type="application/json" id="{node_id}">{text}</script>'


def render(runs: list[RunData], sweeps: list[SweepTable], payload: dict[str, Any],
           left_out: list[str], truth: tuple[str, list | None, tuple[str, ...]] | None = None
           ) -> str:
    """The page; ``truth``: the suite's extra columns for runs outside a sweep (its title,
    rows and columns; rows None when the suite has none)."""
    title = runs[0].identity.get("run_id") if len(runs) == 1 else f"{len(runs)} runs"
    from ratchet_ray.settings.setting_label import combined

    settings = [str(r.identity.get("setting") or "") for r in runs]
    title = f"{title}: {combined(settings)}" if any(settings) else title  # model, tasks, rules
    shows_truth = truth is not None and truth[1] is not None and not sweeps
    sections = {"headline": headline_section(runs), "curves": curves_section(runs),
                "bank": bank_section(runs), "skills": skills_section(runs),
                "capsules": capsules_section(payload, left_out),
                "sweeps": sweep_section(sweeps, runs) if sweeps else "",
                "truth": truth_section(*truth) if shows_truth else "",
                "compare": compare_section(runs) if not sweeps else ""}
    labels = {"bank": "bank's life"}
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width,initial-scale=1"><title>Ratchet report: '
            f"{escape(str(title))}</title><style>{CSS}</style></head><body>"
            f"<header><h1>Ratchet report: {escape(str(title))}</h1><div class=sub>generated "
            f"{stamp} from the run's evidence (a run in progress shows the rounds finished so "
            f"far)</div></header><nav>"
            + "".join(f'<a href="#{n}">{labels.get(n, n).capitalize()}</a>'
                      for n, text in sections.items() if text)
            + "</nav><main>" + "".join(sections.values()) + "</main>"
            + _json_block("skill-data", _skill_json(runs)) + _json_block("capsule-data", payload)
            + f"<script>{JS}</script></body></html>")


def build_report(paths: Iterable[str | Path], out: str | Path | None = None, *,
                 max_capsules: int = MAX_CAPSULES, with_tasks: bool = True,
                 warn: Callable[[str], None] | None = None) -> Path:
    """Write the report of ``paths`` (run dirs and sweep folders) to ``out`` (default
    ``<first run dir or sweep>/report.html``); returns the file written. An evidence part that
    DuckDB cannot read (or that holds another kind's columns) and that the build meets is
    ``UnreadableEvidence`` naming it and ``ratchet evidence verify``. Each file the page cannot show whole (``RunData.problems``) is named on the page and
    passed to ``warn``."""
    found = expand(paths)
    try:
        runs = [load_run(d) for d in found.run_dirs]
        sweeps = [sweep_table(s) for s in found.sweeps]
        payload, left_out = capsule_payload(runs, max_capsules, with_tasks)
    # Met by a query past the part's footer, by pyarrow reading a part's footer (a folder
    # where a part should be: DuckDB's glob skips it, the row count does not), or as a row the
    # code cannot take (another kind's part among the capsules: its rows are all null).
    except (duckdb.Error, OSError, pa.ArrowException, LookupError, TypeError) as exc:
        for run_dir in found.run_dirs:
            cause = EvidenceStore(run_dir).read_error(exc)
            if cause is not exc:
                raise cause from exc
        raise
    for run in runs:
        for line in run.problems if warn is not None else ():
            warn(line)
    # A sweep's table carries the suite's extra columns; single runs get their own section.
    truth = None if sweeps else suite_columns([r.run_dir for r in runs])[:3]
    page = render(runs, sweeps, payload, left_out, truth)
    target = Path(out) if out is not None else (
        (found.sweeps[0] if found.sweeps else found.run_dirs[0]) / "report.html")
    return atomic_write_text(write_target(target), page)  # through a link, never over it
