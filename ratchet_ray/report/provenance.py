"""Where each skill of a run came from, and its probation state, for the report's skills table.

Contracts:
- ``skill_provenance(con, run_dir, events, trials)`` reads only the run's evidence and bank
  files: the ``loaded`` events (``pack:<hash prefix>`` imports on probation,
  ``trusted-pack:<hash prefix>`` without), the manifests in ``<run>/packs/<hash prefix>.json``,
  the probation floor in ``config.yaml`` and the round the train trials reached it (named query
  ``probation_promotions``). Trials are those the run's Curator judges on (c-hat's, or the
  counterfactual pairs under ``retire_on: c_cf``).
- It returns ``{skill id: Provenance}`` for imported skills only (a native one has no entry).
- ``Provenance.state``: ``on probation`` (``trials`` of ``floor`` earned here), ``promoted``
  (in ``promoted_round``), ``retired on probation`` / ``evicted on probation`` (in
  ``ended_round``, before the floor), ``left probation`` (floor reached, round unknown under
  ``c_cf``) or ``no probation`` (imported with ``bank.probation`` false).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ratchet_ray.bank.pack_format import IMPORTS_DIR
from ratchet_ray.governance.probation import PACK_REASON_PREFIX, TRUSTED_REASON_PREFIX, probation_floor
from ratchet_ray.settings.schema import CuratorSettings, read_config_file
from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.queries import EMPTY_STATS, SkillStats
from ratchet_ray.types import NONE_SKILL


@dataclass(frozen=True)
class Provenance:
    """One imported skill's origin and probation state (module contract)."""

    pack: str
    """The pack's hash prefix (``pack_sha256[:16]``)."""
    renamed_from: str | None
    """Its id in the pack when the import renamed it (the id was taken here), else None."""
    source_run: str | None
    source_model: str | None
    state: str
    trials: int
    floor: int | None
    promoted_round: int | None = None
    ended_round: int | None = None

    def origin_text(self) -> str:
        """``pack 497b7dd1dc2dfdfe · run R · model M``, the parts known (and the skill's id in
        the pack when the import renamed it)."""
        parts = [f"pack {self.pack}" + (f" (its id there: {self.renamed_from})"
                                        if self.renamed_from else "")]
        parts += [f"run {self.source_run}"] if self.source_run else []
        parts += [f"model {self.source_model}"] if self.source_model else []
        return " · ".join(parts)

    def probation_text(self) -> str:
        """The probation cell: ``on probation: 3 of 20 trials``, ``promoted in round 4`` ..."""
        of = f"{self.trials} of {self.floor} trials"
        if self.state == "on probation":
            return f"on probation: {of}"
        if self.state == "promoted":
            return f"promoted in round {self.promoted_round}"
        if self.state in ("retired on probation", "evicted on probation"):
            return f"{self.state} in round {self.ended_round} ({of})"
        if self.state == "left probation":
            return f"left probation ({self.trials} ≥ {self.floor} trials)"
        return "no probation (bank.probation false)"


def raw_config(run_dir: Path) -> dict[str, Any]:
    """The run's ``config.yaml`` as written ({} without one; ``ValueError`` naming a garbled one)."""
    config = run_dir / "config.yaml"
    return read_config_file(config) if config.is_file() else {}


def curator_settings(run_dir: Path) -> CuratorSettings:
    """The run's ``curator`` settings from ``config.yaml`` (the Default without one)."""
    return CuratorSettings.model_validate(raw_config(run_dir).get("curator") or {})


def import_record(run_dir: Path, digest: str,
                  cache: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The record of the pack import ``digest`` in ``<run>/packs/`` ({} when absent), read once
    per ``cache``."""
    cache = {} if cache is None else cache
    if digest not in cache:
        path = run_dir / IMPORTS_DIR / f"{digest}.json"
        cache[digest] = json.loads(path.read_text()) if path.is_file() else {}
    return cache[digest]


def _imports(events: list[dict[str, Any]]) -> dict[str, tuple[str, bool]]:
    """``{skill id: (pack hash prefix, on probation?)}`` from the latest ``loaded`` event of each
    skill a pack brought in."""
    out = {}
    for ev in events:
        reason = str(ev.get("reason") or "")
        if ev.get("event") != "loaded":
            continue
        for prefix, probation in ((PACK_REASON_PREFIX, True), (TRUSTED_REASON_PREFIX, False)):
            if reason.startswith(prefix):
                out[ev["skill_id"]] = (reason[len(prefix):].split(" ", 1)[0], probation)
    return out


def _ended(events: list[dict[str, Any]], skill_id: str) -> dict[str, Any] | None:
    """The skill's retirement or eviction, when that is its last status change."""
    last = next((ev for ev in reversed(events) if ev["skill_id"] == skill_id and ev["event"]
                 in ("retired", "evicted", "restored", "reinstated", "loaded")), None)
    return last if last is not None and last["event"] in ("retired", "evicted") else None


def skill_provenance(con, run_dir: Path, events: list[dict[str, Any]],
                     stats: Mapping[str, SkillStats], cf: Mapping[str, SkillStats]
                     ) -> dict[str, Provenance]:
    """``{skill id: Provenance}`` of the run's imported skills (module contract). ``stats`` /
    ``cf``: each skill's c-hat record (``queries.skill_stats``, train) and counterfactual pairs
    here; the trials counted are the ones the run's Curator judges on."""
    imports = _imports(events)
    if not imports:
        return {}
    settings = curator_settings(run_dir)
    floor = probation_floor(settings)
    by_cf = settings.counterfactual.retire_on == "c_cf"
    promoted = {} if by_cf else {
        s: int(r) for s, r in nq.fetch_all(con, "probation_promotions", none=NONE_SKILL,
                                           floor=floor) if r is not None}
    manifests: dict[str, dict[str, Any]] = {}
    out = {}
    for skill_id, (digest, on_probation) in imports.items():
        manifest = import_record(run_dir, digest, manifests)
        source = manifest.get("source") or {}
        as_pack = {new: old for old, new in (manifest.get("imported_as") or {}).items()}
        k = (cf if by_cf else stats).get(skill_id, EMPTY_STATS).trials
        ended = _ended(events, skill_id)
        k_end = k if ended is None or ended.get("trials") is None else int(ended["trials"])
        promoted_round, ended_round = promoted.get(skill_id), None
        if not on_probation:
            state = "no probation"
        elif ended is not None and k_end < floor:
            state, ended_round, k = f"{ended['event']} on probation", ended["round"], k_end
        elif k >= floor:
            state = "promoted" if promoted_round is not None else "left probation"
        else:
            state = "on probation"
        out[skill_id] = Provenance(
            pack=digest, renamed_from=(as_pack[skill_id] if as_pack.get(skill_id, skill_id)
                                        != skill_id else None),
            source_run=source.get("run_id"), source_model=source.get("model"), state=state,
            trials=k, floor=floor if on_probation else None, promoted_round=promoted_round,
            ended_round=ended_round)
    return out
