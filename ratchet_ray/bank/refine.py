"""Skill refinement in the bank (``synth.refine``, arm A10, beyond the paper).

Contract (a mixin over ``SkillBank``: ``_skills``, ``_reject``, ``_nearest``, ``_make_room``,
``_write``, ``log``, the batch methods and ``config``):
- ``refine(revision, parent_id, *, round_, stats=None) -> AddResult`` puts ``revision`` in the
  bank as the next version of ``parent_id``'s lineage and deprecates ``parent_id`` with the
  event ``refined`` (reason ``refined: superseded by <id> (lineage L, version n)``). The
  revision gets ``lineage`` = the parent's lineage id and ``lineage_version`` = the parent's + 1;
  its ``added`` event's reason names the parent, lineage and version. Each version is its own
  skill id, so its evidence (capsules, verdicts, c-hat, c_cf) is its own and never pooled with
  another version's.
- Checked like ``add``: the parent must be ACTIVE and not ``do_not_retire`` (else ``invalid``,
  bank unchanged), the revision's id unused (``duplicate``), its length under
  ``synth.max_skill_chars`` (``too_long``), and dedup (``synth.dedup_threshold``) against every
  bank skill except the versions of its own lineage (a revision is meant to be close to them).
  The cap: the parent's slot is freed first, so a refinement never evicts unless the bank is
  over the cap already; ``_make_room`` evicts as for ``add`` if it is.
- Atomic: inside an open batch (the synth phase) it joins that batch; otherwise it opens and
  commits its own, so the parent's deprecation and the revision's add land together or not at
  all.
"""

from __future__ import annotations

from ratchet_ray.bank.skill_events import AddResult, BankError
from ratchet_ray.bank.skill_io import dump_skill
from ratchet_ray.evidence.queries import EMPTY_STATS, SkillStats
from ratchet_ray.types import Skill, SkillStatus

REFINED_EVENT = "refined"
"""The skill event that deprecates a version its refinement replaced."""


class SkillRefiner:
    """``SkillBank.refine`` (see module contract)."""

    def refine(self, revision: Skill, parent_id: str, *, round_: int,
               stats: dict[str, SkillStats] | None = None) -> AddResult:
        parent = self._skills.get(parent_id)
        if parent is None or not parent.is_active or parent.do_not_retire:
            why = ("is not in the bank" if parent is None else
                   "is do_not_retire" if parent.do_not_retire else f"is {parent.status.value}")
            return self._reject(round_, revision.id, "invalid",
                                f"cannot refine {parent_id!r}: it {why}; only an ACTIVE skill "
                                "that may retire is refined")
        revision = revision.model_copy(update={
            "lineage": parent.lineage_id, "lineage_version": parent.lineage_version + 1,
            "status": SkillStatus.ACTIVE})
        if revision.id in self._skills:
            return self._reject(round_, revision.id, "duplicate",
                                f"id {revision.id!r} is already in the bank; choose a new id",
                                revision.id)
        size, cap = len(dump_skill(revision)), self.config.synth.max_skill_chars
        if size > cap:
            return self._reject(round_, revision.id, "too_long",
                                f"{size} chars > cap {cap}; shorten it")
        nearest, cosine = self._nearest(revision, exclude_lineage=parent.lineage_id)
        bar = self.config.synth.dedup_threshold
        if nearest is not None and cosine >= bar:
            return self._reject(round_, revision.id, "duplicate", f"cosine {cosine:.3f} to "
                                f"{nearest!r} >= {bar}; write a different revision", nearest)
        own_batch = self._batch is None
        if own_batch:
            self.begin_batch()
        try:
            evicted = self._replace(parent, revision, round_, stats)
        except BaseException:
            if own_batch:
                self.abort_batch()
            raise
        if own_batch:
            self.commit_batch()
        return AddResult(status="added", skill_id=revision.id, evicted=evicted)

    def _replace(self, parent: Skill, revision: Skill, round_: int,
                 stats: dict[str, SkillStats] | None) -> list[str]:
        where = f"lineage {revision.lineage}, version {revision.lineage_version}"
        s = (stats if stats is not None else self.stats()).get(parent.id, EMPTY_STATS)
        self.log.emit(round_, parent.id, REFINED_EVENT, SkillStatus.DEPRECATED, s,
                      f"refined: superseded by {revision.id} ({where})")
        self._write(parent.model_copy(update={"status": SkillStatus.DEPRECATED}))
        evicted = self._make_room(round_, stats)
        if evicted is None:  # over the cap with only exempt skills: never after a freed slot
            raise BankError(f"cannot refine {parent.id!r}: the bank is over its active cap "
                            "with do_not_retire skills; raise curator.active_cap")
        self._write(revision)
        self.log.emit(round_, revision.id, "added", SkillStatus.ACTIVE, None,
                      f"author={revision.author}; refines {parent.id} ({where})")
        self.log.flush()
        return evicted

    def lineage(self, lineage_id: str) -> list[Skill]:
        """Every version of one lineage in the bank, oldest first."""
        return sorted((s for s in self._skills.values() if s.lineage_id == lineage_id),
                      key=lambda s: s.lineage_version)
