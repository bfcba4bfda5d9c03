"""The click options of the evidence and skill commands, and the commands' one-line error,
written once; the options that set a run's config are ``run_config.options``'.

Contracts:
- Each factory returns a click decorator whose option's names, destination, type and default are
  fixed; only the help text may be tailored to the command.
- ``--status`` offers ``all`` and every ``types.SkillStatus`` (never a copy); ``--format`` the
  output formats ``cli.evidence.emit_rows`` writes.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Any, ContextManager, Iterable, Iterator

import click

from ratchet_ray.run_config.options import Decorator
from ratchet_ray.storage.fsutil import refusing_writes
from ratchet_ray.types import SkillStatus

SKILL_STATUSES = ("all", *(status.value for status in SkillStatus))
FORMATS = click.Choice(["table", "csv", "json"])


class NumberRange(click.FloatRange):
    """Every bounded number option's type: ``click.FloatRange`` that refuses ``nan``, which
    passes every bound (``--keep-days nan`` pruned nothing and ``--threshold nan`` flagged
    nothing, each as if that was asked)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number; give one in the range "
                      f"{self._describe_range()}", param, ctx)
        return number


def status_option(default: str, help: str) -> Decorator:
    """``--status S``: one of ``SKILL_STATUSES`` (``all``: every skill)."""
    return click.option("--status", type=click.Choice(SKILL_STATUSES), default=default,
                        show_default=True, help=help)


def format_option() -> Decorator:
    """``--format table|csv|json`` as ``fmt`` (default ``table``)."""
    return click.option("--format", "fmt", type=FORMATS, default="table", show_default=True,
                        help="Output: an aligned table, CSV, or JSON (a list of objects).")


def round_option(help: str = "Round to record, 0 or more (default: the latest round in the "
                              "evidence).") -> Decorator:
    """``--round R`` (R >= 0) as ``round_``; ``None`` means what ``help`` says (default: the
    latest round in the evidence)."""
    return click.option("--round", "round_", type=click.IntRange(min=0), default=None, help=help)


@contextmanager
def one_line(*errors: type[BaseException],
             error: type[click.ClickException] = click.ClickException) -> Iterator[None]:
    """``errors`` raised inside become click's one ``Error:`` line, ``error(str(exc))`` with the
    cause chained, never a traceback; pass ``error=click.UsageError`` for bad input that the
    usage line helps with (exit 2)."""
    try:
        yield
    except errors as exc:
        raise error(str(exc)) from exc


def suite_config(suite: str, files: Iterable[Any] = (), overrides: Iterable[str] = (),
                 profiles: Iterable[str] = ()) -> Any:
    """The ``LoopConfig`` of the Default, ``suite``'s file, the ``profiles``' files, ``files``
    in order, then ``overrides``, as every run layers it; a bad one is a usage error."""
    from ratchet_ray.run_config.files import ConfigError, layered_files, load_config
    from ratchet_ray.run_config.profiles import profile_files

    with one_line(ConfigError, error=click.UsageError):
        return load_config(layered_files(suite, [*profile_files(profiles, suite), *files]),
                           list(overrides))


def cannot_write(what: str, fix: str, target: Any) -> ContextManager[None]:
    """An ``OSError`` inside is click's one line of ``fsutil.cannot_write`` (the sweep's
    refusals say it alike): ``cannot write WHAT: <reason> (<its file, else target>); FIX``, or
    the read refused on the way (a file this user may not read), where no FIX would help."""
    return refusing_writes(what, fix, target, click.ClickException)


def exit_on_signal(signum: int, _frame: Any) -> None:
    """A signal handler (SIGTERM) that unwinds like Ctrl-C: ``finally`` blocks clean up."""
    raise SystemExit(128 + signum)


def yes_option() -> Decorator:
    """``--yes``: skip the confirmation prompt."""
    return click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
