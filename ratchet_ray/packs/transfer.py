"""Transfer of a skill pack, measured on the simulated world (``ratchet sim-transfer``).

Contracts:
- ``transfer_row(run_dir, imported, condition, arm)`` reads one finished run of a simulated world
  (``suites.sim.truth.analyze_run``: the world's truth of every skill) and returns its row:
  round-0 eval pass@1, the rolling mean (the level a bank reaches: the imports' round-0 help
  is in it) and the rolling gain over round 0 (``metrics.loop_metrics``, the paper's window),
  the imported skills (ids in ``imported``), those still ACTIVE at the end (``imported_kept``),
  how many of them are harmful in this world, the harmful ones still ACTIVE at the end
  (imported, and in all), and ``settled_round``: the
  last round in which a skill was retired or evicted (the bank sheds nothing after it; None:
  it never shed one).
- ``transfer_table(rows)`` renders the rows as one Markdown table, in the order given.
Only reads run dirs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.metrics import loop_metrics
from ratchet_ray.report.data import round_rows, skill_events
from ratchet_ray.suites.sim.truth import analyze_run

COLUMNS = ("condition", "arm", "round0", "rolling_mean", "rolling_gain", "imported",
           "imported_kept", "imported_harmful", "imported_harmful_kept", "harmful_kept",
           "settled_round")
HARMFUL = "harmful"


def transfer_row(run_dir: str | Path, imported: Iterable[str], condition: str, arm: str
                 ) -> dict[str, Any]:
    """One run's transfer numbers (module contract)."""
    run_dir, imported = Path(run_dir), set(imported)
    metrics = loop_metrics(round_rows(run_dir))
    truth = analyze_run(run_dir)
    harmful = [s for s in truth.skills if s.effect_class == HARMFUL]
    with EvidenceStore(run_dir).connect() as con:
        shed = max((e["round"] for e in skill_events(con)
                    if e["event"] in ("retired", "evicted")), default=None)
    ids = {s.skill_id for s in truth.skills}
    return {
        "condition": condition, "arm": arm,
        "round0": None if metrics.round0 is None else round(metrics.round0, 3),
        "rolling_mean": None if metrics.rolling_mean is None else round(metrics.rolling_mean, 3),
        "rolling_gain": None if metrics.rolling_gain is None else round(metrics.rolling_gain, 3),
        "imported": len(imported & ids),
        "imported_kept": sum(s.skill_id in imported and s.status == "active"
                             for s in truth.skills),
        "imported_harmful": sum(s.skill_id in imported for s in harmful),
        "imported_harmful_kept": sum(s.skill_id in imported and s.status == "active"
                                     for s in harmful),
        "harmful_kept": sum(s.status == "active" for s in harmful),
        "settled_round": None if shed is None else int(shed),
    }


def transfer_table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (module contract)."""
    def cell(column: str, value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:+.3f}" if column == "rolling_gain" else f"{value:.3f}"
        return str(value)

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(c, r[c]) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines) + "\n"
