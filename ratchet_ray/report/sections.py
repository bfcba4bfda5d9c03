"""The report's sections as HTML strings (headline, curves, bank's life, skills, sweeps,
comparison).

Contracts: every function takes the loaded data (``data.RunData``, ``sweep.SweepTable``) and
returns escaped HTML; charts come from ``svg``. Nothing here reads files.
"""

from __future__ import annotations

import re
from html import escape
from typing import Any, Iterable

from ratchet_ray.arm_summary import DEFAULT_ARM, Stat, fmt_number as _f, fmt_stat as _stat
from ratchet_ray.report import svg
from ratchet_ray.report.ablation_report import report_markdown
from ratchet_ray.evidence.comparisons import Headline, Proportion
from ratchet_ray.evidence.run_pairs import PAIR_HEAD, NotPaired, pair_rows, paired_runs
from ratchet_ray.report.data import RunData, SkillRow
from ratchet_ray.report.sweep import SweepTable, arm_curves, arm_headlines, pass_series

LIFE_COLORS = {"active": "#009E73", "retired": "#D55E00", "evicted": "#999999",
               "candidate": "#E69F00", "deprecated": "#CC79A7", "restored": "#CC79A7",
               "refined": "#F0E442"}
EVENT_COLORS = {"retired": "#D55E00", "evicted": "#555555", "restored": "#0072B2",
                "reinstated": "#56B4E9", "loaded": "#E69F00", "refined": "#F0E442"}


def _card(k: str, v: str, small: bool = False, note_html: str = "") -> str:
    """A headline card: ``v`` escaped, then ``note_html`` (already escaped HTML) as is."""
    return (f'<div class="card"><div class="k">{escape(k)}</div>'
            f'<div class="v{" small" if small else ""}">{escape(v)}{note_html}</div></div>')


def _table(head: list[str], rows: Iterable[list[str]], num: set[int] = frozenset(),
           attrs: Iterable[str] | None = None) -> str:
    """A table of already-escaped cells."""
    ths = "".join(f'<th{" class=num" if i in num else ""}>{h}</th>' for i, h in enumerate(head))
    out = [f"<table><thead><tr>{ths}</tr></thead><tbody>"]
    attrs = list(attrs) if attrs is not None else None
    for k, row in enumerate(rows):
        a = attrs[k] if attrs else ""
        tds = "".join(f'<td{" class=num" if i in num else ""}>{c}</td>' for i, c in enumerate(row))
        out.append(f"<tr{a}>{tds}</tr>")
    return "".join(out) + "</tbody></table>"


# ---- headline ----------------------------------------------------------------------------------
def _models(run: RunData) -> str:
    used = sorted({f"{m['backend']}/{m['model']}" for m in run.models if m.get("backend")})
    if used:
        return ", ".join(used)
    ident = run.identity
    return f"{ident.get('backend') or '?'}/{ident.get('model') or 'default'}"


def _n_ci(p: Proportion | None) -> str:
    """`` (n=40, 95 % CI 0.20-0.48)`` after a pass@1, small."""
    if p is None or p.interval is None:
        return ""
    return (f' <span class="ci">n={p.n}, 95 % CI {p.interval.low:.2f}–'
            f'{p.interval.high:.2f}</span>')


def _gain_ci(stats: Headline | None) -> str:
    """The rolling gain's bootstrap interval over tasks, and "within noise" when it holds 0."""
    if stats is None or stats.gain_interval is None:
        return ""
    verdict = ('<b class="noise">within noise</b>' if stats.within_noise
               else '<b class="real">beyond noise</b>')
    return (f' <span class="ci">{stats.tasks} tasks, 95 % CI '
            f'{stats.gain_interval.describe(2)}: {verdict}</span>')


