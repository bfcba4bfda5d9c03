"""The sim ablation table of ``docs/ablations.md``, rendered from a sweep folder, with every
arm-seed's truth checked against the bank the run left behind.

``python -m ratchet_ray.suites.sim.ablation_table SWEEP [--doc docs/ablations.md] [--vs-paper]``
prints the table of a ``python -m jobs.ablations sim`` sweep (Markdown); ``--doc`` replaces the
text between ``BEGIN`` and ``END`` in that page with it; ``--vs-paper`` adds ``vs_paper``'s table.

Contracts:
- ``bank_disagreements(run_dir, truth, result)``: what the truth report and the ablation numbers
  (``arm_summary.run_result``) say about the run's bank that its live files do not: each skill's
  status, the ACTIVE count (files = truth = ``loop.json``'s last round), and, when every skill
  was created by the run (no user bank), created - deprecated = ACTIVE and the deprecations by
  last cause. Empty when they agree.
- ``sweep_rows(sweep_dir)``: one ``ArmSeed`` per *complete* sim run (every planned round done),
  sorted by arm then seed; incomplete and damaged runs are left out (never averaged) and,
  with ``left_out``, listed there (``main`` prints them before the table).
- ``render(rows)``: the Markdown table under a title naming the runs' setting, per arm mean ±
  sample std over its seeds (``n=k`` where only k seeds define a number), the Default first.
  "vs Default" is paired by seed (the arm's rolling gain minus the Default's on the same world);
  "true gain" is the truth report's rolling gain of the expected pass@1 (no grading noise).
- ``main`` exits 1, naming every arm-seed whose truth disagrees with its bank, before anything
  is printed or written.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import click

from ratchet_ray.arm_summary import (ARM_LABELS, DEFAULT_ARM, RunResult, arm_sort_key,
                                     find_run_dirs, fmt_stat, mean_std, paired_cells,
                                     paired_with_default, run_result)
from ratchet_ray.bank.skill_io import load_skill_folder
from ratchet_ray.evidence.comparisons import PairedComparison
from ratchet_ray.evidence.queries import DEPRECATION_CAUSES
from ratchet_ray.metrics import load_loop
from ratchet_ray.suites.sim.report import NO_EFFECT_IN_SIM, headline
from ratchet_ray.suites.sim.truth import NotASimRun, RunTruth, analyze_run

BEGIN = "<!-- sim-ablation-table:begin (python -m ratchet_ray.suites.sim.ablation_table) -->"
END = "<!-- sim-ablation-table:end -->"


@dataclass(frozen=True)
class ArmSeed:
    """One complete sim run: the ablation numbers, the truth's headline and the final pass@1."""

    arm: str
    seed: int | None
    result: RunResult
    head: dict[str, Any]
    final: float | None
    disagreements: list[str]


