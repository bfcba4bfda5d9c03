"""``ratchet sim-report RUN_OR_SWEEP``: the truth-aware report of ``sim`` runs
(``ratchet_ray/suites/sim/report.py``), and ``ratchet sim-transfer``: a skill pack's transfer
measured on the sim world (``ratchet_ray/packs/transfer.py``). The ``sim`` suite's commands, in
the CLI layer: the suite's registration names them (``commands=``) and ``ratchet`` adds them."""

from __future__ import annotations

from pathlib import Path

import click

from ratchet_ray.cli.options import NumberRange, cannot_write, one_line
from ratchet_ray.run_config.options import set_option


@click.command("sim-report")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--delta", type=NumberRange(min=0.0, max=1.0, min_open=True, max_open=True),
              default=1e-3, show_default=True,
              help="Per-skill failure probability delta of Proposition 1's floor.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Report folder (default PATH/sim_report).")
def sim_report(path: Path, delta: float, out: Path | None) -> None:
    """Compare a sim run (or every run of a sweep) with the world's truth: true vs measured vs
    best-possible pass@1, retirement precision/recall, evictions, the Proposition 1 floor."""
    from ratchet_ray.suites.sim.report import write_sim_report

    # OSError: the report folder is a read-only run dir, or the disk is full.
    with cannot_write("the sim report", "pass a writable folder with --out DIR", out), \
            one_line(FileNotFoundError, ValueError):
        written = write_sim_report(path, delta, out)
    click.echo("\n".join(str(p) for p in written))


@click.command("sim-transfer")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="New folder for the runs, the pack and transfer.md.")
@click.option("--rounds-a", type=click.IntRange(min=1), default=30, show_default=True,
              help="Rounds of run A, whose bank is exported.")
@click.option("--rounds-b", type=click.IntRange(min=1), default=30, show_default=True,
              help="Rounds of each run B.")
@click.option("--seed-a", type=int, default=42, show_default=True, help="Seed (world) of A.")
@click.option("--seed-b", type=int, default=7, show_default=True,
              help="Seed of the 'truths redrawn' world: every skill's effect drawn anew.")
@click.option("--stronger-beta", type=NumberRange(min=0.01), default=3.0,
              show_default=True,
              help="sim.base_beta of the 'stronger model' (A's world and truths, higher p0).")
@set_option("Config override for every run, e.g. --set n_train=30 (repeatable).")
def transfer_cmd(out: Path, rounds_a: int, rounds_b: int, seed_a: int, seed_b: int,
                 stronger_beta: float, sets: tuple[str, ...]) -> None:
    """Measure transfer on the sim world: run A's bank as a pack in a run B, on probation and
    without, against B from an empty bank; for a stronger model (same truths) and a world
    whose truths are redrawn. Prints the table and writes OUT/transfer.md. (`ratchet skill
    transfer sim` measures one B world per seed on the same code.)"""
    from ratchet_ray.loop.transfer_runs import TransferPlan, check_plan, measure
    from ratchet_ray.packs.transfer import judge_for, transfer_table

    if out.exists():
        raise click.UsageError(f"--out {out} exists; pass a new folder (the runs go there)")
    plan = TransferPlan(
        "sim", common=sets, a=(f"rounds={rounds_a}", f"seed={seed_a}"), rounds_b=rounds_b,
        conditions=(("stronger model, same truths",
                     (f"seed={seed_a}", f"sim.base_beta={stronger_beta}")),
                    ("truths redrawn", (f"seed={seed_b}",))))
    check_plan(plan, out)
    manifest, rows, _records = measure(out, plan, judge_for("sim"))
    header = (f"Run A: sim, seed {seed_a}, {rounds_a} rounds, {len(manifest['skills'])} ACTIVE "
              f"skills exported (pack {manifest['pack_sha256'][:16]}). Each run B: {rounds_b} "
              f"rounds. Overrides: {' '.join(sets) or 'none'}.\n\n")
    table = transfer_table(rows)
    (out / "transfer.md").write_text(header + table)
    click.echo(header + table, nl=False)


COMMANDS = [sim_report, transfer_cmd]