def headline_section(runs: list[RunData]) -> str:
    parts = ['<section id="headline"><h2>Headline</h2>']
    if len(runs) == 1:
        run = runs[0]
        m, ident, st = run.metrics, run.identity, run.stats
        parts.append('<div class="cards">' + "".join([
            _card("round-0 eval pass@1", _f(m.round0),
                  note_html=_n_ci(st.round0 if st else None)),
            _card("peak", f"{_f(m.peak)} (r{m.peak_round})" if m.peak is not None else "n/a",
                  note_html=_n_ci(st.peak if st and m.peak is not None else None)),
            _card(f"rolling gain (last {len(m.window_rounds)})", _f(m.rolling_gain, signed=True),
                  note_html=_gain_ci(st)),
            _card("rounds done", f"{m.rounds} / {ident.get('rounds_planned')}"),
            _card("rollbacks fired / decisions", f"{len(m.rollbacks)} / {m.rollback_decisions}"),
            _card("bank at end", f"{m.final_active} active / {m.final_deprecated} deprecated",
                  small=True),
        ]) + "</div>")
        parts.append(f'<p><b>{escape(ident.get("suite") or "?")}</b> · arm '
                     f'<b>{escape(str(ident.get("arm")))}</b> · seed {escape(str(ident.get("seed")))}'
                     f' · models {escape(_models(run))} · <span class="mute">stop: '
                     f'{escape(run.stop["state"])}: {escape(str(run.stop["cause"]))}</span></p>')
    else:
        rows = [[escape(a["arm"]), escape(", ".join(str(s) for s in a["seeds"])),
                 escape(", ".join(str(r) for r in a["rounds"])), _stat(a["round0"]),
                 _stat(a["peak"]), _stat(a["rolling_gain"], signed=True)]
                for a in arm_headlines(runs)]
        parts.append("<h3>Per arm (mean ± sample std over seeds)</h3>" + _table(
            ["arm", "seeds", "rounds done", "round-0 pass@1", "peak", "rolling gain"], rows,
            {3, 4, 5}))
    rows = [[escape(run.label), escape(str(run.identity.get("suite"))),
             f"{run.metrics.rounds} / {run.identity.get('rounds_planned')}",
             _f(run.metrics.round0), _f(run.metrics.peak),
             _f(run.metrics.rolling_gain, signed=True), str(len(run.metrics.rollbacks)),
             escape(_models(run)), escape(f"{run.stop['state']}: {run.stop['cause']}"),
             f'<span class="mute">{escape(str(run.run_dir))}</span>'] for run in runs]
    parts.append("<h3>Runs</h3>" + _table(
        ["run", "suite", "rounds", "round 0", "peak", "rolling gain", "rollbacks", "models",
         "stop", "run dir"], rows, {3, 4, 5, 6}))
    parts.append('<p class="note">Rolling gain = mean eval pass@1 of the last 10 rounds minus '
                 "round 0 (with fewer rounds: every round after round 0), the paper's headline "
                 "number; pass@1 counts infrastructure failures in its denominator. Intervals: "
                 "Wilson for a pass@1 over its n eval tasks; for the rolling gain, a bootstrap "
                 "over the eval tasks (each task's rounds kept together). A gain whose interval "
                 "holds 0 is within noise: with a few eval tasks, most are.</p>")
    return "".join(parts) + "</section>"


# ---- curves ------------------------------------------------------------------------------------
def _markers(run: RunData) -> list[svg.VLine]:
    out = []
    for r in run.rounds:
        if r.get("rollback_fired"):
            out.append(svg.VLine(r["round"], svg.ROLLBACK,
                                 f"rollback in round {r['round']} (bank of round "
                                 f"{r.get('restored_round')} restored)"))
            if r.get("restored_round") is not None:
                out.append(svg.VLine(r["restored_round"], svg.RESTORED,
                                     f"restored round {r['restored_round']} (rollback in round "
                                     f"{r['round']})", dash="4 3"))
    return out


