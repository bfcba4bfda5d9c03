"""What every run entry point checks and offers before anything starts: ``ratchet run`` (=
``python -m jobs.skill_loop``), ``jobs.baseline``, ``jobs.ablations``, ``ratchet experiment
eval-skill-loop``. The jobs import this module, never ``ratchet_ray.cli`` (whose ``__init__``
imports the jobs back).

Contracts:
- ``check_startable(config)``: the backend's requirements and the subset file hold here, or
  ``click.ClickException`` with one line per problem naming the setting or file and the fix;
  called before any run dir, output file or Ray exists.
- ``pack_problems(config)``: a new run's ``bank.pack`` verified with the run's size (a corrupt or
  other-suite pack is one line), so ``--dry-run`` refuses it too.
- ``DRY_RUN``: the ``--dry-run`` flag; ``print_config(config)`` prints the YAML the run dir's
  ``config.yaml`` would hold.
- ``SUITE``: the click type of a suite name. Any registered suite is accepted, plugin suites
  included, so the config checks the name when loaded and lists the valid suites.
- ``version_option()``: ``--version``, printing ``ratchet-ray <version>``.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

import click

DRY_RUN = click.option("--dry-run", is_flag=True,
                       help="Check the config, print it resolved (YAML) and exit: no run dir, no "
                            "Ray.")


class SuiteName(click.ParamType):
    """A suite name (module contracts: the suite registry, through the config, checks it)."""

    name = "suite"

    def convert(self, value: Any, param: Any, ctx: Any) -> str:
        text = str(value).strip()
        if not text:
            self.fail("give a suite name (python -c 'from ratchet_ray.suites import "
                      "suite_names; print(suite_names())' lists them)", param, ctx)
        return text


SUITE = SuiteName()


def package_version() -> str:
    """The version of the installed ``ratchet-ray`` (the package's own when not installed)."""
    try:
        return metadata.version("ratchet-ray")
    except metadata.PackageNotFoundError:
        from ratchet_ray import __version__

        return __version__


def version_option() -> Any:
    """The ``--version`` option of a ``ratchet`` command or job."""
    return click.version_option(package_version(), "--version", prog_name="ratchet-ray",
                                message="%(prog)s %(version)s")


def startable_problems(config: Any) -> list[str]:
    """What the config lacks on this machine, one line each (module contracts)."""
    from ratchet_ray.llm.requirements import backend_problems
    from ratchet_ray.suites.base import read_subset

    problems = backend_problems(config.llm)
    if config.subset:
        try:
            read_subset(config.subset)
        except ValueError as exc:
            problems.append(str(exc))
    return problems


def pack_problems(config: Any) -> list[str]:
    """The new run's skill pack (``bank.pack``), verified as the run would import it (a corrupt
    or other-suite pack), so ``--dry-run`` refuses what the run would: one line, or none."""
    if not config.bank.pack:
        return []
    from ratchet_ray.bank.pack_import import check_pack

    try:
        check_pack(config.bank.pack, config.suite, config.bank.allow_other_suite)
    except (ValueError, OSError) as exc:
        return [" ".join(str(exc).split())]
    return []


def check_startable(config: Any) -> None:
    """``ClickException`` naming what the config lacks on this machine (module contracts)."""
    problems = startable_problems(config)
    if problems:
        raise click.ClickException("\n".join(problems))


def print_config(config: Any) -> None:
    """``--dry-run``: the resolved config on stdout, as the run's ``config.yaml`` would hold it."""
    from ratchet_ray.run_config.files import config_text

    click.echo(config_text(config), nl=False)
