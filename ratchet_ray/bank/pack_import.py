"""``import_pack``: a skill pack into a bank, on probation (``governance.probation``).

Contracts:
- The pack is verified first (``pack_format.read_pack``) and its source suite checked (another
  suite's: ``PackError`` unless ``allow_other_suite``); every skill is parsed before any is
  written, so a refused pack changes nothing.
- One ``ImportLine`` per pack skill, sorted by id: ``same`` (a bank skill holds the same
  content, whatever its id and status: a skill retired here is not brought back), ``added``,
  ``renamed`` (its id is taken by other content or was used before: it enters as ``<id>_<n>``,
  the smallest free n >= 2), ``too_long`` (over ``synth.max_skill_chars``), ``skipped``
  (deprecated in the source run).
- An entered skill is ACTIVE while the bank has room under ``curator.active_cap``, else
  CANDIDATE (an unproven import never evicts a native skill); a pack's candidate stays one;
  ``do_not_retire`` is dropped (said in its line). Its ``loaded`` event's reason starts
  ``pack:<pack_sha256[:16]>`` (``PACK_REASON_PREFIX``), which puts it on probation
  (``probation=False`` or ``bank.probation`` false, the transfer control: ``trusted-pack:``,
  native at once). Nothing of its source record enters this run's evidence.
- The manifest is kept as ``<run>/packs/<pack_sha256[:16]>.json`` with the ids entered under, so
  ``ratchet skill list`` shows where each imported skill came from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ratchet_ray.bank.skill_contract import unique_id
from ratchet_ray.bank.skill_io import SkillFileError, dump_skill, parse_skill
from ratchet_ray.storage.fsutil import atomic_write_json
from ratchet_ray.bank.pack_format import IMPORTS_DIR, PackError, read_pack
from ratchet_ray.governance.probation import (PACK_REASON_PREFIX, TRUSTED_REASON_PREFIX,
                                              probation_floor)
from ratchet_ray.types import Skill, SkillStatus


@dataclass(frozen=True)
class ImportLine:
    """What became of one pack skill (module contract)."""

    action: str
    pack_id: str
    skill_id: str
    status: str | None
    note: str

    def line(self) -> str:
        return f"{self.action:9} {self.pack_id}" + (
            f" -> {self.skill_id}" if self.skill_id != self.pack_id else "") + f": {self.note}"


def content_key(skill: Skill) -> str:
    """The skill's text with its id, name and status left out: what 'same content' compares."""
    return dump_skill(skill.model_copy(update={"id": "x", "name": "x",
                                               "status": SkillStatus.ACTIVE}))


def check_pack(pack: str | Path, suite: str, allow_other_suite: bool = False
               ) -> tuple[dict, dict[str, str]]:
    """The verified pack (``pack_format.read_pack``) whose every skill parses, as
    ``import_pack`` reads it (so a dry run refuses what the import would); refused with
    ``PackError`` when it comes from another suite than ``suite`` and ``allow_other_suite`` is
    false."""
    manifest, texts = read_pack(pack)
    source = manifest.get("source") or {}
    if source.get("suite") != suite and not allow_other_suite:
        raise PackError(f"{pack}: exported from a {source.get('suite')!r} run, this run's suite is "
                        f"{suite!r}; pass --allow-other-suite (bank.allow_other_suite) to import "
                        "it anyway")
    _parsed(pack, texts)
    return manifest, texts


def _parsed(pack: str | Path, texts: dict[str, str]) -> dict[str, Skill]:
    """Each pack skill parsed; the first that does not: ``PackError`` naming it and the fix."""
    incoming = {}
    for skill_id, text in texts.items():
        try:
            incoming[skill_id] = parse_skill(text, f"{pack}/skills/{skill_id}.yaml")
        except SkillFileError as exc:
            raise PackError(f"{pack}: skill {skill_id!r} is not a valid skill: "
                            f"{exc.problems[0]}; re-export the pack") from exc
    return incoming


def import_pack(bank, pack: Path, *, round_: int = 0, allow_other_suite: bool = False,
                probation: bool = True) -> list[ImportLine]:
    """Import ``pack`` into ``bank`` (module contract): one line per pack skill."""
    manifest, texts = check_pack(pack, bank.config.suite, allow_other_suite)
    source = manifest.get("source") or {}
    incoming = _parsed(pack, texts)
    digest = str(manifest["pack_sha256"])[:16]
    floor = probation_floor(bank.config.curator)
    by_content = {content_key(s): s for s in bank.all()}
    here = {s.id for s in bank.all()} | bank.log.registered_ids()
    taken = here | set(incoming)
    cap, cap_chars = bank.config.curator.active_cap, bank.config.synth.max_skill_chars
    active = len(bank.active())
    lines, entered = [], {}
    for pack_id in sorted(incoming):
        skill = incoming[pack_id]
        same = by_content.get(content_key(skill))
        if same is not None:
            lines.append(ImportLine("same", pack_id, same.id, same.status.value,
                                    f"already in the bank as {same.id} ({same.status.value}); "
                                    "not duplicated"))
            continue
        if skill.status is SkillStatus.DEPRECATED:
            lines.append(ImportLine("skipped", pack_id, pack_id, None,
                                    "deprecated in the source run (export with --status active "
                                    "to leave it out)"))
            continue
        size = len(dump_skill(skill))
        if size > cap_chars:
            lines.append(ImportLine("too_long", pack_id, pack_id, None,
                                    f"{size} chars > cap {cap_chars}; not imported"))
            continue
        action, new_id = "added", pack_id
        if pack_id in here:
            new_id = unique_id(pack_id, taken)  # taken holds pack_id: a suffix
            taken.add(new_id)
            action = "renamed"
            skill = skill.model_copy(update={
                "id": new_id, "name": new_id if skill.name == pack_id else skill.name})
        status = SkillStatus.CANDIDATE
        if skill.status is SkillStatus.ACTIVE and active < cap:
            status, active = SkillStatus.ACTIVE, active + 1
        # An import earns its place: a pack cannot make its skill exempt from retirement here.
        exempt = skill.do_not_retire
        skill = skill.model_copy(update={"status": status, "do_not_retire": False})
        why = ("id taken here by a different skill; " if action == "renamed" else "")
        why += "do_not_retire dropped; " if exempt else ""
        room = "" if status is SkillStatus.ACTIVE or incoming[pack_id].status is not \
            SkillStatus.ACTIVE else f"active cap {cap} full: candidate; "
        trial = (f"on probation until {floor} trials here" if probation
                 else "without probation (bank.probation false)")
        note = (f"{why}{room}{trial} "
                f"(source run {source.get('run_id')}, {source.get('suite')})")
        bank._write(skill)
        bank.log.emit(round_, new_id, "loaded", status, None,
                      f"{PACK_REASON_PREFIX if probation else TRUSTED_REASON_PREFIX}{digest} "
                      f"{note}")
        by_content[content_key(skill)] = skill
        entered[pack_id] = new_id
        lines.append(ImportLine(action, pack_id, new_id, status.value, note))
    if entered:  # the manifest first: a skill list never meets an import it cannot explain
        record = bank.run_dir / IMPORTS_DIR / f"{digest}.json"
        before = json.loads(record.read_text()).get("imported_as", {}) if record.is_file() else {}
        atomic_write_json(record, {**manifest, "imported_as": {**before, **entered},
                                   "imported_round": round_})
    bank.log.flush()
    return lines