def pass_chart(runs: list[RunData]) -> str:
    """Eval and train pass@1 per round: one run's lines, or per seed plus the mean band."""
    if len(runs) == 1:
        run = runs[0]
        series = [svg.Series(f"{s} pass@1", list(pass_series(run, s).items()), color=c, dash=d)
                  for s, c, d in (("eval", svg.PALETTE[0], None), ("train", svg.PALETTE[1], "5 3"))]
        return svg.line_chart(series, title=f"pass@1 per round · {run.label}", y_label="pass@1",
                              y_range=(0.0, 1.0), vlines=_markers(run), kind="pass")
    series, bands = [], []
    for k, (arm, cur) in enumerate(arm_curves(runs).items()):
        color = svg.PALETTE[k % len(svg.PALETTE)]
        for label, per in cur["seeds"].items():
            series.append(svg.Series(f"{label} eval", sorted(per["eval"].items()), color=color,
                                     width=1.0, markers=False, opacity=0.35))
        mean = cur["mean"]["eval"]
        series.append(svg.Series(f"{arm} eval mean", [(r, m) for r, m, _ in mean], color=color,
                                 width=2.4))
        bands.append(svg.Band(f"{arm} eval ± std", [(r, m - s, m + s) for r, m, s in mean],
                              color))
        tmean = cur["mean"]["train"]
        series.append(svg.Series(f"{arm} train mean", [(r, m) for r, m, _ in tmean], color=color,
                                 dash="5 3", width=1.6, markers=False))
    marks = [v for run in runs for v in _markers(run)]
    return svg.line_chart(series, title="pass@1 per round (thin: seeds; thick: mean; band: ± std)",
                          y_label="pass@1", y_range=(0.0, 1.0), bands=bands, vlines=marks,
                          kind="pass")


def bank_chart(runs: list[RunData]) -> str:
    series = []
    for k, run in enumerate(runs):
        color = svg.PALETTE[k % len(svg.PALETTE)]
        name = "" if len(runs) == 1 else f"{run.label} "
        # Steps over two rounds draw one riser at the last round: points say it better.
        steps = len(run.rounds) > 2
        other = svg.PALETTE[(k + 3) % len(svg.PALETTE)] if len(runs) == 1 else color
        for status, c, dash in (("active", color, None), ("deprecated", other, "5 3")):
            series.append(svg.Series(f"{name}{status}", [(r["round"], r[f"{status}_skills"] or 0)
                                                         for r in run.rounds], color=c, dash=dash,
                                     step=True, markers=len(run.rounds) <= 40, path=steps))
    return svg.line_chart(series, title="bank size per round (after the round)", y_label="skills",
                          kind="bank", vlines=_markers(runs[0]) if len(runs) == 1 else ())


def usage_charts(run: RunData) -> str:
    rounds = sorted({u["round"] for u in run.usage} | {r["round"] for r in run.rounds})
    roles = sorted({u["role"] for u in run.usage})
    if not rounds or not roles:
        return '<p class="mute">No LLM calls recorded.</p>'
    idx = {r: i for i, r in enumerate(rounds)}
    tokens = {role: [0.0] * len(rounds) for role in roles}
    cost = {role: [0.0] * len(rounds) for role in roles}
    for u in run.usage:
        tokens[u["role"]][idx[u["round"]]] += u["input_tokens"] + u["output_tokens"]
        cost[u["role"]][idx[u["round"]]] += u["cost_usd"] or 0.0
    out = [svg.stacked_bars(rounds, tokens, title=f"tokens per round and role · {run.label}",
                            y_label="tokens (in + out)", kind="tokens")]
    total_cost = sum(sum(v) for v in cost.values())
    if total_cost > 0:
        out.append(svg.stacked_bars(rounds, cost, title=f"cost per round and role · {run.label}",
                                    y_label="USD", kind="cost", money=True))
    else:
        out.append('<p class="mute">No cost recorded (no price known for these models: '
                   "<code>llm.prices</code>).</p>")
    total_tokens = sum(sum(v) for v in tokens.values())
    out.append(f'<p class="note">{int(total_tokens):,} tokens, ${total_cost:.4f} in all.</p>')
    return '<div class="grid2">' + "".join(out[:2]) + "</div>" + "".join(out[2:])


