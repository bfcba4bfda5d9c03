"""``export_pack(run_dir, out, status=...)``: a run's bank as a skill pack (``bank.pack_format``);
``build_pack(run_dir, status=...)`` the same manifest and texts, written nowhere.

Contracts:
- Only reads the run dir (``skills/``, ``config.yaml``, the evidence); writes only ``out``
  (``pack_format.write_pack``: refused when a pack is already there).
- Each skill entry carries its canonical YAML's sha256, its ``lineage`` (id, version, the parent
  it refines, every version in the source bank), its ``status_history`` (the source's skill
  events), its ``record`` in the source run (``_record``: ``report.data.skill_rows``' trials,
  c-hat and c_cf with 95% Wilson intervals, routings, tampering, twins, probe similarity and
  routed-but-ignored; ``governance.bypass.skill_costs``' injected tokens and their cost at the
  source model's input price) and its ``provenance`` (the pack it was imported from, if any).
- Secrets never enter a pack: every string written goes through ``redact.redact``, and the
  source config enters only as the sha256 of its redacted text. A skill whose text held a
  secret is exported masked (``***``), its hash the masked text's.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

from ratchet_ray.governance.probation import imported_from_events
from ratchet_ray.bank.skill_io import dump_skill, load_skill_folder, validate_skill
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.run_config.files import load_config
from ratchet_ray.evidence.queries import skill_stats
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.governance import bypass
from ratchet_ray.llm.accounting import price_table
from ratchet_ray.bank.pack_format import (FORMAT, FORMAT_VERSION, SKILLS_DIR, PackError,
                                          pack_sha256, skill_sha256, write_pack)
from ratchet_ray.redact import redact
from ratchet_ray.report.data import SkillRow, models_used, skill_events, skill_rows
from ratchet_ray.types import Skill


def _scrub(value: Any) -> Any:
    """``value`` with every string redacted (recursively)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v) for v in value]
    return value


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)


def _ci(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else [_round(interval[0]), _round(interval[1])]


def _source(run_dir: Path, config: LoopConfig, con) -> dict[str, Any]:
    config_file = run_dir / "config.yaml"
    text = redact(config_file.read_text(encoding="utf-8")) if config_file.is_file() else ""
    model = config.llm.model
    if model is None:  # the backend's default: the model the Solver's calls really used
        used = [r["model"] for r in models_used(con) if r.get("role") == "solver" and r["model"]]
        model = used[0] if used else None
    return {"run_id": run_dir.name, "suite": config.suite, "arm": config.arm, "seed": config.seed,
            "backend": config.llm.backend, "embedder": config.llm.embedder or config.llm.backend,
            "model": model, "config_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "last_event_round": max((r["round"] for r in skill_events(con)), default=None)}


def _lineage(skill: Skill, bank: list[Skill]) -> dict[str, Any]:
    versions = sorted((s for s in bank if s.lineage_id == skill.lineage_id),
                      key=lambda s: s.lineage_version)
    parent = next((s.id for s in versions if s.lineage_version == skill.lineage_version - 1), None)
    return {"lineage_id": skill.lineage_id, "version": skill.lineage_version, "refines": parent,
            "versions": [{"id": s.id, "version": s.lineage_version, "status": s.status.value}
                         for s in versions]}


def _record(row: SkillRow | None, cost: dict[str, Any] | None, model: str | None,
            config: LoopConfig) -> dict[str, Any]:
    row, cost = row or SkillRow("", "", None, None, None, None), cost or {}  # unmeasured: zeros
    tokens = cost.get("train_tokens", 0) + cost.get("eval_tokens", 0)
    usd = price_table(config.llm).cost(model, tokens, 0) if model else None
    return {
        "trials": row.trials, "c_hat": _round(row.c_hat), "c_hat_ci95": _ci(row.c_hat_ci),
        "cf_pairs": row.cf_pairs, "c_cf": _round(row.c_cf), "c_cf_ci95": _ci(row.c_cf_ci),
        "routed_train": row.routed_train, "routed_eval": row.routed_eval,
        "tampering_train": row.tampering_train, "tampering_eval": row.tampering_eval,
        "impossible_twins": row.twins, "impossible_twin_passes": row.twin_passes,
        "probe_similarity": _round(row.probe_similarity),
        "routed_but_ignored": bool(row.ignored),
        "injection_tokens_per_routing": cost.get("tokens_per_routing"),
        "injection_tokens": tokens,
        "injection_cost_usd": None if usd is None else round(usd, 6),
    }


def export_pack(run_dir: str | Path, out: str | Path, *, status: str = "active"
                ) -> dict[str, Any]:
    """Write the pack of ``run_dir``'s skills of ``status`` ('all' for every one) to ``out``;
    returns its manifest (module contract)."""
    manifest, texts = build_pack(run_dir, status=status)
    write_pack(Path(out), manifest, texts)
    return manifest


def build_pack(run_dir: str | Path, *, status: str = "active"
               ) -> tuple[dict[str, Any], dict[str, str]]:
    """The pack of ``run_dir``'s skills of ``status`` as ``(manifest, {id: yaml text})``, written
    nowhere (``export_pack`` writes it; ``packs.agent_skills`` renders it as SKILL.md files)."""
    run_dir = Path(run_dir)
    config_file = run_dir / "config.yaml"
    config = load_config([config_file] if config_file.is_file() else [])
    folder = run_dir / "skills"
    bank = load_skill_folder(folder, require_id_filenames=True) if folder.is_dir() else []
    chosen = [s for s in bank if status == "all" or s.status.value == status]
    if not chosen:
        raise PackError(f"{run_dir}: no {'' if status == 'all' else status + ' '}skill to "
                        "export; pass --status all, or another run")
    store = EvidenceStore(run_dir)
    with store.connect() as con:
        source = _source(run_dir, config, con)
        rows = {r.skill_id: r for r in skill_rows(con, run_dir)}
        events = skill_events(con)
        costs = {r["skill_id"]: r
                 for r in bypass.skill_costs(con, chosen, skill_stats(con, "train"))}
    imported = imported_from_events(events)
    entries, texts = [], {}
    for skill in sorted(chosen, key=lambda s: s.id):
        # A secret in a skill's text (a leaked key the LLM copied) is masked, never exported.
        clean = validate_skill(_scrub(skill.model_dump(mode="json")), f"skill {skill.id}")
        text = dump_skill(clean)
        texts[skill.id] = text
        history = [{"round": e["round"], "event": e["event"],
                    "status_after": e["status_after"] or None, "reason": e["reason"] or ""}
                   for e in events if e["skill_id"] == skill.id and e["event"] != "rejected"]
        entries.append(_scrub({
            "id": skill.id, "file": f"{SKILLS_DIR}/{skill.id}.yaml", "sha256": skill_sha256(text),
            "status": skill.status.value, "lineage": _lineage(skill, bank),
            "status_history": history,
            "record": _record(rows.get(skill.id), costs.get(skill.id), source["model"], config),
            "provenance": ({"imported_from_pack": imported[skill.id]}
                           if skill.id in imported else {"native": True}),
        }))
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION,
                "pack_sha256": pack_sha256(entries), "exported_at": round(time.time(), 3),
                "selection": {"status": status}, "source": _scrub(source), "skills": entries}
    return manifest, texts
