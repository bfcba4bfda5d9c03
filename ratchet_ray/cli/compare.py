"""``ratchet compare RUN_A RUN_B [RUN_C ...]``: each later run against RUN_A, task by task
(``ratchet_ray/evidence/run_pairs.py``): per round and on rolling gain, the paired difference
with its bootstrap interval and McNemar's exact test. Runs that do not share eval tasks and
seed are refused in one line. ``ratchet report RUN_A RUN_B`` shows the same table."""

from __future__ import annotations

from pathlib import Path

import click

from ratchet_ray.cli.options import one_line


@click.command("compare")
@click.argument("runs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
def compare(runs: tuple[Path, ...]) -> None:
    """Compare RUN_B (and any later run) with RUN_A on the eval tasks they share: paired Δ of
    pass@1 per round and of rolling gain, a 95% bootstrap interval over tasks and McNemar's
    exact p. The runs must share seed and eval tasks (the same --seed, --n-eval / --subset)."""
    if len(runs) < 2:
        raise click.UsageError("give two run dirs or more: RUN_A (the reference) and the runs "
                               "to compare with it")
    from ratchet_ray.evidence.run_pairs import NotPaired, describe, paired_runs
    from ratchet_ray.report.data import NotARunDir, check_run_dir

    with one_line(NotPaired, NotARunDir):
        reference = check_run_dir(runs[0])
        pairs = [paired_runs(reference, check_run_dir(other)) for other in runs[1:]]
    for i, pair in enumerate(pairs):
        if i:
            click.echo("")
        for line in describe(pair):
            click.echo(line)


COMMANDS = [compare]
