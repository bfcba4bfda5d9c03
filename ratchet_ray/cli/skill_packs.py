"""``ratchet skill export RUN -o PACK`` and ``ratchet skill import PACK --into RUN`` (skill packs,
docs/skill-packs.md; ``--as agent-skills`` and SKILL.md folders: ``packs.agent_skills``),
registered on the ``skill`` group by ``cli.skills`` with ``transfer`` (``cli.pack_transfer``).

Contracts:
- ``export`` only reads RUN (default: ``--db``), writes a new pack folder (``packs.export``) and
  prints the pack hash and one line per skill.
- ``import`` takes RUN's writer lock, verifies the pack (a tampered skill is refused, named),
  refuses another suite's pack unless ``--allow-other-suite`` and prints one line per pack
  skill (``bank.pack_import``); imports go on probation (``governance.probation``).
"""

from __future__ import annotations

from pathlib import Path

import click

from ratchet_ray.bank.metaskills import MetaSkillFileError
from ratchet_ray.bank.skill_bank import BankError, SkillBank
from ratchet_ray.bank.skill_io import SkillFileError
from ratchet_ray.cli.evidence import require_run_dir, run_config, writer_lock
from ratchet_ray.cli.options import cannot_write, one_line, round_option, status_option
from ratchet_ray.cli.pack_transfer import transfer_cmd
from ratchet_ray.run_config.files import ConfigError
from ratchet_ray.governance.bypass import last_round
from ratchet_ray.evidence.store import EvidenceSchemaError, EvidenceStore
from ratchet_ray.packs.export import export_pack
from ratchet_ray.bank.pack_format import MANIFEST, PackError
from ratchet_ray.storage.fsutil import cannot_read

__all__ = ["USER_ERRORS", "export_cmd", "import_cmd", "transfer_cmd"]

USER_ERRORS = (SkillFileError, MetaSkillFileError, BankError, ConfigError, EvidenceSchemaError,
               FileNotFoundError)
"""Bad files or config a skill command meets: each is its one-line error (``one_line``)."""
_ERRORS = (PackError, *USER_ERRORS)  # and a bad pack, for export and import


def recording_round(run_dir: Path, round_: int | None) -> int:
    """The round a command records its bank change at: ``--round`` (at most the round after the
    latest, where a paused run meets the change first), else the latest round. A later one
    dated events in rounds the run never ran, which per-round queries then read as history."""
    with EvidenceStore(run_dir).connect() as con:
        latest = last_round(con) or 0  # with a capsule or a skill event; 0 for an empty run
    if round_ is not None and round_ > latest + 1:
        raise click.UsageError(f"--round {round_} is past this run, whose latest round is "
                               f"{latest}: give --round {latest} (or {latest + 1}, the next "
                               "round), or leave --round out for the latest")
    return latest if round_ is None else round_


@click.command("export")
@click.argument("run", required=False, type=click.Path(path_type=Path))
@click.option("-o", "--out", "out", required=True, type=click.Path(path_type=Path),
              help="Folder to write to (a pack: must not hold a pack already; agent-skills: "
                   "new or empty).")
@status_option("active", "Only the skills of this status ('all': every skill of the bank).")
@click.option("--as", "fmt", type=click.Choice(["pack", "agent-skills"]), default="pack",
              show_default=True,
              help="pack: this project's skill pack; agent-skills: one folder per skill with a "
                   "SKILL.md (agentskills.io) carrying its evidence in its metadata.")
@click.option("--license", "license_", default=None,
              help="With --as agent-skills: the license: field of every SKILL.md.")
@click.pass_context
def export_cmd(ctx: click.Context, run: Path | None, out: Path, status: str, fmt: str,
               license_: str | None) -> None:
    """Export RUN's skills with their record as a versioned skill pack or as Agent Skills."""
    run_dir = require_run_dir(ctx, run, "RUN")
    if fmt == "agent-skills":
        _export_agent_skills(run_dir, out, status, license_)
        return
    with _writing(out), one_line(*_ERRORS):
        manifest = export_pack(run_dir, out, status=status)
    for entry in manifest["skills"]:
        r = entry["record"]
        c_hat = "-" if r["c_hat"] is None else f"{r['c_hat']:+.3f}"
        click.echo(f"{entry['id']:32} {entry['status']:10} trials {r['trials']:4} c-hat {c_hat}")
    click.echo(f"pack {manifest['pack_sha256']} ({len(manifest['skills'])} skill(s) from "
               f"{run_dir.name}) written to {out}")


