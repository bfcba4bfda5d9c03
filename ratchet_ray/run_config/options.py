"""The click options that set a run's config, written once for every command that takes them.

Contracts:
- Each factory returns a click decorator whose option names, destination, type and default are
  fixed, so ``--llm`` (``--set``, ``--config``, ...) is the same option everywhere; keyword
  arguments tailor only the help text (and for ``--llm`` the destination and default).
- Choices come from the registries: ``--llm`` offers ``llm.registry.BACKENDS`` a user can pick
  (``WORLD_BACKENDS`` answer only from a world a suite derives).
The suite argument, ``--dry-run`` and ``--version`` are ``loop.entry``'s; the evidence and skill
commands' options are ``cli.options``'.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any, Callable

import click

from ratchet_ray.llm.registry import BACKENDS, WORLD_BACKENDS

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

USER_BACKENDS = tuple(name for name in BACKENDS if name not in WORLD_BACKENDS)


def llm_option(help: str = "LLM backend.", *, dest: str = "llm", default: str | None = None,
               show_default: bool = False) -> Decorator:
    """``--llm NAME``: one of ``USER_BACKENDS`` (``None`` when not given, unless ``default``)."""
    return click.option("--llm", dest, type=click.Choice(USER_BACKENDS), default=default,
                        show_default=show_default, help=help)


def config_option(help: str = "YAML config file(s), applied in order over the suite's "
                              "file.") -> Decorator:
    """``--config FILE`` (repeatable, in order): existing files, as ``config_files`` paths. One
    this user may not read is left to ``load_config``, whose line names the fix (click's says
    only "is not readable")."""
    return click.option("--config", "config_files", multiple=True,
                        type=click.Path(exists=True, dir_okay=False, readable=False,
                                        path_type=Path), help=help)


def profile_option(help: str = "Named settings (configs/profiles/): paper = the paper's model, "
                                "hard subset, rounds and Default; hardened = the retirement "
                                "rules beyond the paper. Repeatable, in order.") -> Decorator:
    """``--profile NAME`` (repeatable, in order), as ``profiles``: layered after the suite's
    file, before ``--config`` / arm files, flags and ``--set`` (``run_config.profiles``)."""
    return click.option("--profile", "profiles", multiple=True, metavar="NAME", help=help)


def set_option(help: str = "Config override, e.g. --set curator.active_cap=100 "
                           "(repeatable).") -> Decorator:
    """``--set KEY=VALUE`` (repeatable), as ``sets``: applied last, over every config file."""
    return click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help=help)


def dataset_path_option(help: str = "Local dataset file (offline use).") -> Decorator:
    """``--dataset-path FILE``: an existing path (the config's ``dataset_path``)."""
    return click.option("--dataset-path", type=click.Path(exists=True, path_type=Path),
                        help=help)


def csv_list(kind: type, example: str) -> Callable[[click.Context, click.Parameter, str], list]:
    """A click callback: a comma-separated list of distinct ``kind`` values; refusals show
    ``example``."""
    def parse(ctx: click.Context, param: click.Parameter, value: str) -> list:
        try:
            items = [kind(v.strip()) for v in value.split(",") if v.strip()]
        except ValueError as exc:
            raise click.BadParameter(f"{value!r}: comma-separated {kind.__name__}s, e.g. "
                                     f"{example}") from exc
        if not items or len(set(items)) != len(items):
            raise click.BadParameter(f"{value!r}: give distinct values, e.g. {example}")
        return items
    return parse


def seeds_option(default: str, help: str) -> Decorator:
    """``--seeds 42,7,13``: distinct integer seeds, comma-separated, as a list (one run or one
    measurement per seed)."""
    return click.option("--seeds", default=default, show_default=True,
                        callback=csv_list(int, default), help=help)


def workers_option(help: str = "Solver and grader actors each.") -> Decorator:
    """``--workers N`` (N >= 1): ``workers.solvers`` and ``workers.graders``."""
    return click.option("--workers", type=click.IntRange(min=1), help=help)


def seed_option(help: str) -> Decorator:
    """``--seed N``: the config's ``seed`` (``None`` when not given)."""
    return click.option("--seed", type=int, help=help)


def bank_option(help: str) -> Decorator:
    """``--bank PACK``: an existing skill-pack folder (``bank.pack``). One this user may not
    read is refused with ``fsutil.cannot_read``'s line and its fix (click's says only "is not
    readable"), as ``--config`` and ``--subset`` are."""
    return click.option("--bank", type=click.Path(exists=True, file_okay=False, readable=False,
                                                  path_type=Path), callback=_readable_folder,
                        help=help)


def _readable_folder(ctx: click.Context, param: click.Parameter, value: Path | None
                     ) -> Path | None:
    from ratchet_ray.storage.fsutil import cannot_read, may_read

    if value is not None and not may_read(value):
        denied = PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(value))
        raise click.UsageError(f"--{param.name} {value}: {cannot_read(value, denied)}", ctx)
    return value


def subset_option(help: str = "Hard-subset file from jobs.select_subset (overrides "
                              "--n-train/--n-eval).", *, required: bool = False) -> Decorator:
    """``--subset FILE``: an existing hard-subset file (the config's ``subset``)."""
    return click.option("--subset", type=click.Path(exists=True, dir_okay=False, readable=False,
                                                   path_type=Path),  # read_subset names the fix
                        required=required, help=help)


def n_train_option(help: str = "Random train slice size.") -> Decorator:
    """``--n-train N`` (N >= 0): the config's ``n_train``."""
    return click.option("--n-train", type=click.IntRange(min=0), help=help)


def n_eval_option(help: str = "Random eval slice size.") -> Decorator:
    """``--n-eval N`` (N >= 0): the config's ``n_eval``."""
    return click.option("--n-eval", type=click.IntRange(min=0), help=help)


def slice_options() -> Decorator:
    """``--n-train``, ``--n-eval`` and ``--subset``, in that order, with their default help."""
    def apply(command: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed([n_train_option(), n_eval_option(), subset_option()]):
            command = option(command)
        return command
    return apply