def bank_disagreements(run_dir: Path, truth: RunTruth, result: RunResult) -> list[str]:
    """What the truth / ablation numbers say about the bank that its files do not (contract)."""
    folder = run_dir / "skills"
    live = {s.id: s.status.value for s in load_skill_folder(folder)} if folder.is_dir() else {}
    told = {s.skill_id: s.status for s in truth.skills}
    found = [f"skill {skill_id}: truth says {told.get(skill_id)}, bank file says "
             f"{live.get(skill_id)}" for skill_id in sorted(set(live) | set(told))
             if live.get(skill_id) != told.get(skill_id)]
    _, loop = load_loop(run_dir)
    rounds = loop.get("rounds") or [{}]
    counts = {"bank files": sum(1 for s in live.values() if s == "active"),
              "truth": truth.active_at_end(),
              "loop.json": rounds[-1].get("active_skills"),
              "ablation table": result.active_at_end}
    if len(set(counts.values())) > 1:
        found.append("ACTIVE at end differs: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if len(told) != result.skills_created:  # a loaded user bank: its skills are not "created"
        return found
    if result.skills_created - result.skills_deprecated != result.active_at_end:
        found.append(f"created {result.skills_created} - deprecated {result.skills_deprecated} "
                     f"!= active {result.active_at_end}")
    by_cause = Counter(s.deprecated_by for s in truth.skills if s.deprecated_by is not None)
    if sum(by_cause.values()) != result.skills_deprecated:
        found.append(f"deprecated: ablation table {result.skills_deprecated}, truth "
                     f"{sum(by_cause.values())} ({dict(by_cause)})")
    for cause in DEPRECATION_CAUSES.values():  # each cause the ablation table splits out
        ours = getattr(result, f"deprecated_{cause}", None)
        if ours is not None and ours != by_cause.get(cause, 0):
            found.append(f"deprecated by {cause}: ablation table {ours}, truth "
                         f"{by_cause.get(cause, 0)}")
    return found


def _final_pass(run_dir: Path) -> float | None:
    _, loop = load_loop(run_dir)
    evals = [r for r in loop.get("rounds", []) if r.get("eval_pass_at_1") is not None]
    return max(evals, key=lambda r: r["round"])["eval_pass_at_1"] if evals else None


def sweep_rows(sweep_dir: str | Path, left_out: list[str] | None = None) -> list[ArmSeed]:
    """Every complete sim run below ``sweep_dir``, checked against its bank (contract); each run
    left out for any reason but being another suite's goes to ``left_out`` as ``"<dir>: why"``."""
    rows = []
    for run_dir in find_run_dirs(sweep_dir):
        try:
            truth = analyze_run(run_dir)
            result = run_result(run_dir)
        except NotASimRun:
            continue
        except (ValueError, OSError) as exc:  # a damaged run: said, never silently dropped
            (left_out if left_out is not None else []).append(f"{run_dir}: {exc}")
            continue
        if not result.complete:
            (left_out if left_out is not None else []).append(
                f"{run_dir}: incomplete ({result.rounds_done} of {result.rounds_planned} rounds)")
            continue
        rows.append(ArmSeed(result.arm, result.seed, result, headline(truth),
                            _final_pass(run_dir), bank_disagreements(run_dir, truth, result)))
    return sorted(rows, key=lambda r: (arm_sort_key(r.arm), r.seed is None, r.seed))


def _stat(values: Iterable[float | None], seeds: int, digits: int = 3,
          signed: bool = False) -> str:
    stat = mean_std(values)
    text = fmt_stat(stat, digits, signed, missing="–")
    return text + (f" (n={stat.n})" if stat.mean is not None and stat.n < seeds else "")


COLUMNS = ("arm", "change", "seeds", "round 0", "peak", "final", "rolling gain", "vs Default",
           "paired Δ [95 % CI]", "p", "true gain", "created", "deprecated (retired / evicted / rolled back)", "active at end",
           "engagement", "harmful written", "retire precision", "retire recall",
           "harmful gone", "helpful kept")


def _arm_cells(arm: str, group: list[ArmSeed], base: dict[int | None, float | None],
               comparison: PairedComparison | None) -> list[str]:
    n = len(group)
    res = [g.result for g in group]
    heads = [g.head for g in group]
    paired = [g.result.rolling_gain - base[g.seed] for g in group
              if g.result.rolling_gain is not None and base.get(g.seed) is not None]
    vs = "–" if arm == DEFAULT_ARM else _stat(paired, n, signed=True)
    true_gain = _stat((h["true_rolling_gain"] for h in heads), n, signed=True)
    causes = " / ".join(f"{mean_std(getattr(r, f'deprecated_{c}') for r in res).mean:.1f}"
                        for c in ("retired", "evicted", "rollback"))
    label = ARM_LABELS.get(arm, arm) + (" (not modelled in sim)" if arm in NO_EFFECT_IN_SIM else "")
    return [arm, label, ", ".join(str(g.seed) for g in group),
            _stat((r.round0 for r in res), n), _stat((r.peak for r in res), n),
            _stat((g.final for g in group), n),
            _stat((r.rolling_gain for r in res), n, signed=True),
            vs, *(paired_cells(comparison) if comparison is not None else ("–", "–")),
            true_gain,
            _stat((r.skills_created for r in res), n, 1),
            f"{_stat((r.skills_deprecated for r in res), n, 1)} ({causes})",
            _stat((r.active_at_end for r in res), n, 1),
            _stat((r.router_engagement for r in res), n, 2),
            _stat((h["harmful"] for h in heads), n, 1),
            _stat((h["precision"] for h in heads), n, 2), _stat((h["recall"] for h in heads), n, 2),
            _stat((h["harmful_gone"] for h in heads), n, 2),
            _stat((h["helpful_kept"] for h in heads), n, 2)]


def render(rows: list[ArmSeed]) -> str:
    """The Markdown table (contract); the line under it states the bank check's scope."""
    groups: dict[str, list[ArmSeed]] = {}
    for row in rows:
        groups.setdefault(row.arm, []).append(row)
    base = {g.seed: g.result.rolling_gain for g in groups.get(DEFAULT_ARM, [])}
    comparisons = paired_with_default({arm: [g.result for g in group]
                                       for arm, group in groups.items()})
    from ratchet_ray.settings.setting_label import combined

    lines = [f"**Ablations on {combined(r.result.setting for r in rows)}**", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for arm in sorted(groups, key=arm_sort_key):
        cells = _arm_cells(arm, groups[arm], base, comparisons.get(arm))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Every one of the {len(rows)} arm-seeds above was checked against its live "
              "bank before the table was rendered: the truth report's status of each skill, the "
              "ACTIVE count (bank files = truth = `loop.json` = this table), created - deprecated "
              "= active, and the deprecations by last cause all agree. *Paired Δ* is the "
              "rolling-gain difference from the Default over the (seed, round, eval task) pairs, "
              "with a bootstrap interval over seeds and tasks (**bold**: it excludes 0, a real "
              "difference); *p* is the exact McNemar test on the discordant pairs of the window "
              "rounds."]
    return "\n".join(lines)


def replace_block(text: str, table: str) -> str:
    """``text`` with the lines between ``BEGIN`` and ``END`` replaced by ``table``."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError(f"the page must hold one {BEGIN!r} line and one {END!r} line after it, "
                         "around the table to replace")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table}\n{END}{tail}"


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("sweep", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--doc", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Page whose table (between the sim-ablation-table markers) is replaced.")
@click.option("--vs-paper", is_flag=True,
              help="Add the predicted-vs-paper table (the paper's MBPP+ A1-A8 rolling gains).")
def main(sweep: Path, doc: Path | None, vs_paper: bool) -> None:
    """Render SWEEP's sim ablation table, every arm-seed checked against its live bank."""
    left_out: list[str] = []
    rows = sweep_rows(sweep, left_out)
    for line in left_out:
        click.echo(f"left out: {line}", err=True)
    if not rows:
        raise click.ClickException(f"no complete sim run under {sweep}: pass the --out of a "
                                   "finished `python -m jobs.ablations sim` sweep")
    bad = [(f"{r.arm}_s{r.seed}", d) for r in rows for d in r.disagreements]
    if bad:
        for name, what in bad:
            click.echo(f"{name}: {what}", err=True)
        raise SystemExit(f"{len({n for n, _ in bad})} arm-seed(s) disagree with their live bank; "
                         "no table written")
    table = render(rows)
    if vs_paper:
        from ratchet_ray.suites.sim.vs_paper import render_vs_paper

        table += ("\n\nThis sweep against the paper's MBPP+ table, rolling gain; verdicts at 2 "
                  "standard errors; basis: what the world's number rests on (fitted on the "
                  "Default row, a prediction, a mechanism added for the arm, or not modelled: "
                  "`suites/sim/vs_paper.py`):\n\n"
                  + render_vs_paper(rows))
    if doc is not None:
        doc.write_text(replace_block(doc.read_text(), table))
        click.echo(f"{doc}: table replaced ({len(rows)} arm-seeds)", err=True)
    click.echo(table)


if __name__ == "__main__":
    main(prog_name="python -m ratchet_ray.suites.sim.ablation_table")
