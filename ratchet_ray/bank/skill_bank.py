"""SkillBank: the only writer of a run's ``skills/`` and ``meta-skills/`` folders.

Contracts:
- Nothing is deleted: retirement, eviction and rollback flip ``status``; every state change (and
  every rejected add) is a ``skill_event`` row.
- ``add`` checks, in order: schema (``invalid``), id in use (``duplicate``), serialised length >
  ``synth.max_skill_chars`` (``too_long``), cosine of full-YAML embeddings >=
  ``synth.dedup_threshold`` to a bank skill (deprecated ones too with
  ``synth.dedup_against_deprecated``; ``duplicate``, duplicate_of = the nearest), then the active
  cap: a full bank evicts whom ``governance.capacity.evictions`` names, or, if every ACTIVE skill
  is exempt, refuses (``cap_full``, bank unchanged). A bank opened with ``embedder=None`` refuses.
- ACTIVE skills never exceed ``curator.active_cap``, unless the user's ``do_not_retire`` skills
  alone do (``load`` then imports the excess as ``candidate``).
- ``load(folder)`` validates every file first (one bad file: ``SkillFileError`` naming file and
  field, bank unchanged), then imports the skills not yet in the bank, without dedup; pointed at
  the bank's own ``skills/`` it registers files dropped there.
- One ACTIVE MetaSkill per suite (``ensure_default_metaskill`` copies the shipped default in);
  none is served with ``meta.enabled`` false (A3).
- ``begin_batch()`` keeps skill writes in memory (dedup, cap and evictions see them) and buffers
  events; ``commit_batch()`` stages the files under ``skills/.batch/`` with a manifest of the
  events, writes the events as one part (the commit point), then moves the files in. On open, a
  staged batch whose events are written is moved in, else dropped (``batch_recovery``).
- Status flips (evict, retire, reinstate, curate, restore) write their events first, as one
  part, then the files; opening with ``recover=True`` (the writer) applies a logged flip a
  crash cut short (``recovered``), so events and files agree and nothing is logged twice.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from ratchet_ray.bank import checkpoints
from ratchet_ray.bank.metaskills import default_metaskill, dump_metaskill, load_metaskill
from ratchet_ray.bank.pack_import import ImportLine, import_pack
from ratchet_ray.bank.skill_events import AddResult, BankError, EventLog
from ratchet_ray.bank.skill_io import (SkillFileError, dump_skill, load_skill, load_skill_folder,
                                       parse_skill, validate_skill)
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.queries import (EMPTY_STATS, SkillStats, TamperingStats, skill_stats,
                                          tampering_by_skill)
from ratchet_ray.governance import capacity, counterfactual, curator, probation, rollback
from ratchet_ray.governance.cheat_probe import CheatStats, cheats_for_curation
from ratchet_ray.storage.fsutil import atomic_write_json, atomic_write_text, fsync_dir
from ratchet_ray.llm.base import Embedder, cosine_matrix
from ratchet_ray.types import MetaSkill, Skill, SkillStatus

__all__ = ["AddResult", "BankError", "SkillBank"]
ACTIVE, DEPRECATED, CANDIDATE = SkillStatus.ACTIVE, SkillStatus.DEPRECATED, SkillStatus.CANDIDATE
BATCH_DIR, BATCH_MANIFEST = ".batch", "batch.json"
REFINED_EVENT = "refined"
"""The skill event that deprecates a version its refinement replaced."""


class SkillBank:
    """The governed skill library of one run (see module contracts)."""

    def __init__(self, run_dir: str | Path, *, embedder: Embedder | None, config: LoopConfig,
                 run_id: str, recover: bool = True):
        self.run_dir = Path(run_dir)
        self.skills_dir = self.run_dir / "skills"
        self.meta_dir = self.run_dir / "meta-skills"
        self._root = self.run_dir if self.run_dir.is_dir() else None  # never made again once found
        self.embedder, self.config, self.run_id = embedder, config, run_id
        self.log = EventLog(self.run_dir, run_id)
        self.batch_recovery = self._finish_batch() if recover else ""
        skills = (load_skill_folder(self.skills_dir, require_id_filenames=True)
                  if self.skills_dir.is_dir() else [])
        metas = [load_metaskill(p) for p in sorted(self.meta_dir.glob("*.md"))]
        self._skills: dict[str, Skill] = {s.id: s for s in skills}
        self._metas: dict[str, MetaSkill] = {m.id: m for m in metas}
        self._vectors: dict[str, np.ndarray] = {}
        self._batch: dict[str, Skill] | None = None  # an open batch's skills (begin_batch)
        # Only a writer finishes cut flips (a read-only CLI command opens with recover=False).
        self.recovered = self._finish_logged_flips() if recover else []

    # ------------------------------------------------------------------ reading
    def active(self) -> list[Skill]:
        return [s for s in self.all() if s.is_active]

    def all(self) -> list[Skill]:
        return [self._skills[k] for k in sorted(self._skills)]

    def get(self, skill_id: str) -> Skill:
        if skill_id not in self._skills:
            raise BankError(f"unknown skill id {skill_id!r}; `ratchet skill list` shows the bank")
        return self._skills[skill_id]

    def status_counts(self) -> dict[str, int]:
        statuses = [skill.status for skill in self._skills.values()]
        return {s.value: statuses.count(s) for s in SkillStatus}

    def stats(self) -> dict[str, SkillStats]:
        """Per-skill contribution over TRAIN capsules, from the evidence: c-hat, or c_cf over the
        counterfactual probes when ``curator.counterfactual.retire_on`` is ``c_cf``."""
        with self.log.store.connect() as con:
            if self.config.curator.counterfactual.retire_on == "c_cf":
                return counterfactual.counterfactual_stats(con)
            return skill_stats(con, "train")

    def cheats(self) -> dict[str, CheatStats]:
        """Per skill, its routed impossible twins when the cheat rule is on (``cheat_probe``
        enabled with ``retire``), else nothing (``governance.cheat_probe``)."""
        with self.log.store.connect() as con:
            return cheats_for_curation(con, self.config.cheat_probe)

    def tampering(self) -> dict[str, TamperingStats]:
        """Per skill, its routed TRAIN capsules graded as an attack on the grader (the Curator's
        tampering rule, ``curator.retire_on_tampering``)."""
        with self.log.store.connect() as con:
            return tampering_by_skill(con, "train")

    def imported(self) -> dict[str, str]:
        """``{skill id: pack hash prefix}`` of the bank's skills that came from a pack."""
        return probation.imported(self.log.store, self._skills)

    def probation(self, stats: dict[str, SkillStats] | None = None) -> dict[str, int]:
        """``{skill id: trials earned here}`` of the imports on probation (``governance.probation``)."""
        return probation.on_probation(self._skills, self.imported(),
                                      lambda: self.stats() if stats is None else stats,
                                      self.config.curator)

    # ------------------------------------------------------------------ crash recovery
    def _finish_logged_flips(self) -> list[str]:
        """Apply logged status flips a crash cut short: an event newer than its skill's file with
        another ``status_after`` (flips log first) rewrites the file, logging nothing twice; a file
        written after its last event (a hand edit) is left alone."""
        if not self._skills or not any(self.log.store.part_paths("skill_event")):
            return []
        with self.log.store.connect() as con:
            rows = nq.fetch_all(con, "last_status_flips")
        fixed = []
        for skill_id, status, logged_at in rows:
            skill = self._skills.get(skill_id)
            path = self.skills_dir / f"{skill_id}.yaml"
            if skill is None or skill.status.value == status or path.stat().st_mtime > logged_at:
                continue
            self._write(skill.model_copy(update={"status": SkillStatus(status)}))
            fixed.append(skill_id)
        return fixed

    # ------------------------------------------------------------------ writing skills
    def _write(self, skill: Skill) -> None:
        if self._batch is not None:  # an open batch commits it later, with its events
            self._batch[skill.id] = skill
        else:
            atomic_write_text(self.skills_dir / f"{skill.id}.yaml", dump_skill(skill), self._root)
        self._skills[skill.id] = skill

    def _set_status(self, skill_id: str, status: SkillStatus) -> None:
        self._write(self._skills[skill_id].model_copy(update={"status": status}))

    def _make_room(self, round_: int, stats: dict[str, SkillStats] | None, extra: int = 1
                   ) -> list[str] | None:
        """Evict so ``extra`` more ACTIVE skills fit (``governance.capacity``); None: impossible."""
        plan = capacity.evictions(self.active(), lambda: self.stats() if stats is None else stats,
                                  self.config.curator, round_=round_, store=self.log.store,
                                  probation=self.probation, extra=extra)
        if plan is None:
            return None
        for skill_id, record, reason in plan:
            self.log.emit(round_, skill_id, "evicted", DEPRECATED, record, reason)
        if plan:
            self._flip({skill_id: DEPRECATED for skill_id, _, _ in plan})
        return [skill_id for skill_id, _, _ in plan]

    def _flip(self, statuses: dict[str, SkillStatus]) -> None:
        """Write the events emitted so far (one part), then the skills' new statuses: a crash in
        between leaves events that ``_finish_logged_flips`` applies on the next open."""
        self.log.flush()
        for skill_id, status in statuses.items():
            self._set_status(skill_id, status)

    def _embed(self, skills: list[Skill]) -> np.ndarray:
        if self.embedder is None:
            raise BankError("this SkillBank was opened without an embedder, so it cannot dedup new "
                            "skills; construct it with embedder=make_embedder(config.llm)")
        return self.embedder.embed([dump_skill(s) for s in skills])

    def _nearest(self, skill: Skill, exclude_lineage: str | None = None
                 ) -> tuple[str | None, float]:
        missing = [s for s in self.all() if s.id not in self._vectors]
        if missing:
            self._vectors.update(zip((s.id for s in missing), self._embed(missing)))
        if not self._skills:
            return None, 0.0
        ids = sorted(i for i in self._vectors if i in self._skills and (
            self.config.synth.dedup_against_deprecated or self._skills[i].status != DEPRECATED)
            and self._skills[i].lineage_id != exclude_lineage)
        if not ids:
            return None, 0.0
        sims = cosine_matrix(self._embed([skill]), np.stack([self._vectors[i] for i in ids]))[0]
        best = int(np.argmax(sims))
        return ids[best], float(sims[best])

    def _reject(self, round_: int, skill_id: str, status: str, reason: str,
                duplicate_of: str | None = None) -> AddResult:
        self.log.emit(round_, skill_id, "rejected", None, None, f"{status}: {reason}")
        self.log.flush()
        return AddResult(status=status, skill_id=skill_id, duplicate_of=duplicate_of, reason=reason)

    def _refusal(self, skill: Skill, round_: int, exclude_lineage: str | None = None,
                 what: str = "skill") -> AddResult | None:
        """The rejection of an id in use, an overlong skill or a near-duplicate of a bank skill
        (not counting ``exclude_lineage``'s versions); None when ``skill`` passes."""
        if skill.id in self._skills:
            status = self._skills[skill.id].status.value
            return self._reject(round_, skill.id, "duplicate", f"id {skill.id!r} is already in the "
                                f"bank ({status}); choose a new id", skill.id)
        size, cap = len(dump_skill(skill)), self.config.synth.max_skill_chars
        if size > cap:
            return self._reject(round_, skill.id, "too_long", f"{size} chars > cap {cap}; shorten it")
        nearest, cosine = self._nearest(skill, exclude_lineage)
        bar = self.config.synth.dedup_threshold
        if nearest is not None and cosine >= bar:
            return self._reject(round_, skill.id, "duplicate", f"cosine {cosine:.3f} to {nearest!r} "
                                f">= {bar}; write a different {what}", nearest)
        return None

    def add(self, skill: Skill | dict | str, *, round_: int,
            stats: dict[str, SkillStats] | None = None, sources: int | None = None) -> AddResult:
        """Validate, length-cap, dedup and cap-check one proposed skill (see module contracts);
        ``sources``: the failure verdicts it was drafted from, recorded on its ``added`` event."""
        try:
            if isinstance(skill, str):
                skill = parse_skill(skill, "proposed skill")
            elif not isinstance(skill, Skill):
                skill = validate_skill(skill, "proposed skill")
        except SkillFileError as exc:
            proposed = skill.get("id", "?") if isinstance(skill, dict) else "?"
            return self._reject(round_, str(proposed), "invalid", str(exc))
        refused = self._refusal(skill, round_)
        if refused is not None:
            return refused
        evicted = self._make_room(round_, stats) if skill.is_active else []
        if evicted is None:
            return self._reject(round_, skill.id, "cap_full", "every ACTIVE skill is do_not_retire "
                                f"and the cap {self.config.curator.active_cap} is reached")
        self._write(skill)
        self.log.emit(round_, skill.id, "added", skill.status, None, f"author={skill.author}",
                      sources)
        self.log.flush()
        return AddResult(status="added", skill_id=skill.id, evicted=evicted)

    def retire(self, skill_id: str, *, round_: int, contribution: float | None = None,
               trials: int | None = None, reason: str = "") -> None:
        skill = self.get(skill_id)
        if not skill.is_active:
            raise BankError(f"skill {skill_id!r} is {skill.status.value}, only ACTIVE skills retire")
        if skill.do_not_retire:
            raise BankError(f"skill {skill_id!r} is do_not_retire; set do_not_retire: false "
                            "in its YAML to let it retire")
        self.log.emit_raw(round_, skill_id, "retired", DEPRECATED, contribution, trials, reason)
        self._flip({skill_id: DEPRECATED})

    def reinstate(self, skill_id: str, *, round_: int,
                  stats: dict[str, SkillStats] | None = None) -> AddResult:
        """Make a deprecated/candidate skill ACTIVE again, evicting if the cap is full."""
        if self.get(skill_id).is_active:
            return AddResult(status="added", skill_id=skill_id, reason="already active")
        evicted = self._make_room(round_, stats)
        if evicted is None:
            return self._reject(round_, skill_id, "cap_full",
                                "cannot reinstate: the cap is full of do_not_retire skills")
        self.log.emit(round_, skill_id, "reinstated", ACTIVE, None, "")
        self._flip({skill_id: ACTIVE})
        return AddResult(status="added", skill_id=skill_id, evicted=evicted)

    def curate(self, round_: int, stats: dict[str, SkillStats] | None = None,
               tampering: dict[str, TamperingStats] | None = None
               ) -> list[curator.CurationDecision]:
        """Apply the retirement rules (score, and tampering: ``governance.curator``) to every
        ACTIVE skill and every tampering CANDIDATE; returns every decision (incl. exempt)."""
        decisions = curator.curate(self.all(), self.stats() if stats is None else stats,
                                   self.config.curator,
                                   self.tampering() if tampering is None else tampering,
                                   cheats=self.cheats())
        retired = [d for d in decisions if d.action == "retire"]
        for d in retired:
            self.log.emit_raw(round_, d.skill_id, "retired", DEPRECATED, d.contribution,
                              d.trials, d.reason)
        self._flip({d.skill_id: DEPRECATED for d in retired})  # events and files commit together
        return decisions

    # ------------------------------------------------------------------ batches
    def begin_batch(self) -> None:
        """Open a batch; an open one is forgotten first (a retried attempt starts afresh)."""
        if self._batch is not None:
            self.abort_batch()
        self._batch = {}
        self.log.held = True

    def commit_batch(self) -> list[str]:
        """Commit the batch (see module contracts); returns the ids of the skills it changed."""
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
            atomic_write_text(folder / f"{skill.id}.yaml", dump_skill(skill), self._root)
        atomic_write_json(folder / BATCH_MANIFEST, {"events": events}, self._root)
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

    def _move_in(self, folder: Path) -> None:
        for path in sorted(folder.glob("*.yaml")):
            os.replace(path, self.skills_dir / path.name)
        fsync_dir(self.skills_dir)
        shutil.rmtree(folder)

    def _finish_batch(self) -> str:
        """On open: move in a committed batch a crash interrupted, or drop an uncommitted one."""
        folder = self.skills_dir / BATCH_DIR
        if not folder.is_dir():
            return ""
        try:
            wanted = {tuple(e) for e in json.loads((folder / BATCH_MANIFEST).read_text())["events"]}
        except (OSError, ValueError, KeyError, TypeError):
            wanted = set()  # no manifest: the crash came before the commit point
        if wanted and wanted & self.log.recorded_keys():
            self._move_in(folder)
            return "committed"
        shutil.rmtree(folder)
        return "dropped"

    # ------------------------------------------------------------------ refinement
    def refine(self, revision: Skill, parent_id: str, *, round_: int,
               stats: dict[str, SkillStats] | None = None) -> AddResult:
        """Put ``revision`` in as the next version of ACTIVE, retirable ``parent_id``'s lineage
        (else ``invalid``), deprecating the parent (``refined``) and freeing its slot first. Checked
        like ``add``, but dedup skips the lineage. Joins an open batch, or commits its own."""
        parent = self._skills.get(parent_id)
        if parent is None or not parent.is_active or parent.do_not_retire:
            why = ("is not in the bank" if parent is None else
                   "is do_not_retire" if parent.do_not_retire else f"is {parent.status.value}")
            return self._reject(round_, revision.id, "invalid",
                                f"cannot refine {parent_id!r}: it {why}; only an ACTIVE skill "
                                "that may retire is refined")
        revision = revision.as_revision_of(parent).model_copy(update={"status": ACTIVE})
        refused = self._refusal(revision, round_, exclude_lineage=parent.lineage_id,
                                what="revision")
        if refused is not None:
            return refused
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
        self.log.emit(round_, parent.id, REFINED_EVENT, DEPRECATED, s,
                      f"refined: superseded by {revision.id} ({where})")
        self._write(parent.model_copy(update={"status": DEPRECATED}))
        evicted = self._make_room(round_, stats)
        if evicted is None:  # over the cap with only exempt skills: never after a freed slot
            raise BankError(f"cannot refine {parent.id!r}: the bank is over its active cap "
                            "with do_not_retire skills; raise curator.active_cap")
        self._write(revision)
        self.log.emit(round_, revision.id, "added", ACTIVE, None,
                      f"author={revision.author}; refines {parent.id} ({where})")
        self.log.flush()
        return evicted

    def import_pack(self, pack: str | Path, *, round_: int = 0, allow_other_suite: bool = False,
                    probation: bool = True) -> list[ImportLine]:
        """Import a skill pack on probation (or without: ``probation`` false, a control); one
        ``ImportLine`` per pack skill (``bank.pack_import``)."""
        return import_pack(self, Path(pack), round_=round_, allow_other_suite=allow_other_suite,
                           probation=probation)

    # ------------------------------------------------------------------ meta-skills
    def _write_meta(self, meta: MetaSkill) -> None:
        atomic_write_text(self.meta_dir / f"{meta.id}.md", dump_metaskill(meta), self._root)
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

    # ------------------------------------------------------------------ snapshots
    def snapshot(self, round_: int) -> Path:
        return checkpoints.write_snapshot(self.run_dir, round_, self.all(),
                                          self._metas.values(), self.run_id, root=self._root)

    def restore(self, round_: int, *, current_round: int | None = None, reason: str = "rollback"
                ) -> list[str]:
        """Bring back round ``round_``'s bank; skills born later become deprecated. Events are
        recorded in ``current_round`` (default ``round_``). Returns the ids whose status changed."""
        at = round_ if current_round is None else current_round
        skills, metas = checkpoints.read_snapshot(self.run_dir, round_, self.run_id)
        changed, targets = [], []
        for skill_id, target in rollback.restored(self._skills, skills, self.tampering(),
                                                  self.cheats(), self.config.curator).items():
            if self._skills.get(skill_id) != target:
                before = self._skills.get(skill_id)
                targets.append(target)
                if before is None or before.status != target.status:
                    changed.append(skill_id)
                    self.log.emit(at, skill_id, "restored", target.status, None,
                                  f"{reason}: bank of round {round_}")
        snap_metas = {m.id: m for m in metas}
        meta_targets = []
        for meta_id in sorted(set(self._metas) | set(snap_metas)):
            target = snap_metas.get(meta_id) or self._metas[meta_id].model_copy(
                update={"status": DEPRECATED})
            if self._metas.get(meta_id) != target:
                meta_targets.append(target)
                self.log.emit(at, meta_id, "meta_restored", target.status, None,
                              f"{reason}: meta-skills of round {round_}")
        self.log.flush()  # events first, then the files (module contracts)
        for target in targets:
            self._write(target)
        for target in meta_targets:
            self._write_meta(target)
        return changed

    # ------------------------------------------------------------------ import
    def load(self, folder: str | Path, *, round_: int = 0) -> list[str]:
        """Import a user's YAML bank (see module contracts); returns the ids imported."""
        return [r.skill_id for r in self.load_results(folder, round_=round_) if r.status == "added"]

    def load_results(self, folder: str | Path, *, round_: int = 0) -> list[AddResult]:
        folder = Path(folder)
        incoming = load_skill_folder(folder)
        own = folder.resolve() == self.skills_dir.resolve()
        registered = self.log.registered_ids()
        conflicts = [s.id for s in incoming if not own and s.id in self._skills
                     and self._skills[s.id] != s]
        if conflicts:
            raise BankError(f"{folder}: skill id(s) {conflicts} already in the bank with different "
                            "content; rename them (ids are never reused)")
        todo = [s for s in incoming if (s.id not in registered if own else s.id not in self._skills)]
        for skill in todo if own else []:
            self._skills.pop(skill.id)  # dropped-in files count toward the cap once registered
        results = [self._import(skill, round_, own) for skill in todo]
        self.log.flush()
        return results

    def _import(self, skill: Skill, round_: int, own: bool) -> AddResult:
        size, cap = len(dump_skill(skill)), self.config.synth.max_skill_chars
        if size > cap and not own:
            return self._reject(round_, skill.id, "too_long", f"{size} chars > cap {cap}; shorten it")
        note, evicted = "imported", []
        if skill.is_active:
            evicted = self._make_room(round_, None) if size <= cap else None
            if evicted is None:  # a file already in skills/ is never dropped: it waits as candidate
                skill = skill.model_copy(update={"status": CANDIDATE})
                why = f"{size} chars > cap {cap}" if size > cap else "cap full of do_not_retire skills"
                note = f"{why}; imported as candidate"
        self._write(skill)
        self.log.emit(round_, skill.id, "loaded", skill.status, None, note)
        return AddResult(status="added", skill_id=skill.id, evicted=evicted or [], reason=note)