def curves_section(runs: list[RunData]) -> str:
    parts = ['<section id="curves"><h2>Curves</h2><div class="grid2">', pass_chart(runs),
             bank_chart(runs), '</div><p class="note">Red line: a rollback fired in that round; '
             "green dashed line: the round whose bank it restored.</p>"]
    for run in runs[:12]:
        parts.append(f"<details{' open' if len(runs) == 1 else ''}><summary>Tokens and cost · "
                     f"{escape(run.label)}</summary>{usage_charts(run)}</details>")
    return "".join(parts) + "</section>"


# ---- the bank's life ---------------------------------------------------------------------------
def life_text(s: SkillRow) -> str:
    born = "loaded" if any(e["event"] == "loaded" for e in s.events) else "born"
    text = f"{born} in round {s.born_round}" if s.born_round is not None else "no birth event"
    text += f", routed {s.routed_train} train / {s.routed_eval} eval"
    for e in s.events:
        if e["event"] in ("retired", "evicted", "refined", "restored", "reinstated"):
            why = f" ({e['reason']})" if e.get("reason") else ""
            text += f"; {e['event']} in round {e['round']}{why}"
    if s.provenance is not None:
        text += (f"; imported from {s.provenance.origin_text()}, "
                 f"{s.provenance.probation_text()}")
    return text + f"; now {s.status}"


def _lane(s: SkillRow) -> svg.Lane:
    color = LIFE_COLORS.get(s.end_event or s.status, LIFE_COLORS["active"])
    marks = [(e["round"], EVENT_COLORS[e["event"]], f"{e['event']} in round {e['round']}: "
              f"{e.get('reason') or ''}") for e in s.events if e["event"] in EVENT_COLORS]
    return svg.Lane(s.skill_id, s.born_round if s.born_round is not None else 0, s.end_round,
                    color, marks, f"{s.skill_id}: {life_text(s)}", s.skill_id)


def bank_section(runs: list[RunData]) -> str:
    parts = ['<section id="bank"><h2>The bank\'s life</h2><p class="note">One lane per skill, '
             "from the round it was born to the round it was retired (orange), evicted (grey) or "
             "deprecated by a rollback's restore (pink); green lanes are alive at the end. Dots: retirement, eviction, restoration by a "
             "rollback (blue). Hover for the reason.</p>"]
    for k, run in enumerate(runs):
        last = max([r["round"] for r in run.rounds] or [0])
        lanes = [_lane(s) for s in run.skills]
        metas = _table(["meta-skill", "added in round", "retired in round", "text"], [[
            escape(m["id"]), str(m["added_round"]), str(m["retired_round"] or "—"),
            f"<details><summary>show</summary><pre>{escape(m['text'])}</pre></details>"]
            for m in run.metaskills]) if run.metaskills else '<p class="mute">No meta-skill.</p>'
        parts.append(f"<details{' open' if k == 0 else ''}><summary>{escape(run.label)}: "
                     f"{len(run.skills)} skills</summary>"
                     + (svg.timeline(lanes, last, title=f"skills of {run.label}")
                        if lanes else '<p class="mute">No skill yet.</p>')
                     + f"<h3>Meta-skill versions</h3>{metas}</details>")
    return "".join(parts) + "</section>"


