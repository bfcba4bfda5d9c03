"""A run's bank as Agent Skills (agentskills.io): one folder per skill holding a ``SKILL.md``
(``ratchet skill export --as agent-skills -o DIR``), with the evidence that the skill helped
or not in its ``metadata``; ``packs.agent_skills_import`` reads such folders back. What maps
to what: docs/skill-packs.md (the SKILL.md table).

Contracts:
- ``export_agent_skills(run_dir, out, status=..., license=None)`` builds the run's pack
  (``packs.export.build_pack``: the same selection, records and redaction as a skill pack) and
  writes every folder into a temp sibling renamed to ``out`` at the end: ``out`` is complete or
  absent. ``out`` must not exist or be an empty folder (``AgentSkillsError`` otherwise).
- A skill's evidence is the run's own once the run has routed it (trials > 0); an imported skill
  not routed yet carries the record it was imported with (the manifest the import kept under
  ``<run>/packs/``), so export -> import -> export writes the same files.
- ``skill_markdown(...)`` is pure: the same skill and record give the same bytes.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import yaml

from ratchet_ray.bank.pack_format import IMPORTS_DIR
from ratchet_ray.bank.skill_io import parse_skill
from ratchet_ray.packs.export import build_pack
from ratchet_ray.storage.fsutil import fsync_dir, temp_path, write_target, write_tree
from ratchet_ray.types import Skill

SKILL_FILE = "SKILL.md"
META = "ratchet."
SECTIONS = {"applies_when": "When it applies", "key_insight": "Key insight",
            "common_pitfalls": "Common pitfalls",
            "verify_before_returning": "Verify before returning"}
EVIDENCE_SECTION = "Evidence"
MAX_DESCRIPTION = 1024


class AgentSkillsError(ValueError):
    """An Agent Skills folder cannot be written or read; one line with the fix."""


def folder_name(skill_id: str) -> str:
    """The Agent Skills ``name`` (and folder) of a skill id: lowercase, ``-`` for ``_``, no double
    or edge hyphen."""
    parts = [p for p in skill_id.replace("_", "-").split("-") if p]
    return "-".join(parts)[:64].strip("-")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _num(value: Any) -> str:
    return "" if value is None else (f"{value:.6g}" if isinstance(value, float) else str(value))


def _interval(value: list[float] | None) -> str:
    """A 95% interval as a JSON list of two numbers ("" when there is none)."""
    return json.dumps(value) if value else ""


def _born_retired(history: list[dict[str, Any]]) -> tuple[str, str]:
    born = next((h["round"] for h in history if h.get("event") in ("added", "loaded")), None)
    retired = [h["round"] for h in history if h.get("status_after") == "deprecated"]
    return _num(born), _num(retired[-1] if retired else None)


def metadata(skill: Skill, view: dict[str, Any], pack_sha256: str, skill_sha256: str
             ) -> dict[str, str]:
    """The ``ratchet.*`` metadata (every value a string, as the spec's map of strings wants)."""
    record, source, lineage = view["record"], view["source"], view["lineage"]
    born, retired = _born_retired(view["status_history"])
    fields = {
        "id": skill.id, "version": skill.version, "author": skill.author,
        "description": skill.description, "intent": skill.intent,
        "signals_match": json.dumps(skill.signals_match), "tags": json.dumps(skill.tags),
        "preconditions": json.dumps(skill.preconditions),
        "do_not_retire": str(skill.do_not_retire).lower(),
        "lineage": skill.lineage or "", "lineage_version": str(skill.lineage_version),
        "state": view["status"],
        "trials": _num(record.get("trials")), "c_hat": _num(record.get("c_hat")),
        "c_hat_ci95": _interval(record.get("c_hat_ci95")),
        "cf_pairs": _num(record.get("cf_pairs")), "c_cf": _num(record.get("c_cf")),
        "c_cf_ci95": _interval(record.get("c_cf_ci95")),
        "round_born": born, "round_retired": retired,
        "lineage_id": str(lineage.get("lineage_id") or skill.lineage_id),
        "refines": str(lineage.get("refines") or ""),
        "source_run": str(source.get("run_id") or ""), "source_suite": str(source.get("suite") or ""),
        "source_model": str(source.get("model") or ""),
        "pack_sha256": pack_sha256, "skill_sha256": skill_sha256,
    }
    return {META + k: v for k, v in fields.items()}


def _evidence_lines(meta: dict[str, str]) -> list[str]:
    m = {k[len(META):]: v for k, v in meta.items()}
    ci = json.loads(m["c_hat_ci95"] or "null")
    c_hat = (f"{float(m['c_hat']):+.3f} (95% interval {ci[0]:+.3f} to {ci[1]:+.3f})"
             if m["c_hat"] and ci else "not measured")
    lines = [f"- Learned in run `{m['source_run']}` ({m['source_suite']}, model "
             f"`{m['source_model'] or 'unknown'}`), born in round {m['round_born'] or '?'}"
             + (f", retired in round {m['round_retired']}" if m["round_retired"] else "") + ".",
             f"- State: {m['state']}; routed to {m['trials'] or 0} train task(s); "
             f"c-hat (successes minus failures per routed task) {c_hat}."]
    if m["c_cf"]:
        cf = json.loads(m["c_cf_ci95"] or "null")
        lines.append(f"- c_cf (against the same task without the skill) {float(m['c_cf']):+.3f}"
                     + (f" (95% interval {cf[0]:+.3f} to {cf[1]:+.3f})" if cf else "")
                     + f" over {m['cf_pairs']} pair(s).")
    return lines


def skill_markdown(skill: Skill, meta: dict[str, str], *, suite: str,
                   license: str | None = None) -> str:
    """The SKILL.md of one skill (module contract)."""
    said = _one_line(skill.description)
    description = f"{said}{'' if said[-1:] in '.:;!?' else '.'} Use it to: {_one_line(skill.intent)}"
    front: dict[str, Any] = {"name": folder_name(skill.id),
                             "description": description[:MAX_DESCRIPTION]}
    if license:
        front["license"] = license
    front["compatibility"] = _one_line(
        f"Learned by ratchet-ray on the {suite or 'unknown'} suite; natural-language guidance "
        "for any coding agent, no tools or scripts")
    front["metadata"] = meta
    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=10_000,
                          default_flow_style=False)
    g = skill.guidance
    body = [f"# {skill.id}", "", skill.intent, ""]
    for field, title in SECTIONS.items():
        value = getattr(g, field)
        if not value:
            continue
        text = "\n".join(f"- {_one_line(p)}" for p in value) if field == "common_pitfalls" else value
        body += [f"## {title}", "", text, ""]
    body += [f"## {EVIDENCE_SECTION}", "", *_evidence_lines(meta), ""]
    return f"---\n{head}---\n\n" + "\n".join(body)


