"""``ratchet sim-report RUN_OR_SWEEP``: the truth-aware report of ``sim`` runs
(``ratchet_ray/suites/sim/report.py``). Added to ``ratchet`` by the suite's registration
(``commands=``), as a module of the CLI layer."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("sim-report")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--delta", type=click.FloatRange(min=0.0, max=1.0, min_open=True, max_open=True),
              default=1e-3, show_default=True,
              help="Per-skill failure probability delta of Proposition 1's floor.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Report folder (default PATH/sim_report).")
def sim_report(path: Path, delta: float, out: Path | None) -> None:
    """Compare a sim run (or every run of a sweep) with the world's truth: true vs measured vs
    best-possible pass@1, retirement precision/recall, evictions, the Proposition 1 floor."""
    from ratchet_ray.suites.sim.report import write_sim_report

    try:
        written = write_sim_report(path, delta, out)
    except (FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo("\n".join(str(p) for p in written))


COMMANDS = [sim_report]
