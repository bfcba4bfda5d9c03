"""``ratchet`` command line: one click group; each module under ``ratchet_ray.cli`` adds commands.

Contract: every module listed in ``_COMMAND_MODULES`` exposes ``COMMANDS: list[click.Command]``;
the registered suites add their own (``suites.hooks.suite_commands``: e.g. ``swe``, ``sim-report``).
Modules import lazily-heavy dependencies (Ray, llama.cpp) inside the command bodies so that
``ratchet --help`` stays fast.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from ratchet_ray.loop.entry import version_option

_COMMAND_MODULES = (
    "ratchet_ray.cli.skills",      # skill list|show|load, meta list, audit, curate
    "ratchet_ray.cli.evidence",    # query, capsule prune, evidence verify|repair
    "ratchet_ray.cli.llm",         # doctor, solver-cache
    "ratchet_ray.cli.run",         # run, plot
    "ratchet_ray.cli.report",      # report (HTML), compare (paired statistics of runs)
    "ratchet_ray.cli.export",      # export --inspect
    "ratchet_ray.cli.experiment",  # experiment run|eval-skill-loop
    "ratchet_ray.cli.baseline",    # baseline (also python -m jobs.baseline)
    "ratchet_ray.cli.select_subset",  # select-subset (also jobs.select_subset)
    "ratchet_ray.cli.ablations",   # ablations (also jobs.ablations)
)


class _Ratchet(click.Group):
    """The group: an unreadable evidence part met by any command
    (``evidence.store.UnreadableEvidence``) is one ``Error:`` line naming ``ratchet evidence
    verify``, never DuckDB's traceback; a Ctrl-C during a query is click's ``Aborted!``."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (ValueError, RuntimeError) as exc:
            # Only a command that read the evidence can have loaded the store: a cheap test
            # that keeps DuckDB out of `ratchet --help`.
            store = sys.modules.get("ratchet_ray.evidence.store")
            if store is not None and isinstance(exc, store.UnreadableEvidence):
                raise click.ClickException(str(exc)) from exc
            if store is not None and store.query_interrupted(exc):
                raise click.Abort() from exc  # as click tells any other Ctrl-C
            raise


@click.group(cls=_Ratchet, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", "run_dir", type=click.Path(path_type=Path), default=None,
              help="Run directory (results/<suite>/<run-id>) the command works on.")
@version_option()
@click.pass_context
def main(ctx: click.Context, run_dir: Path | None) -> None:
    """Ratchet on Ray: evolve, audit and query a governed skill library."""
    if run_dir is not None:  # refused before any command reads it (e.g. an empty folder)
        from ratchet_ray.cli.evidence import check_run_dir

        check_run_dir(run_dir)
    ctx.obj = {"run_dir": run_dir}


def _commands() -> list[click.Command]:
    from ratchet_ray.suites.hooks import suite_commands

    found = [c for name in _COMMAND_MODULES for c in importlib.import_module(name).COMMANDS]
    return found + suite_commands()


for _command in _commands():
    main.add_command(_command)
