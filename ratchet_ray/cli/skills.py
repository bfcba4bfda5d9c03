"""``ratchet skill list|show|load``, ``ratchet meta list``, ``ratchet audit``, ``ratchet curate``.

Contracts:
- Every command works on ``--db RUN_DIR``, with the thresholds of its ``config.yaml`` (the
  paper's Default when absent); the run id is the folder name.
- Read-only commands (list, show, meta list, audit, ``curate --dry-run``) change nothing;
  ``skill load`` and ``curate`` take the run dir's writer lock (refused, naming the holder).
- ``skill load [FOLDER]`` imports a YAML bank (default: the run's ``skills/``); a bad file is
  reported with its field and nothing is imported.
- ``skill export`` / ``import`` are ``cli.skill_packs``'; ``skill list`` shows each skill's
  origin and an import's probation trials against the floor (``governance.probation``).
Bad files or config are one readable message, never a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ratchet_ray.bank.skill_bank import BankError, SkillBank
from ratchet_ray.governance.probation import probation_floor
from ratchet_ray.bank.skill_io import dump_skill
from ratchet_ray.cli import audit_hygiene
from ratchet_ray.cli.skill_packs import (USER_ERRORS, export_cmd, import_cmd, recording_round,
                                         transfer_cmd)
from ratchet_ray.cli.evidence import emit_rows, require_run_dir, run_config, writer_lock
from ratchet_ray.cli.options import (NumberRange, format_option, one_line, round_option,
                                     status_option)
from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.queries import EMPTY_STATS, suspicious_capsules, tampering_capsules
from ratchet_ray.evidence.tampering import grader_finding, suspicion
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.governance import bypass, curator
from ratchet_ray.report.provenance import import_record


def open_bank(ctx: click.Context, *, writer: bool = False) -> SkillBank:
    """A SkillBank without an embedder (the CLI never dedups), or a ClickException. Only a
    ``writer`` (holding the run's lock) finishes status flips a crash cut short."""
    run_dir = require_run_dir(ctx)
    with one_line(*USER_ERRORS):
        return SkillBank(run_dir, embedder=None, config=run_config(run_dir), run_id=run_dir.name,
                         recover=writer)


@click.group("skill")
def skill() -> None:
    """Inspect and import skills."""


@skill.command("list")
@status_option("all", "Only the skills of this status.")
@format_option()
@click.pass_context
def skill_list(ctx: click.Context, status: str, fmt: str) -> None:
    """Skills with their status and live train contribution."""
    bank = open_bank(ctx)
    stats = bank.stats()
    origins = pack_origins(bank)
    probation, floor = bank.probation(stats), probation_floor(bank.config.curator)
    rows = []
    for s in bank.all():
        if status != "all" and s.status.value != status:
            continue
        st = stats.get(s.id, EMPTY_STATS)
        rows.append({"id": s.id, "status": s.status.value, "do_not_retire": s.do_not_retire,
                     "trials": st.trials, "contribution": round(st.contribution, 4),
                     "origin": origins.get(s.id, "native"),
                     "probation": f"{probation[s.id]}/{floor}" if s.id in probation else "",
                     "intent": s.intent})
    emit_rows(rows, ["id", "status", "do_not_retire", "trials", "contribution", "origin",
                     "probation", "intent"], fmt)


def pack_origins(bank: SkillBank) -> dict[str, str]:
    """``{skill id: 'pack:<hash> <source run>'}`` of the skills imported from a skill pack."""
    out = {}
    for skill_id, digest in bank.imported().items():
        source = import_record(bank.run_dir, digest).get("source") or {}
        out[skill_id] = f"pack:{digest} {source.get('run_id', '?')}".rstrip()
    return out


@skill.command("show")
@click.argument("skill_id")
@click.pass_context
def skill_show(ctx: click.Context, skill_id: str) -> None:
    """Print one skill's YAML and its live score."""
    bank = open_bank(ctx)
    with one_line(BankError):
        found = bank.get(skill_id)
    st = bank.stats().get(skill_id, EMPTY_STATS)
    click.echo(dump_skill(found).rstrip("\n"))
    click.echo(f"# train: {st.trials} trials, {st.successes} passed, contribution {st.contribution:+.3f}")


@skill.command("load")
@click.argument("folder", required=False, type=click.Path(file_okay=False, path_type=Path))
@round_option()
@click.pass_context
def skill_load(ctx: click.Context, folder: Path | None, round_: int | None) -> None:
    """Import YAML skills from FOLDER (default: the run's skills/ folder)."""
    if folder is not None and not folder.is_dir():
        what = "is a file" if folder.exists() else "does not exist"
        raise click.UsageError(
            f"skill load: {folder} {what}; fix: pass a folder of skill YAML files (e.g. another "
            "run's results/<suite>/<run-id>/skills), or give no FOLDER to register the files "
            "dropped into this run's skills/")
    bank = open_bank(ctx)
    folder = folder or bank.skills_dir
    at = recording_round(bank.run_dir, round_)
    with one_line(*USER_ERRORS), writer_lock(bank.run_dir, "ratchet skill load"):
        bank = open_bank(ctx, writer=True)  # reread under the lock: files may have changed
        results = bank.load_results(folder, round_=at)
    for r in results:
        extra = f" (evicted {', '.join(r.evicted)})" if r.evicted else ""
        click.echo(f"{r.status:9} {r.skill_id}{extra} {r.reason}".rstrip())
    click.echo(f"imported {sum(r.ok for r in results)} skill(s) from {folder}")


@click.group("meta")
def meta() -> None:
    """Inspect meta-skills (authoring priors)."""


@meta.command("list")
@format_option()
@click.pass_context
def meta_list(ctx: click.Context, fmt: str) -> None:
    """Meta-skills of the run, one ACTIVE per suite."""
    bank = open_bank(ctx)
    rows = [{"id": m.id, "suite": m.suite, "status": m.status.value, "version": m.version,
             "created_round": m.created_round, "first_line": m.body.strip().splitlines()[0]}
            for m in bank.metaskills()]
    emit_rows(rows, ["id", "suite", "status", "version", "created_round", "first_line"], fmt)


TAMPERING_COLUMNS = ["round", "split", "task_id", "skill_id", "exit_status", "finding"]


def _capsule_rows(capsules: list[dict], finding) -> list[dict]:
    """``TAMPERING_COLUMNS`` of each capsule, ``finding(capsule)`` the last."""
    return [{**{k: row[k] for k in TAMPERING_COLUMNS[:-1]}, "finding": finding(row)}
            for row in capsules]


@click.command("audit")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True,
              help="Latest skill events shown.")
