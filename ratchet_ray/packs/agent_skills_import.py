"""Agent Skills folders (``SKILL.md``, agentskills.io) into a bank, on probation as skill packs
are (``ratchet skill import DIR``; ``packs.agent_skills`` writes them).

Contracts:
- ``read_agent_skills(folder, suite)`` reads ``folder/SKILL.md`` or every ``folder/*/SKILL.md``
  into a pack (``bank.pack_format``'s manifest and ``{id: yaml}``), writing nothing. A SKILL.md
  this project wrote (``ratchet.*`` metadata) gives back the exact skill and its exported
  record; a hand-written one becomes a skill with no record (``_hand_written``).
- Every file is parsed first: one without frontmatter, ``name`` or ``description``, or whose
  fields make no valid skill, raises ``AgentSkillsError`` naming the file and the fix, and
  nothing is imported.
- ``import_agent_skills(bank, folder, round_=..., allow_other_suite=False)`` imports that pack
  with ``bank.import_pack``: the same probation, dedup, renaming, cap and length rules, and the
  manifest kept under ``<run>/packs/``.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import yaml

from ratchet_ray.bank.pack_format import (FORMAT, FORMAT_VERSION, SKILLS_DIR, pack_sha256,
                                          skill_sha256, write_pack)
from ratchet_ray.bank.skill_io import SkillFileError, dump_skill, validate_skill
from ratchet_ray.packs.agent_skills import META, SECTIONS, SKILL_FILE, AgentSkillsError

_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)(.*)\Z", re.S)


def skill_files(folder: Path) -> list[Path]:
    """``folder/SKILL.md`` alone, else every ``folder/*/SKILL.md`` (sorted)."""
    if (folder / SKILL_FILE).is_file():
        return [folder / SKILL_FILE]
    return sorted(p for p in folder.glob(f"*/{SKILL_FILE}") if p.is_file())


