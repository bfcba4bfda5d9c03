"""The report's Comparison section: with two runs or more outside a sweep, each later run
against the first, task by task (``evidence.run_pairs``: paired Δ per round and on rolling
gain, its bootstrap interval and McNemar's p), the same table ``ratchet compare`` prints. Runs
that do not pair (other seed or eval tasks) are named with the reason instead."""

from __future__ import annotations

from html import escape

from ratchet_ray.evidence.run_pairs import PAIR_HEAD, NotPaired, pair_rows, paired_runs
from ratchet_ray.report.data import RunData


def compare_section(runs: list[RunData]) -> str:
    """The section's HTML; empty with fewer than two runs."""
    if len(runs) < 2:
        return ""
    from ratchet_ray.report.sections import _table

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