@format_option()
@click.option("--tampering", "only_tampering", is_flag=True,
              help="List only the capsules graded as tampering (in any format).")
@click.option("--leakage", is_flag=True,
              help="Per skill, its verbatim overlap with the run's eval tasks (and train "
                   "answers), flagged at --threshold; in table format then the quoted spans.")
@click.option("--threshold", type=NumberRange(0.0, 1.0), default=None,
              help="Leakage score that flags a skill (default: the run's "
                   "synth.leakage_threshold).")
@click.option("--embed", is_flag=True,
              help="With --leakage: also the eval task nearest each skill by the run's "
                   "embedder (calls its backend).")
@click.option("--bypass", "bypass_", is_flag=True,
              help="Per skill: routings since activation, dead weight "
                   "(curator.dead_weight_rounds) and routed-but-ignored on the probe pairs.")
@click.option("--near", type=NumberRange(0.0, 1.0), default=0.95, show_default=True,
              help="With --bypass: output similarity (difflib ratio) of a near-identical pair.")
@click.option("--cost", is_flag=True,
              help="Per skill: prompt tokens it adds per routing, summed over its routings, "
                   "with its contribution per 1k train tokens.")
@click.pass_context
def audit(ctx: click.Context, limit: int, fmt: str, only_tampering: bool, leakage: bool,
          threshold: float | None, embed: bool, bypass_: bool, near: float, cost: bool) -> None:
    """The latest skill events (adds, evictions, retirements...) with contributions; in table
    format then every capsule graded as tampering with its skill and the grader's finding, and
    the failed LLM calls per role, so an outage of e.g. the router is visible. ``--tampering``
    lists only the tampering capsules, in any format. ``--leakage``, ``--bypass`` and ``--cost``
    (beyond the paper) print only their own per-skill table, in any format."""
    if leakage or bypass_ or cost:
        hygiene_audit(ctx, fmt, leakage, threshold, embed, bypass_, near, cost)
        return
    with EvidenceStore(require_run_dir(ctx)).connect() as con:
        # more than there are: all
        rows = nq.fetch_dicts(con, "recent_skill_events", limit=min(limit, sys.maxsize))
        failures = nq.fetch_dicts(con, "failed_llm_calls")  # a router outage is no silent NONE
        # Graded as tampering (any split, any route), with the grader's finding; suspected by
        # the static screen (recorded, not a verdict), with its first quoted line.
        tampered = _capsule_rows(tampering_capsules(con), lambda row: grader_finding(
            row["exit_status"], row["grader_trace"]))
        suspected = _capsule_rows(suspicious_capsules(con), lambda row: (
            suspicion(row["grader_trace"]).splitlines()[1:2] or ["?"])[0].strip())
    if only_tampering:
        emit_rows(tampered, TAMPERING_COLUMNS, fmt)
        return
    emit_rows(rows, ["round", "skill_id", "event", "status_after", "contribution", "trials",
                     "reason"], fmt)
    if fmt == "table":
        click.echo(f"tampering capsules: {len(tampered) or 'none'}")
        if tampered:
            emit_rows(tampered, TAMPERING_COLUMNS, fmt)
        if suspected:  # the static screen: recorded, never a verdict nor a retirement
            click.echo(f"suspected by the static screen (not tampering): {len(suspected)}")
            emit_rows(suspected, TAMPERING_COLUMNS, fmt)
        for row in failures:
            latest = (row["last_error"] or "?").splitlines()[0][:200]
            click.echo(f"failed LLM calls ({row['role']}): {row['failed']} in rounds "
                       f"{row['first_round']}-{row['last_round']}; latest: {latest}")