def _front_and_body(path: Path) -> tuple[dict[str, Any], str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentSkillsError(f"{path}: cannot be read ({exc}); save it as UTF-8 text (the "
                               "Agent Skills format is Markdown)") from exc
    match = _FRONT.match(text)
    if not match:
        raise AgentSkillsError(f"{path}: no YAML frontmatter between --- lines; start the file "
                               "with ---, name: and description:, then ---")
    try:
        front = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise AgentSkillsError(f"{path}: the frontmatter is not YAML ({exc}); fix it") from exc
    if not isinstance(front, dict) or not str(front.get("name") or "").strip():
        raise AgentSkillsError(f"{path}: no name in its frontmatter; add name: <lowercase-"
                               "hyphenated-name> (the Agent Skills format requires it)")
    if not str(front.get("description") or "").strip():
        raise AgentSkillsError(f"{path}: no description in its frontmatter; add description: "
                               "<when the skill applies> (the Agent Skills format requires it)")
    return front, match.group(2)


def _sections(body: str) -> tuple[str, dict[str, str]]:
    """The text before the first ``## `` heading (title line dropped) and each section's text."""
    lead, sections, current = [], {}, None
    for line in body.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = []
        elif current is None:
            lead.append(line)
        else:
            sections[current].append(line)
    lead_text = "\n".join(ln for ln in lead if not ln.startswith("# ")).strip()
    return lead_text, {k: "\n".join(v).strip() for k, v in sections.items()}


def _ours(meta: dict[str, str], body: str) -> dict[str, Any]:
    """The skill fields of a SKILL.md this project wrote."""
    _, sections = _sections(body)
    guidance: dict[str, Any] = {}
    for field, title in SECTIONS.items():
        text = sections.get(title, "")
        if field == "common_pitfalls":
            guidance[field] = [ln[2:] for ln in text.splitlines() if ln.startswith("- ")]
        elif text:
            guidance[field] = text
    data = {"id": meta["id"], "name": meta["id"], "version": meta["version"],
            "description": meta["description"], "intent": meta["intent"],
            "signals_match": json.loads(meta["signals_match"]), "tags": json.loads(meta["tags"]),
            "preconditions": json.loads(meta["preconditions"]),
            "status": meta["state"],
            "author": meta["author"], "do_not_retire": meta["do_not_retire"] == "true",
            "lineage_version": int(meta["lineage_version"]), "guidance": guidance}
    if meta.get("lineage"):
        data["lineage"] = meta["lineage"]
    return data


def _hand_written(front: dict[str, Any], body: str) -> dict[str, Any]:
    """Id and name: ``name`` (``-`` as ``_``); description, intent and applies-when:
    ``description``; key insight: the body."""
    name = str(front["name"]).strip()
    description = " ".join(str(front["description"]).split())
    text = body.strip() or description
    return {"id": name.replace("-", "_").lower(), "name": name.replace("-", "_").lower(),
            "description": description, "intent": description, "author": "human",
            "tags": ["agent-skills"],
            "guidance": {"applies_when": description, "key_insight": text}}


def _float(value: str | None) -> float | None:
    return float(value) if value else None


def _entry(skill_yaml: str, skill_id: str, meta: dict[str, str]) -> dict[str, Any]:
    """The pack entry of one skill: its record as the SKILL.md says (empty when hand-written)."""
    history = []
    if meta.get("round_born"):
        history.append({"round": int(meta["round_born"]), "event": "added",
                        "status_after": "active", "reason": "from SKILL.md"})
    if meta.get("round_retired"):
        history.append({"round": int(meta["round_retired"]), "event": "retired",
                        "status_after": "deprecated", "reason": "from SKILL.md"})
    ci = json.loads(meta.get("c_hat_ci95") or "null")
    cf_ci = json.loads(meta.get("c_cf_ci95") or "null")
    return {"id": skill_id, "file": f"{SKILLS_DIR}/{skill_id}.yaml",
            "sha256": skill_sha256(skill_yaml), "status": meta.get("state", "active"),
            "lineage": {"lineage_id": meta.get("lineage_id") or skill_id,
                        "refines": meta.get("refines") or None},
            "status_history": history,
            "record": {"trials": int(meta.get("trials") or 0), "c_hat": _float(meta.get("c_hat")),
                       "c_hat_ci95": ci, "cf_pairs": int(meta.get("cf_pairs") or 0),
                       "c_cf": _float(meta.get("c_cf")), "c_cf_ci95": cf_ci},
            "provenance": {"agent_skills": True}}


def read_agent_skills(folder: str | Path, suite: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The folder's skills as a pack (module contract)."""
    folder = Path(folder)
    files = skill_files(folder)
    if not files:
        raise AgentSkillsError(f"{folder}: no {SKILL_FILE} in it or in its subfolders; pass a "
                               "folder written by `ratchet skill export --as agent-skills`")
    texts, entries, sources = {}, [], []
    for path in files:
        front, body = _front_and_body(path)
        raw = front.get("metadata") if isinstance(front.get("metadata"), dict) else {}
        meta = {k[len(META):]: str(v) for k, v in raw.items() if str(k).startswith(META)}
        data = _ours(meta, body) if "id" in meta and "intent" in meta else _hand_written(front, body)
        try:
            skill = validate_skill(data, str(path))
        except SkillFileError as exc:
            raise AgentSkillsError(f"{path}: not a valid skill: {exc.problems[0]}; fix the "
                                   "file") from exc
        if skill.id in texts:
            raise AgentSkillsError(f"{path}: a second skill named {skill.id}; rename one")
        texts[skill.id] = dump_skill(skill)
        entries.append(_entry(texts[skill.id], skill.id, meta))
        sources.append({"run_id": meta.get("source_run") or None,
                        "suite": meta.get("source_suite") or suite,
                        "model": meta.get("source_model") or None})
    entries.sort(key=lambda e: e["id"])
    # one source per pack: the exporting run's when every file names the same one
    source = sources[0] if all(s == sources[0] for s in sources) else {
        "run_id": None, "suite": suite, "model": None}
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION,
                "pack_sha256": pack_sha256(entries), "selection": {"agent_skills": str(folder)},
                "source": {**source, "origin": "agent-skills"}, "skills": entries}
    return manifest, texts


def import_agent_skills(bank, folder: str | Path, *, round_: int = 0,
                        allow_other_suite: bool = False) -> list:
    """Import an Agent Skills folder into ``bank`` on probation (module contract)."""
    manifest, texts = read_agent_skills(folder, bank.config.suite)
    with tempfile.TemporaryDirectory(prefix="ratchet-agent-skills-") as tmp:
        pack = write_pack(Path(tmp) / "pack", manifest, texts)
        return bank.import_pack(pack, round_=round_, allow_other_suite=allow_other_suite)
