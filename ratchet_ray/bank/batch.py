"""All-or-nothing bank changes for a phase that makes many (the Synthesizer's adds).

Contract (a mixin over ``SkillBank``'s ``skills_dir``, ``_skills``, ``_vectors`` and ``log``):
- ``begin_batch()``: from now on skill writes stay in memory (the bank answers as if they were
  made: dedup, cap and evictions see them) and skill events are buffered; calling it again
  forgets the open batch first (an attempt retried after its actor died starts afresh).
- ``commit_batch()``: stages every changed skill file under ``skills/.batch/`` with a manifest
  naming the batch's events, writes the events as one evidence part (the commit point), then
  moves the files into ``skills/``. ``abort_batch()`` forgets the batch.
- A crash before the events are written leaves nothing of the batch (``finish_batch`` on the next
  open deletes the staged copies); a crash after finds them and moves them in. So a phase that is
  cut short can simply run again: nothing it did is doubled, and its record (the events) always
  matches the bank files.
"""

from __future__ import annotations

import json
import os
import shutil

from ratchet_ray.bank.skill_io import dump_skill, load_skill
from ratchet_ray.storage.fsutil import atomic_write_json, atomic_write_text, fsync_dir
from ratchet_ray.types import Skill

BATCH_DIR = ".batch"
MANIFEST = "batch.json"


class SkillBatch:
    """Batch commits for ``SkillBank`` (see module contract)."""

    _batch: dict[str, Skill] | None = None

    def begin_batch(self) -> None:
        """Open a batch; an open one is forgotten first (a retried attempt starts afresh)."""
        if self._batch is not None:
            self.abort_batch()
        self._batch = {}
        self.log.held = True

    def in_batch(self, skill: Skill) -> bool:
        """Keep ``skill``'s write in the batch (True) or let it go to disk now (False)."""
        if self._batch is None:
            return False
        self._batch[skill.id] = skill
        self._skills[skill.id] = skill
        return True

    def commit_batch(self) -> list[str]:
        """Commit the batch (see module contract); returns the ids of the skills it changed."""
        staged, self._batch = self._batch or {}, None
        self.log.held = False
        events = self.log.pending_keys()
        if not staged:
            self.log.flush()
            return []
        folder = self.skills_dir / BATCH_DIR
        if folder.exists():
            shutil.rmtree(folder)
        for skill in staged.values():
            atomic_write_text(folder / f"{skill.id}.yaml", dump_skill(skill))
        atomic_write_json(folder / MANIFEST, {"events": events})
        self.log.flush()  # the commit point: every event of the batch in one part
        self._move_in(folder)
        return sorted(staged)

    def abort_batch(self) -> None:
        """Forget a batch (its phase failed): the bank is again what the files say."""
        staged, self._batch = self._batch or {}, None
        self.log.held = False
        self.log.discard()
        for skill_id in staged:
            path = self.skills_dir / f"{skill_id}.yaml"
            if path.is_file():
                self._skills[skill_id] = load_skill(path)
            else:
                self._skills.pop(skill_id, None)
                self._vectors.pop(skill_id, None)  # dedup must not see a skill never added

    def _move_in(self, folder) -> None:
        for path in sorted(folder.glob("*.yaml")):
            os.replace(path, self.skills_dir / path.name)
        fsync_dir(self.skills_dir)
        shutil.rmtree(folder)

    def finish_batch(self) -> str:
        """On open: move in a committed batch a crash interrupted, or drop an uncommitted one.
        Returns "committed", "dropped" or "" (no batch on disk)."""
        folder = self.skills_dir / BATCH_DIR
        if not folder.is_dir():
            return ""
        try:
            wanted = {tuple(e) for e in json.loads((folder / MANIFEST).read_text())["events"]}
        except (OSError, ValueError, KeyError, TypeError):
            wanted = set()  # no manifest: the crash came before the commit point
        if wanted and wanted & self.log.recorded_keys():
            self._move_in(folder)
            return "committed"
        shutil.rmtree(folder)
        return "dropped"