def _writing(out: Path):
    """The export's OSError (``cannot_write``) naming ``-o``."""
    return cannot_write(f"the skills to {out}", "pass a writable folder with -o (nothing was "
                        "written into the run dir)", out)


def _export_agent_skills(run_dir: Path, out: Path, status: str, license_: str | None) -> None:
    from ratchet_ray.packs.agent_skills import META, AgentSkillsError, export_agent_skills

    with _writing(out), one_line(*_ERRORS, AgentSkillsError):
        metas = export_agent_skills(run_dir, out, status=status, license=license_)
    for m in metas:
        c_hat = m[META + "c_hat"] or "-"
        click.echo(f"{m[META + 'id']:32} {m[META + 'state']:10} trials {m[META + 'trials'] or 0:>4} "
                   f"c-hat {c_hat}")
    click.echo(f"{len(metas)} Agent Skill(s) from {run_dir.name} written to {out} (one folder "
               "per skill, each with its SKILL.md)")


def neither_pack_nor_agent_skills(folder: Path, run_dir: Path) -> str:
    """The refusal of a folder ``skill import`` reads as neither format, naming both (and
    ``skill load`` when it holds skill YAML files, which that command reads)."""
    from ratchet_ray.bank.skill_io import skill_files as yaml_files
    from ratchet_ray.packs.agent_skills import SKILL_FILE

    line = (f"skill import: {folder} is neither a skill pack (no {MANIFEST}) nor a folder of "
            f"Agent Skills (no {SKILL_FILE} in it or in a folder of it); pass a pack written by "
            "`ratchet skill export -o PACK`, or Agent Skills (`ratchet skill export --as "
            f"agent-skills`, or <name>/{SKILL_FILE} written by hand)")
    if yaml_files(folder):
        line += (f"; it holds skill YAML files: load those with `ratchet --db {run_dir} skill "
                 f"load {folder}`")
    return line


@click.command("import")
@click.argument("pack", type=click.Path(readable=False, path_type=Path))  # named with its fix
@click.option("--into", "into", type=click.Path(path_type=Path), default=None,
              help="Run dir to import into (default: --db).")
@click.option("--allow-other-suite", is_flag=True,
              help="Import a pack exported from a run of another suite.")
@round_option()
@click.pass_context
def import_cmd(ctx: click.Context, pack: Path, into: Path | None, allow_other_suite: bool,
               round_: int | None) -> None:
    """Import a skill pack, or a folder of Agent Skills (SKILL.md), into a run; its skills
    enter on probation."""
    run_dir = require_run_dir(ctx, into, "--into")
    if not pack.is_dir():
        raise click.UsageError(f"skill import: {pack} is not a folder; pass a pack folder "
                               "written by `ratchet skill export -o PACK`, or a folder of "
                               "Agent Skills (SKILL.md)")
    from ratchet_ray.packs.agent_skills import AgentSkillsError
    from ratchet_ray.packs.agent_skills_import import import_agent_skills, skill_files

    try:
        agent_skills = not (pack / MANIFEST).is_file() and bool(skill_files(pack))
    except OSError as exc:  # a folder this user may not list: named with its fix
        raise click.ClickException(f"{pack}: {cannot_read(pack, exc)}") from exc
    if not agent_skills and not (pack / MANIFEST).exists():
        raise click.UsageError(neither_pack_nor_agent_skills(pack, run_dir))
    with one_line(*_ERRORS, AgentSkillsError):
        at = recording_round(run_dir, round_)
        with writer_lock(run_dir, "ratchet skill import"):
            bank = SkillBank(run_dir, embedder=None, config=run_config(run_dir),
                             run_id=run_dir.name)
            if agent_skills:
                lines = import_agent_skills(bank, pack, round_=at,
                                            allow_other_suite=allow_other_suite)
            else:
                lines = bank.import_pack(pack, round_=at, allow_other_suite=allow_other_suite)
    for line in lines:
        click.echo(line.line())
    entered = sum(line.action in ("added", "renamed") for line in lines)
    click.echo(f"imported {entered} skill(s) on probation from {pack}")
