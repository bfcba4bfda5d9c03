"""The runs of a skill pack's transfer measurement: run A, its pack, runs B (``ratchet skill
transfer``, ``ratchet sim-transfer``; docs/skill-packs.md), each through the loop's normal
entry (``loop.driver.run_loop``), as ``ratchet run``.

Contracts:
- ``TransferPlan``: the suite, its ``--config`` files, every run's overrides (``common``, applied
  last), A's own (``a``) and the B worlds (``conditions``: name and overrides), B's rounds.
- ``check_plan(plan, out)``: ``out`` can be created and every run's config loads and is
  startable here, else ``click.ClickException``, one line per problem, before any run dir or
  Ray exists.
- ``measure(out, plan, judge, pack=None, allow_other_suite=False)`` runs A, exports its ACTIVE
  skills to ``out/pack`` (or takes ``pack``: no A), then per B world the three
  ``TRANSFER_ARMS`` in series, and returns ``(manifest, rows, records)``: the pack's manifest,
  one ``transfer_row`` per B run under ``judge``, and what each pack arm measured of the imports.
  A run that fails is one ``ClickException`` line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # the evidence and report modules load with a measurement, not with --help
    from ratchet_ray.packs.transfer import Judge

TRANSFER_ARMS = (("empty bank", ()), ("pack, probation", ("bank.probation=true",)),
                 ("pack, no probation", ("bank.probation=false",)))
"""The three runs B of each world: name and the overrides beside the pack (none: no pack)."""


@dataclass(frozen=True)
class TransferPlan:
    """What runs A and B are (module contract)."""

    suite: str
    config_files: tuple[Path, ...] = ()
    common: tuple[str, ...] = ()
    a: tuple[str, ...] = ()
    conditions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    rounds_b: int = 1

    def config(self, results_dir: Path, *extra: str):
        """The config of one run: the suite's files, then ``extra``, then ``common``."""
        from ratchet_ray.run_config.files import ConfigError, layered_files, load_config

        try:
            return load_config(layered_files(self.suite, self.config_files),
                               [f"results_dir={results_dir}", *extra, *self.common])
        except ConfigError as exc:
            raise click.ClickException(str(exc)) from exc

    def b_runs(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """(condition, arm, overrides without the pack) of every run B, in run order."""
        return [(condition, arm, (f"rounds={self.rounds_b}", *world, *settings))
                for condition, world in self.conditions for arm, settings in TRANSFER_ARMS]


def check_plan(plan: TransferPlan, out: Path) -> None:
    """Refuse a plan whose runs cannot start here (module contract)."""
    from ratchet_ray.loop.entry import startable_problems
    from ratchet_ray.run_config.flags import loop_size_problems
    from ratchet_ray.storage.fsutil import unwritable

    why = unwritable(out)  # every run, pack and table goes under --out
    if why is not None:
        raise click.ClickException(f"cannot create --out {out}: {why}; pass a new folder in a "
                                   "writable place")

    configs = [plan.config(out / "a", *plan.a)]
    configs += [plan.config(out / "b", *extra) for _c, _a, extra in plan.b_runs()]
    problems: list[str] = []
    for config in configs:
        problems += [p for p in [*startable_problems(config), *loop_size_problems(config)]
                     if p not in problems]
    if problems:
        raise click.ClickException("; ".join(problems))


def _run(config) -> Path:
    from ratchet_ray.loop.breaker import RunStopped
    from ratchet_ray.loop.driver import RunSetupError, run_loop

    try:
        return run_loop(config, show_progress=False)
    except (RunSetupError, RunStopped) as exc:
        raise click.ClickException(f"{config.results_dir}: {exc}") from exc


def measure(out: Path, plan: TransferPlan, judge: Judge, pack: Path | None = None,
            allow_other_suite: bool = False
            ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """Run A (unless ``pack``), export its pack, run every B (module contract)."""
    from ratchet_ray.bank.pack_format import read_manifest
    from ratchet_ray.packs.export import export_pack
    from ratchet_ray.packs.transfer import imported_records, transfer_row

    if pack is None:
        a = _run(plan.config(out / "a", *plan.a))
        click.echo(f"run A: {a}", err=True)
        pack = out / "pack"
        manifest = export_pack(a, pack)
    else:
        manifest = read_manifest(pack)
    ids = [e["id"] for e in manifest["skills"]]
    carried = (f"bank.pack={pack.resolve()}",
               *(("bank.allow_other_suite=true",) if allow_other_suite else ()))
    rows, records = [], []
    for k, (condition, arm, extra) in enumerate(plan.b_runs()):
        with_pack = arm != TRANSFER_ARMS[0][0]
        run_dir = _run(plan.config(out / f"b{k}", *extra, *(carried if with_pack else ())))
        rows.append(transfer_row(run_dir, ids if with_pack else (), condition, arm, judge))
        if with_pack:
            records += [{"condition": condition, "arm": arm, **r}
                        for r in imported_records(run_dir, ids)]
        click.echo(f"{condition} / {arm}: {run_dir}", err=True)
    return manifest, rows, records