def _imported_views(run_dir: Path) -> dict[str, dict[str, Any]]:
    """``{skill id here: view}`` from the manifests of the packs this run imported."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted((run_dir / IMPORTS_DIR).glob("*.json")):
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        entries = {e.get("id"): e for e in manifest.get("skills") or []}
        for pack_id, here in (manifest.get("imported_as") or {}).items():
            if pack_id in entries:
                out[here] = {**entries[pack_id], "source": manifest.get("source") or {}}
    return out


def export_agent_skills(run_dir: str | Path, out: str | Path, *, status: str = "active",
                        license: str | None = None) -> list[dict[str, str]]:
    """Write ``out`` (module contract); returns each skill's metadata, in name order."""
    # Through a symbolic link at ``out`` (kept), as every -o is; a loop of them: ELOOP.
    run_dir, out = Path(run_dir), write_target(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise AgentSkillsError(f"{out} exists and is not an empty folder; pass a new folder to "
                               "-o (nothing was written)")
    manifest, texts = build_pack(run_dir, status=status)
    imported = _imported_views(run_dir)
    files: dict[str, bytes] = {}
    metas = []
    for entry in manifest["skills"]:
        skill = parse_skill(texts[entry["id"]], entry["file"])
        view = {**entry, "source": manifest["source"]}
        if not entry["record"]["trials"] and entry["id"] in imported:
            view = {**imported[entry["id"]], "status": entry["status"]}
        meta = metadata(skill, view, manifest["pack_sha256"], entry["sha256"])
        name = folder_name(skill.id)
        if f"{name}/{SKILL_FILE}" in files:
            raise AgentSkillsError(f"skills {skill.id} and another map to the same name {name}; "
                                   "rename one in the bank")
        files[f"{name}/{SKILL_FILE}"] = skill_markdown(
            skill, meta, suite=manifest["source"].get("suite") or "", license=license).encode()
        metas.append(meta)
    temp = temp_path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        write_tree(temp, files)
        if out.is_dir():
            out.rmdir()  # empty (checked above): the complete tree takes its place
        os.rename(temp, out)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    fsync_dir(out.parent)
    return sorted(metas, key=lambda m: folder_name(m[META + "id"]))
