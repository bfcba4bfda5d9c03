"""``ratchet skill transfer SUITE``: a skill pack's transfer measured on any suite, and the
measurement that ``ratchet sim-transfer`` (``suites/sim/cli.py``) shares (docs/skill-packs.md).

Contracts:
- ``TransferPlan``: the suite, its ``--config`` files, the overrides of every run (``common``:
  the ``--set``'s and ``--llm``, applied last), A's own (``a``: rounds, seed, subset) and the
  B worlds (``conditions``: name and overrides, e.g. another seed and subset), B's rounds.
- ``check_plan(plan)``: every run's config loads and is startable on this machine
  (``loop.entry.startable_problems``: the backend's model and packages, a subset file;
  ``run_config.flags.loop_size_problems``), else ``click.ClickException``, one line per problem,
  before any run dir or Ray exists.
- ``measure(out, plan, judge, pack=None, allow_other_suite=False)`` runs A through the loop's
  normal entry (``loop.driver.run_loop``, as ``ratchet run``), exports its ACTIVE skills
  (``packs.export``) to ``out/pack`` (or takes ``pack``: no A), then per B world the three
  ``TRANSFER_ARMS`` (an empty bank; the pack on probation; the pack with ``bank.probation:
  false``) in series, and returns ``(manifest, rows, records)``: the pack's manifest, one row
  per B run (``packs.transfer.transfer_row`` under ``judge``) and what each pack arm measured of
  the imports (``imported_records``). A run that fails is one ``ClickException`` line.
- ``skill transfer`` writes ``OUT/seed_<s>/`` per seed of A (``--seed``, repeatable; B's seed is
  A's plus ``--b-seed-offset``) and, after every seed, ``OUT/transfer.md`` (the rows, a summary
  over seeds, the imports' records) and ``OUT/transfer.json``; it prints the table at the end.
  It refuses, in one line and before anything runs: an existing ``--out``, a ``--pack`` of
  another suite (unless ``--allow-other-suite``), a config that cannot start (a missing model).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ratchet_ray.cli.options import config_option, llm_option, set_option
from ratchet_ray.loop.entry import SUITE

if TYPE_CHECKING:  # the evidence and report modules load with the command, not with --help
    from ratchet_ray.packs.transfer import Judge

TRANSFER_ARMS = (("empty bank", ()), ("pack, probation", ("bank.probation=true",)),
                 ("pack, no probation", ("bank.probation=false",)))
"""The three runs B of each world: name and the overrides beside the pack (none: no pack)."""


@dataclass(frozen=True)
class TransferPlan:
    """What runs A and B are (module contract)."""

    suite: str
    config_files: tuple[Path, ...] = ()
    common: tuple[str, ...] = ()
    a: tuple[str, ...] = ()
    conditions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    rounds_b: int = 1

    def config(self, results_dir: Path, *extra: str):
        """The config of one run: the suite's files, then ``extra``, then ``common``."""
        from ratchet_ray.run_config.files import ConfigError, layered_files, load_config

        try:
            return load_config(layered_files(self.suite, self.config_files),
                               [f"results_dir={results_dir}", *extra, *self.common])
        except ConfigError as exc:
            raise click.ClickException(str(exc)) from exc

    def b_runs(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """(condition, arm, overrides without the pack) of every run B, in run order."""
        return [(condition, arm, (f"rounds={self.rounds_b}", *world, *settings))
                for condition, world in self.conditions for arm, settings in TRANSFER_ARMS]


def check_plan(plan: TransferPlan, out: Path) -> None:
    """Refuse a plan whose runs cannot start here (module contract)."""
    from ratchet_ray.loop.entry import startable_problems
    from ratchet_ray.run_config.flags import loop_size_problems

    configs = [plan.config(out / "a", *plan.a)]
    configs += [plan.config(out / "b", *extra) for _c, _a, extra in plan.b_runs()]
    problems: list[str] = []
    for config in configs:
        problems += [p for p in [*startable_problems(config), *loop_size_problems(config)]
                     if p not in problems]
    if problems:
        raise click.ClickException("; ".join(problems))


def _run(config) -> Path:
    from ratchet_ray.loop.breaker import RunStopped
    from ratchet_ray.loop.driver import RunSetupError, run_loop

    try:
        return run_loop(config, show_progress=False)
    except (RunSetupError, RunStopped) as exc:
        raise click.ClickException(f"{config.results_dir}: {exc}") from exc


def measure(out: Path, plan: TransferPlan, judge: Judge, pack: Path | None = None,
            allow_other_suite: bool = False
            ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """Run A (unless ``pack``), export its pack, run every B (module contract)."""
    from ratchet_ray.bank.pack_format import read_manifest
    from ratchet_ray.packs.export import export_pack
    from ratchet_ray.packs.transfer import imported_records, transfer_row

    if pack is None:
        a = _run(plan.config(out / "a", *plan.a))
        click.echo(f"run A: {a}", err=True)
        pack = out / "pack"
        manifest = export_pack(a, pack)
    else:
        manifest = read_manifest(pack)
    ids = [e["id"] for e in manifest["skills"]]
    carried = (f"bank.pack={pack.resolve()}",
               *(("bank.allow_other_suite=true",) if allow_other_suite else ()))
    rows, records = [], []
    for k, (condition, arm, extra) in enumerate(plan.b_runs()):
        with_pack = arm != TRANSFER_ARMS[0][0]
        run_dir = _run(plan.config(out / f"b{k}", *extra, *(carried if with_pack else ())))
        rows.append(transfer_row(run_dir, ids if with_pack else (), condition, arm, judge))
        if with_pack:
            records += [{"condition": condition, "arm": arm, **r}
                        for r in imported_records(run_dir, ids)]
        click.echo(f"{condition} / {arm}: {run_dir}", err=True)
    return manifest, rows, records


def _report(header: str, rows: list[dict[str, Any]], records: list[dict[str, Any]],
            label: str, seeds: int) -> str:
    from ratchet_ray.packs.transfer import columns, summary_rows, transfer_table

    text = header + "\n\n" + transfer_table(rows, ("seed", *columns(label)))
    if seeds > 1:
        summary = summary_rows(rows, label)
        text += ("\nOver seeds (mean ± sample std; harm counts summed; settled round per "
                 "seed):\n\n" + transfer_table(summary, tuple(summary[0])))
    if records:
        text += ("\nThe imported skills as each pack arm measured them:\n\n"
                 + transfer_table(records, ("seed", "condition", "arm", "skill", "status",
                                            "trials", "c_hat", "cf_pairs", "c_cf", "ended")))
    return text


def _seeds(values: tuple[int, ...]) -> tuple[int, ...]:
    if len(set(values)) != len(values):
        raise click.UsageError(f"--seed {' '.join(map(str, values))}: each seed once")
    return values or (42,)


@click.command("transfer")
@click.argument("suite", type=SUITE)
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="New folder for the runs, the packs, transfer.md and transfer.json.")
@click.option("--rounds-a", type=click.IntRange(min=1), default=2, show_default=True,
              help="Rounds of run A, whose ACTIVE skills are exported.")
@click.option("--rounds-b", type=click.IntRange(min=1), default=2, show_default=True,
              help="Rounds of each run B.")
@click.option("--seed", "seeds", type=int, multiple=True,
              help="Seed of run A (repeatable: one measurement per seed; default 42).")
@click.option("--b-seed-offset", type=int, default=1000, show_default=True,
              help="Run B's seed is A's plus this (0: B samples as A did).")
@click.option("--subset-a", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Run A's subset file (its train and eval tasks).")
@click.option("--subset-b", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Runs B's subset file: other tasks than A's, so B is a transfer, not a "
                   "replay.")
@click.option("--set-a", "sets_a", multiple=True, metavar="KEY=VALUE",
              help="Config override of run A only (repeatable).")
@click.option("--set-b", "sets_b", multiple=True, metavar="KEY=VALUE",
              help="Config override of the runs B only (repeatable).")
@config_option()
@set_option("Config override of every run, e.g. --set curator.active_cap=2 (repeatable).")
@llm_option()
@click.option("--pack", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Measure this pack (ratchet skill export) instead of running A.")
@click.option("--allow-other-suite", is_flag=True,
              help="Let --pack come from a run of another suite.")
@click.option("--harm-min-pairs", type=click.IntRange(min=1), default=5, show_default=True,
              help="Outside sim: probed pairs a skill's c_cf < 0 needs to count as harmful.")
def transfer_cmd(suite: str, out: Path, rounds_a: int, rounds_b: int, seeds: tuple[int, ...],
                 b_seed_offset: int, subset_a: Path | None, subset_b: Path | None,
                 sets_a: tuple[str, ...], sets_b: tuple[str, ...],
                 config_files: tuple[Path, ...], sets: tuple[str, ...], llm: str | None,
                 pack: Path | None, allow_other_suite: bool, harm_min_pairs: int) -> None:
    """Measure a skill pack's transfer on SUITE: run A, export its ACTIVE skills, and run B
    from an empty bank, from the pack on probation and from the pack without probation; one
    measurement per --seed. Prints the table and writes OUT/transfer.md."""
    from ratchet_ray.bank.pack_format import PackError
    from ratchet_ray.bank.pack_import import check_pack
    from ratchet_ray.packs.transfer import judge_for

    if out.exists():
        raise click.UsageError(f"--out {out} exists; pass a new folder (the runs go there)")
    if pack is not None:
        try:
            check_pack(pack, suite, allow_other_suite)
        except PackError as exc:
            raise click.ClickException(str(exc)) from exc
    seeds = _seeds(seeds)
    common = (*(() if llm is None else (f"llm.backend={llm}",)), *sets)
    base = TransferPlan(suite, config_files, common, rounds_b=rounds_b)
    subset = (lambda path: (f"subset={json.dumps(str(path.resolve()))}",) if path else ())
    b_name = (f"B: seed +{b_seed_offset}" + (f", {subset_b.name}" if subset_b else "")
              + "".join(f", {s}" for s in sets_b))
    plans = {seed: replace(base, a=(f"rounds={rounds_a}", f"seed={seed}", *subset(subset_a),
                                    *sets_a),
                           conditions=((b_name, (f"seed={seed + b_seed_offset}",
                                                 *subset(subset_b), *sets_b)),))
             for seed in seeds}
    for plan in plans.values():
        check_plan(plan, out)
    judge = judge_for(suite, harm_min_pairs)
    rows: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    packs = []
    out.mkdir(parents=True)
    for seed, plan in plans.items():
        manifest, seed_rows, seed_records = measure(out / f"seed_{seed}", plan, judge, pack,
                                                    allow_other_suite)
        rows += [{"seed": seed, **r} for r in seed_rows]
        records += [{"seed": seed, **r} for r in seed_records]
        packs.append(f"seed {seed}: {len(manifest['skills'])} skill(s), pack "
                     f"{manifest['pack_sha256'][:16]}")
        header = (f"Suite {suite}; A: {rounds_a} round(s)"
                  f"{', ' + subset_a.name if subset_a else ''}, its ACTIVE skills exported "
                  f"({'; '.join(packs)}). Each run B: {rounds_b} round(s). Harm: "
                  f"{judge.label}. Overrides: {' '.join(common) or 'none'}"
                  f"{'; A only: ' + ' '.join(sets_a) if sets_a else ''}.")
        text = _report(header, rows, records, judge.label, len(rows) // len(TRANSFER_ARMS))
        (out / "transfer.md").write_text(text)
        (out / "transfer.json").write_text(json.dumps({"rows": rows, "records": records},
                                                      indent=1) + "\n")
    click.echo(text, nl=False)

