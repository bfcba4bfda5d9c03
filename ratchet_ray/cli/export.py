"""``ratchet export --inspect RUN_DIR -o DIR``: a run's capsules in another tool's log format
(``ratchet_ray/report/inspect_export.py`` says what maps to what); ``ratchet export
--predictions RUN_DIR -o FILE.jsonl``: its SWE-bench attempts as the official harness's
predictions file (``ratchet_ray/report/predictions.py``)."""

from __future__ import annotations

from pathlib import Path

import click

from ratchet_ray.cli.options import cannot_write, one_line, round_option


@click.command("export")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--inspect", "as_inspect", is_flag=True,
              help="Write Inspect eval logs (one per round and split; `inspect view DIR` shows "
                   "them). Needs the `inspect` extra.")
@click.option("--predictions", "as_predictions", is_flag=True,
              help="Write the SWE-bench predictions JSONL (instance_id, model_name_or_path, "
                   "model_patch; one line per attempt) that swebench.harness.run_evaluation, "
                   "sb-cli and Modal take.")
@round_option("With --predictions: only this round's attempts (default: every round).")
@click.option("-o", "--out", type=click.Path(path_type=Path), required=True,
              help="Folder to write the Inspect logs into (created), or the predictions file "
                   "to create; nothing is written into the run dir.")
@click.option("--split", "splits", type=click.Choice(["eval", "train"]), multiple=True,
              default=("eval",), show_default=True,
              help="Which splits to export (repeat for both).")
def export(run_dir: Path, as_inspect: bool, as_predictions: bool, round_: int | None, out: Path,
           splits: tuple[str, ...]) -> None:
    """Export a run's capsules: as Inspect logs, one sample per capsule with its task, the skill
    injected, the output, the grade and the grader's trace; or as SWE-bench predictions."""
    if as_inspect == as_predictions:
        raise click.UsageError("name one format to export to: --inspect (Inspect eval logs) or "
                               "--predictions (SWE-bench predictions JSONL)")
    if as_predictions:
        _export_predictions(run_dir, out, round_, splits)
        return
    from ratchet_ray.report.data import NotARunDir
    from ratchet_ray.report.inspect_export import InspectMissing, export_inspect

    # ValueError: a garbled loop.json or config.yaml, named with its fix (as `report`).
    with cannot_write(f"the logs to {out}", "pass a writable folder with -o (nothing was "
                      "written into the run dir)", out), \
            one_line(NotARunDir, InspectMissing, ValueError):
        written = export_inspect(run_dir, out, splits)
    if not written:
        raise click.ClickException(f"{run_dir} has no {'/'.join(splits)} capsules to export "
                                   "(has a round finished?)")
    click.echo(f"wrote {len(written)} Inspect log(s) to {out} (view them with: inspect view --log-dir "
               f"{out})")


def _export_predictions(run_dir: Path, out: Path, round_: int | None,
                        splits: tuple[str, ...]) -> None:
    from ratchet_ray.report.predictions import PredictionsError, export_predictions

    with cannot_write(f"the predictions to {out}", "pass a writable path with -o (nothing was "
                      "written)", out), one_line(PredictionsError):
        done = export_predictions(run_dir, out, round_=round_, splits=splits)
    click.echo(f"wrote {done.lines} prediction(s) to {out} (grade them with: python -m "
               f"swebench.harness.run_evaluation -p {out} -d DATASET -id RUN_ID)")
    if done.repeated_ids:
        click.echo(f"note: {len(done.repeated_ids)} instance(s) on more than one line (rounds or "
                   "attempts); the harness grades one line per instance: export one --round "
                   "and one --split to regrade each")


COMMANDS = [export]