# ---- skills table ------------------------------------------------------------------------------
def _ci(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f' <span class="mute">[{ci[0]:+.2f}, {ci[1]:+.2f}]</span>'


def _bypass(s: SkillRow) -> str:
    parts = []
    if s.rounds_unrouted is not None:
        parts.append(f'<span class="pill deprecated">dead weight</span> {s.rounds_unrouted} '
                     "rounds unrouted")
    if s.ignored:
        parts.append(f'<span class="pill deprecated">ignored</span> {s.probe_similarity:.2f}')
    elif s.probe_similarity is not None:
        parts.append(f'<span class="mute">probe similarity {s.probe_similarity:.2f}</span>')
    return "<br>".join(parts) or "—"


PROVENANCE_NOTE = ("Origin: <i>native</i>, or the skill pack it was imported from (hash "
                   "prefix), the run and model that exported it; probation: an import's trials "
                   "here against the floor (<code>bank.probation</code>), the round it was "
                   "promoted, or the round it was retired or evicted still on probation. Its "
                   "record in the source run is never evidence here. ")


def _origin_cells(s: SkillRow) -> tuple[str, str]:
    """(origin, probation) cells: ``native`` / ``—`` for a skill the run made itself."""
    p = s.provenance
    if p is None:
        return "native", "—"
    state = p.state.replace(" ", "-")
    return (f'<span title="{escape(p.origin_text())}">{escape(p.origin_text())}</span>',
            f'<span class="probation {escape(state)}">{escape(p.probation_text())}</span>')


def _cheat_rate(s: SkillRow) -> str:
    """``1.00 (2 / 2)``: impossible twins passed / graded; "—" without twins."""
    if not s.twins:
        return "—"
    text = f"{s.twin_passes / s.twins:.2f} ({s.twin_passes} / {s.twins})"
    return f'<b class="cheat">{text}</b>' if s.twin_passes else text


# Columns of the skills table that only some runs fill (counterfactual probes, tampering, the
# cheat probe, bypass audits): shown only when a row has something in them.
OPTIONAL_SKILL_COLUMNS = {"origin": {"native"}, "probation": {"—"},
                          "probe pairs": {"0"}, "ĉ_cf [95% Wilson]": {"—"},
                          "tampering (train / eval)": {"0 / 0"},
                          "cheat rate (twins passed / graded)": {"—"}, "silent bypass": {"—"}}


def _without_empty(head: list[str], rows: list[list[str]], numeric: set[int],
                   optional: dict[str, set[str]]) -> tuple[list[str], list[list[str]], set[int]]:
    """``head`` and ``rows`` without the ``optional`` columns whose every cell is one of its
    empty values; ``numeric`` re-indexed to the columns kept."""
    keep = [i for i, name in enumerate(head)
            if name not in optional or any(row[i] not in optional[name] for row in rows)]
    return ([head[i] for i in keep], [[row[i] for i in keep] for row in rows],
            {k for k, i in enumerate(keep) if i in numeric})


def skills_section(runs: list[RunData]) -> str:
    head = ["run", "skill", "status", "origin", "probation", "born", "ended", "trials",
            "ĉ [95% Wilson]", "probe pairs",
            "ĉ_cf [95% Wilson]", "routed train", "routed eval", "injection ≈ tokens",
            "tampering (train / eval)", "cheat rate (twins passed / graded)", "silent bypass"]
    rows, attrs = [], []
    for run in runs:
        for s in run.skills:
            ended = (f"{s.end_event} r{s.end_round}" if s.end_event else "—")
            rows.append([
                escape(run.label), f"<b>{escape(s.skill_id)}</b>",
                f'<span class="pill {escape(s.status)}">{escape(s.status)}</span>',
                *_origin_cells(s), str(s.born_round if s.born_round is not None else "—"), escape(ended),
                str(s.trials), (_f(s.c_hat, signed=True) + _ci(s.c_hat_ci)) if s.trials else "—",
                str(s.cf_pairs), (_f(s.c_cf, signed=True) + _ci(s.c_cf_ci)) if s.cf_pairs else "—",
                str(s.routed_train), str(s.routed_eval),
                str(s.injection_tokens) if s.injection_tokens is not None else "—",
                f"{s.tampering_train} / {s.tampering_eval}", _cheat_rate(s), _bypass(s)])
            attrs.append(f' class="click" data-run="{escape(run.label)}" '
                         f'data-skill="{escape(s.skill_id)}" data-status="{escape(s.status)}"')
    note = ('<p class="note">ĉ = (passes − failures) / trials over the train capsules routed to the '
            "skill (infrastructure failures excluded), the Curator's score; ĉ_cf = pass(skill) − "
            "pass(NONE) over counterfactual probe pairs (<code>curator.counterfactual</code>). "
            "Injection ≈ tokens: the guidance's characters / 4. Tampering: routed capsules "
            "graded as an attack on the grader. Cheat rate: impossible twins (a routed train "
            "attempt graded again against expectations no correct answer meets, "
            "<code>cheat_probe</code>) it passed / graded; any pass is cheating, and the "
            "Curator retires the skill for it. Silent bypass: <i>dead weight</i> = active and "
            "never routed for <code>curator.dead_weight_rounds</code> rounds; <i>ignored</i> = "
            "its probe pairs' outputs with and without it are near-identical (mean similarity "
            "shown). " + (PROVENANCE_NOTE if any(s.provenance for r in runs for s in r.skills)
                          else "") + "Click a row for its YAML and its capsules.</p>")
    head, rows, numeric = _without_empty(head, rows, {7, 8, 9, 10, 11, 12, 13},
                                         OPTIONAL_SKILL_COLUMNS)
    table = _table(head, rows, numeric, attrs) if rows else \
        '<p class="mute">No skill yet.</p>'
    return (f'<section id="skills"><h2>Skills</h2>{note}{_problems_note(runs)}<div '
            f'id="skill-detail" class="detail" hidden></div>{table}</section>')


def _problems_note(runs: list[RunData]) -> str:
    """The run's files this page cannot show whole (``RunData.problems``), each with its fix."""
    lines = [f"<li>{escape(run.label)}: {escape(line)}</li>" for run in runs
             for line in run.problems]
    return ("" if not lines else '<div class="note warn"><b>Files of the run not shown whole</b>'
            f"<ul>{''.join(lines)}</ul></div>")


# ---- sweeps ------------------------------------------------------------------------------------
def _md_cell(text: str) -> str:
    """One Markdown table cell as HTML: escaped, its ``**bold**`` spans as ``<strong>``."""
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", escape(text))


def _md_tables_to_html(md: str) -> str:
    """The Markdown tables (and headings) of ``ablation_report.report_markdown`` as HTML tables."""
    out, table = [], []

    def flush() -> None:
        if table:
            head, body = table[0], table[2:]
            # Wide tables scroll inside their section instead of overflowing it.
            out.append('<div class="scroll">' + _table(
                [_md_cell(c) for c in head], [[_md_cell(c) for c in r] for r in body])
                + "</div>")
            table.clear()

    for line in md.splitlines():
        if line.startswith("|"):
            table.append([c.strip() for c in line.strip().strip("|").split("|")])
            continue
        flush()
        if line.startswith("## "):
            out.append(f"<h3>{escape(line[3:])}</h3>")
        elif line.startswith("- "):
            out.append(f"<div>{escape(line)}</div>")
        elif line and not line.startswith("# "):
            out.append(f'<p class="note">{escape(line)}</p>')
    flush()
    return "".join(out)


def _suite_table(title: str, extra: list[dict[str, Any]], columns: Iterable[str]) -> str:
    """A suite's extra per-arm columns (mean ± std over seeds) under ``title``."""
    cols = list(columns)
    rows = [[escape(r["arm"]), str(r["seeds"])]
            + [_stat(Stat(r[f"{c}_mean"], r[f"{c}_std"], 0), signed=c.endswith("gain"),
                     missing="–") for c in cols] for r in extra]
    return f"<h3>{escape(title)}</h3>" + _table(
        ["arm", "seeds"] + [escape(c.replace("_", " ")) for c in cols], rows)


def truth_section(title: str, extra: list[dict[str, Any]], columns: Iterable[str]) -> str:
    """The suite's extra columns for runs that are not a sweep (a single sim run's truth)."""
    return (f'<section id="truth"><h2>Truth</h2><p class="note">What the suite knows beyond the '
            "evidence (the sim world's true pass rates and which skills truly help), per arm "
            f"over these runs.</p>{_suite_table(title, extra, columns)}</section>")


def sweep_section(sweeps: list[SweepTable], runs: list[RunData]) -> str:
    parts = ['<section id="sweeps"><h2>Sweeps</h2>']
    for table in sweeps:
        parts.append(f"<h3>{escape(str(table.root))}</h3>")
        parts.append(_md_tables_to_html(report_markdown(table.arms, table.runs, table.root)))
        if table.extra is not None:
            parts.append(_suite_table(table.extra_title, table.extra, table.extra_columns))
        elif table.extra_error:
            parts.append('<p class="note">the suite\'s extra sweep columns are unavailable: '
                         f'{escape(table.extra_error)}</p>')
        mine = [r for r in runs if str(r.run_dir).startswith(str(table.root.resolve()))
                or str(r.run_dir).startswith(str(table.root))]
        curves = arm_curves(mine)
        base = curves.get(DEFAULT_ARM)
        charts = []
        for arm, cur in curves.items():
            if arm == DEFAULT_ARM and len(curves) > 1:
                continue
            pairs = [(arm, cur, svg.PALETTE[0])]
            if base is not None and arm != DEFAULT_ARM:
                pairs.insert(0, (DEFAULT_ARM, base, "#777777"))
            series, bands = [], []
            for name, c, color in pairs:
                mean = c["mean"]["eval"]
                series.append(svg.Series(f"{name} eval", [(r, m) for r, m, _ in mean],
                                         color=color, markers=False))
                bands.append(svg.Band(f"{name} ± std", [(r, m - s, m + s) for r, m, s in mean],
                                      color))
            charts.append(svg.line_chart(series, title=f"{arm} vs Default: eval pass@1 (mean "
                                         "over seeds)", y_label="pass@1", y_range=(0.0, 1.0),
                                         bands=bands, kind="sweep-arm", height=220))
        parts.append('<div class="grid2">' + "".join(charts) + "</div>")
    return "".join(parts) + "</section>"


# ---- comparison --------------------------------------------------------------------------------
def compare_section(runs: list[RunData]) -> str:
    """With two runs or more outside a sweep, each later run against the first, task by task
    (``evidence.run_pairs``: paired Δ per round and on rolling gain, its bootstrap interval and
    McNemar's p), the same table ``ratchet compare`` prints; runs that do not pair (other seed
    or eval tasks) are named with the reason instead. Empty with fewer than two runs."""
    if len(runs) < 2:
        return ""
    parts = ['<section id="compare"><h2>Comparison</h2><p class="note">Each run against '
             f"{escape(runs[0].run_dir.name)}, paired by task (the same seed and eval tasks): "
             "Δ = other - reference with a 95% bootstrap interval over tasks, +/- the tasks only "
             "one of them passed, and McNemar's exact p.</p>"]
    for other in runs[1:]:
        try:
            pair = paired_runs(runs[0].run_dir, other.run_dir)
        except NotPaired as exc:
            parts.append(f'<p class="note">{escape(str(exc))}</p>')
            continue
        parts.append(f"<h3>{escape(pair.other)} vs {escape(pair.reference)} (seed "
                     f"{pair.seed})</h3>")
        parts.append('<div class="scroll">' + _table(
            [escape(h) for h in PAIR_HEAD],
            [[escape(c) for c in row] for row in pair_rows(pair)], num=set(range(1, 8)))
            + "</div>")
    return "".join(parts) + "</section>"
