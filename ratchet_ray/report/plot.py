"""``ratchet plot RUN``: the learning curve and headline metrics of one run.

Contracts:
- Input: a run dir or its ``loop.json``. Output, beside ``loop.json``: ``loop_curve.png`` (eval
  and train pass@1 per round, ACTIVE and deprecated bank size, rollback markers) and
  ``loop_summary.md`` (round 0, peak, rolling gain); a symbolic link there (or as the folder)
  is written through and kept, a loop of them is ``OSError(ELOOP)`` (``fsutil.write_target``).
- The metrics are ``ratchet_ray.metrics``' and the points ``report.data.round_rows``, as in
  ``ratchet report``; integer round ticks, the skill axis from 0.
- Rolling gain: mean eval pass@1 of the last ``window`` (10) rounds minus round 0's; with fewer
  rounds every round after round 0 (the summary says so).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ratchet_ray.metrics import ROLLING_WINDOW, LoopMetrics, load_loop, loop_metrics
from ratchet_ray.storage.fsutil import atomic_write_text, atomic_write_with, write_target

CURVE_FILE = "loop_curve.png"
SUMMARY_MD_FILE = "loop_summary.md"


def _summary_markdown(data: dict[str, Any], rows: list[dict[str, Any]], m: LoopMetrics,
                      window: int, setting: str | None) -> str:
    from ratchet_ray.arm_summary import fmt_number as fmt

    note = "" if len(m.window_rounds) >= window else (
        f" (only {len(m.window_rounds)} round(s) after round 0; the window is shorter "
        f"than {window})")
    lines = [
        f"# {data.get('run_id', 'run')}" + (f": {setting}" if setting else ""),
        "",
        f"suite `{data.get('suite')}`, arm `{data.get('arm')}`, seed {data.get('seed')}, "
        f"{m.rounds} of {data.get('rounds_planned')} rounds finished",
        "",
        "| metric | value |",
        "|---|---|",
        f"| round-0 eval pass@1 | {fmt(m.round0)} |",
        f"| peak eval pass@1 | {fmt(m.peak)} (round {m.peak_round}) |",
        f"| mean eval pass@1, last {window} rounds | {fmt(m.rolling_mean)} |",
        f"| rolling gain | {fmt(m.rolling_gain)}{note} |",
        f"| rollbacks (fired / decisions) | {len(m.rollbacks)} / {m.rollback_decisions} "
        f"{m.rollbacks if m.rollbacks else ''} |",
        f"| final bank | {m.final_active} active, {m.final_deprecated} deprecated |",
        "",
        "| round | eval pass@1 | train pass@1 | active | deprecated | created | retired "
        "| rollback |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['round']} | {fmt(r.get('eval_pass_at_1'))} | {fmt(r.get('train_pass_at_1'))} | "
            f"{r.get('active_skills') or 0} | {r.get('deprecated_skills') or 0} | "
            f"{len(r.get('skills_created') or [])} | {len(r.get('skills_retired') or [])} | "
            f"{'restored round %s' % r.get('restored_round') if r.get('rollback_fired') else ''} |")
    return "\n".join(lines) + "\n"


def _draw(rows: list[dict[str, Any]], m: LoopMetrics, title: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    rounds = [r["round"] for r in rows]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    for key, label, style in (("eval_pass_at_1", "eval pass@1", "o-"),
                              ("train_pass_at_1", "train pass@1", "s--")):
        pts = [(r["round"], r[key]) for r in rows if r.get(key) is not None]
        if pts:
            top.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label, markersize=4)
    if m.round0 is not None:
        top.axhline(m.round0, color="grey", linewidth=0.8, linestyle=":", label="round 0")
    for i, rb in enumerate(m.rollbacks):
        for ax in (top, bottom):
            ax.axvline(rb, color="red", alpha=0.6, linewidth=1.2,
                       label="rollback" if (i == 0 and ax is top) else None)
    top.set_ylabel("pass@1")
    top.set_ylim(-0.02, 1.02)
    top.legend(loc="best", fontsize=8)
    top.set_title(title, fontsize=10)
    active = [r.get("active_skills") or 0 for r in rows]
    deprecated = [r.get("deprecated_skills") or 0 for r in rows]
    bottom.step(rounds, active, where="mid", label="ACTIVE")
    bottom.step(rounds, deprecated, where="mid", label="deprecated", linestyle="--")
    bottom.set_ylabel("skills")
    bottom.set_xlabel("round")
    # Rounds are whole numbers; bank sizes are counts: no 2.5 round, no negative skill.
    from matplotlib.ticker import MaxNLocator

    bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.yaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.set_ylim(0, max(active + deprecated + [1]) * 1.1 + 0.5)
    bottom.legend(loc="best", fontsize=8)
    fig.tight_layout()
    try:  # atomic: a full disk leaves the previous curve (or none), never a torn or empty PNG
        atomic_write_with(out, lambda handle: fig.savefig(handle, dpi=120, format="png"))
    finally:
        plt.close(fig)


def plot_run(path: str | Path, window: int = ROLLING_WINDOW,
             out_dir: str | Path | None = None) -> tuple[Path, Path, LoopMetrics]:
    """Write ``loop_curve.png`` and ``loop_summary.md`` next to the run's ``loop.json``, or into
    ``out_dir`` (created) when given."""
    from ratchet_ray.report.data import identity, round_rows

    loop_file, data = load_loop(Path(path))
    rows = round_rows(loop_file.parent)
    if not rows:
        raise ValueError(f"{loop_file} has no finished rounds yet; plot again after round 0")
    metrics = loop_metrics(rows, window)
    # Through symbolic links (the folder's, the files'), never over them (fsutil.write_target).
    folder = write_target(Path(out_dir) if out_dir is not None else loop_file.parent)
    folder.mkdir(parents=True, exist_ok=True)
    png = write_target(folder / CURVE_FILE)
    md = write_target(folder / SUMMARY_MD_FILE)
    _draw(rows, metrics, data.get("run_id", loop_file.parent.name), png)
    atomic_write_text(md, _summary_markdown(data, rows, metrics, window,
                                            identity(loop_file.parent).get("setting")))
    return png, md, metrics
