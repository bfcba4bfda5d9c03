"""The meta-skill half of ``SkillBank``: one ACTIVE authoring prior per suite.

Contract: a mixin over ``SkillBank``'s ``meta_dir``, ``_metas``, ``config`` and ``log``; every
change is a ``meta_added`` / ``meta_retired`` skill_event, and nothing is deleted.
"""

from __future__ import annotations

from ratchet_ray.bank.metaskills import default_metaskill, dump_metaskill
from ratchet_ray.bank.skill_events import BankError
from ratchet_ray.bank.skill_io import write_text_atomic
from ratchet_ray.types import MetaSkill, SkillStatus

ACTIVE, DEPRECATED = SkillStatus.ACTIVE, SkillStatus.DEPRECATED


class MetaSkillShelf:
    """Meta-skill storage and selection, mixed into ``SkillBank``."""

    def _write_meta(self, meta: MetaSkill) -> None:
        write_text_atomic(self.meta_dir / f"{meta.id}.md", dump_metaskill(meta))
        self._metas[meta.id] = meta

    def metaskills(self) -> list[MetaSkill]:
        return [self._metas[k] for k in sorted(self._metas)]

    def active_metaskill(self, suite: str) -> MetaSkill | None:
        if not self.config.meta.enabled:
            return None
        active = [m for m in self._metas.values() if m.suite == suite and m.status is ACTIVE]
        return max(active, key=lambda m: (m.created_round, m.id)) if active else None

    def add_metaskill(self, meta: MetaSkill, *, round_: int) -> None:
        """Store ``meta`` as the suite's ACTIVE meta-skill, deprecating the previous one."""
        if meta.id in self._metas:
            raise BankError(f"meta-skill id {meta.id!r} already exists; choose a new id")
        for old in [m for m in self._metas.values() if m.suite == meta.suite and m.status is ACTIVE]:
            self._write_meta(old.model_copy(update={"status": DEPRECATED}))
            self.log.emit(round_, old.id, "meta_retired", DEPRECATED, None, f"replaced by {meta.id}")
        self._write_meta(meta.model_copy(update={"status": ACTIVE}))
        self.log.emit(round_, meta.id, "meta_added", ACTIVE, None, f"suite={meta.suite}")
        self.log.flush()

    def ensure_default_metaskill(self, suite: str, *, round_: int = 0) -> MetaSkill | None:
        """Copy the shipped default in when the suite has no meta-skill yet; return the active one."""
        if self.config.meta.enabled and not any(m.suite == suite for m in self._metas.values()):
            source = self.config.meta.default_file if suite == self.config.suite else None
            self.add_metaskill(default_metaskill(suite, source=source), round_=round_)
        return self.active_metaskill(suite)
