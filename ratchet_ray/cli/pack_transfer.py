"""``ratchet skill transfer SUITE``: a skill pack's transfer measured on any suite, and the
report over seeds. The runs themselves are ``loop.transfer_runs``'s, which ``ratchet
sim-transfer`` (``cli/sim.py``) shares (docs/skill-packs.md).

Contracts:
- ``skill transfer`` writes ``OUT/seed_<s>/`` per seed of A (``--seeds``, comma-separated; B's
  seed is A's plus ``--b-seed-offset``) and, after every seed, ``OUT/transfer.md`` (the rows, a
  summary over seeds, the imports' records) and ``OUT/transfer.json``; it prints the table at the end.
  It refuses, in one line and before anything runs: an existing ``--out``, a ``--pack`` of
  another suite (unless ``--allow-other-suite``), a config that cannot start (a missing model).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from ratchet_ray.cli.options import one_line
from ratchet_ray.loop.entry import SUITE
from ratchet_ray.loop.transfer_runs import TRANSFER_ARMS, TransferPlan, check_plan, measure
from ratchet_ray.run_config.options import config_option, llm_option, seeds_option, set_option


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


@click.command("transfer")
@click.argument("suite", type=SUITE)
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="New folder for the runs, the packs, transfer.md and transfer.json.")
@click.option("--rounds-a", type=click.IntRange(min=1), default=2, show_default=True,
              help="Rounds of run A, whose ACTIVE skills are exported.")
@click.option("--rounds-b", type=click.IntRange(min=1), default=2, show_default=True,
              help="Rounds of each run B.")
@seeds_option("42", "Seeds of run A, comma-separated (one measurement per seed).")
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
@click.option("--pack", type=click.Path(exists=True, file_okay=False, readable=False,
                                        path_type=Path),  # check_pack names the fix
              help="Measure this pack (ratchet skill export) instead of running A.")
@click.option("--allow-other-suite", is_flag=True,
              help="Let --pack come from a run of another suite.")
@click.option("--harm-min-pairs", type=click.IntRange(min=1), default=5, show_default=True,
              help="Where the suite knows no truth: probed pairs a skill's c_cf < 0 needs to "
                   "count as harmful.")
def transfer_cmd(suite: str, out: Path, rounds_a: int, rounds_b: int, seeds: list[int],
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
        with one_line(PackError):
            check_pack(pack, suite, allow_other_suite)
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

