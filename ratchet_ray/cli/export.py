"""``ratchet export --inspect RUN_DIR -o DIR``: a run's capsules in another tool's log format
(``ratchet_ray/report/inspect_export.py`` says what maps to what)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("export")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--inspect", "as_inspect", is_flag=True,
              help="Write Inspect eval logs (one per round and split; `inspect view DIR` shows "
                   "them). Needs the `inspect` extra.")
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder to write the logs into (created; nothing is written into the run dir).")
@click.option("--split", "splits", type=click.Choice(["eval", "train"]), multiple=True,
              default=("eval",), show_default=True,
              help="Which splits to export (repeat for both).")
def export(run_dir: Path, as_inspect: bool, out: Path, splits: tuple[str, ...]) -> None:
    """Export a run's capsules: one sample per capsule with its task, the skill injected, the
    output, the grade and the grader's trace."""
    if not as_inspect:
        raise click.UsageError("name the format to export to: --inspect (Inspect eval logs)")
    from ratchet_ray.report.data import NotARunDir
    from ratchet_ray.report.inspect_export import InspectMissing, export_inspect

    try:
        written = export_inspect(run_dir, out, splits)
    except (NotARunDir, InspectMissing) as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:  # the output folder: not creatable, not writable, or the disk full
        raise click.ClickException(f"cannot write the logs to {out}: {exc.strerror or exc} "
                                   f"({exc.filename or out}); pass a writable folder with -o "
                                   "(nothing was written into the run dir)") from exc
    if not written:
        raise click.ClickException(f"{run_dir} has no {'/'.join(splits)} capsules to export "
                                   "(has a round finished?)")
    click.echo(f"wrote {len(written)} Inspect log(s) to {out} (view them with: inspect view --log-dir "
               f"{out})")


COMMANDS = [export]