def hygiene_audit(ctx: click.Context, fmt: str, leakage: bool, threshold: float | None,
                  embed: bool, bypass_: bool, near: float, cost: bool) -> None:
    """The ``--leakage`` / ``--bypass`` / ``--cost`` tables (``cli.audit_hygiene``)."""
    if fmt != "table" and leakage + bypass_ + cost > 1:
        raise click.UsageError(f"--format {fmt} prints one table: pass one of --leakage, "
                               "--bypass, --cost (or --format table for several)")
    bank = open_bank(ctx)
    skills = bank.all()
    with one_line(*USER_ERRORS, ValueError):
        if leakage:
            bar = bank.config.synth.leakage_threshold if threshold is None else threshold
            rows, spans = audit_hygiene.leakage_rows(bank.run_dir, bank.config, skills, bar, embed)
            emit_rows(rows, audit_hygiene.LEAKAGE_COLUMNS, fmt)
            if fmt == "table":
                flagged = [r["skill_id"] for r in rows if r["flagged"]]
                click.echo(f"leakage >= {bar:g}: {', '.join(flagged) or 'none'}")
                if spans:
                    emit_rows(spans, audit_hygiene.SPAN_COLUMNS, fmt)
        with EvidenceStore(bank.run_dir).connect() as con:
            if bypass_:
                rows = audit_hygiene.bypass_rows(con, skills, bank.config, near)
                emit_rows(rows, audit_hygiene.BYPASS_COLUMNS, fmt)
                if fmt == "table":
                    dead = [r["skill_id"] for r in rows if r["dead_weight"]]
                    ignored = [r["skill_id"] for r in rows if r["ignored"]]
                    click.echo(f"dead weight: {', '.join(dead) or 'none'}; routed but ignored "
                               f"(>= {near:g} similar on most probe pairs): "
                               f"{', '.join(ignored) or 'none'}")
            if cost:
                emit_rows(bypass.skill_costs(con, skills, bank.stats()),
                          audit_hygiene.COST_COLUMNS, fmt)


@click.command("curate")
@round_option()
@click.option("--dry-run", is_flag=True, help="Show the decisions without retiring anything.")
@format_option()
@click.pass_context
def curate(ctx: click.Context, round_: int | None, dry_run: bool, fmt: str) -> None:
    """Re-run retirement over the current evidence (do_not_retire skills are reported, kept)."""
    bank = open_bank(ctx)
    at = recording_round(bank.run_dir, round_)
    with one_line(*USER_ERRORS):
        if dry_run:
            decisions = curator.curate(bank.all(), bank.stats(), bank.config.curator,
                                       bank.tampering())
        else:
            with writer_lock(bank.run_dir, "ratchet curate"):
                bank = open_bank(ctx, writer=True)  # reread under the lock
                decisions = bank.curate(at)
    emit_rows([d.to_dict() for d in decisions],
              ["skill_id", "action", "contribution", "trials", "reason"], fmt)
    if fmt == "table":
        retired = [d.skill_id for d in decisions if d.action == "retire"]
        verb = "would retire" if dry_run else f"retired (round {at})"
        click.echo(f"{verb}: {', '.join(retired) or 'none'}")


skill.add_command(export_cmd)
skill.add_command(import_cmd)
skill.add_command(transfer_cmd)

COMMANDS: list[click.Command] = [skill, meta, audit, curate]
