"""Property: random add / retire / evict / reinstate / snapshot / restore / curate sequences never
exceed the active cap, never delete a skill file, never remove an evidence row, and the files on
disk always read back as the bank in memory."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from skill_builders import TOPICS, make_skill, routed_capsules
from fakes import HashEmbedder
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.bank.skill_io import load_skill_folder
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.evidence.store import EvidenceStore

EXTRA = ["lime", "onyx", "opal", "ruby", "jade", "teal", "amber", "coral"]


class BankMachine(RuleBasedStateMachine):
    @initialize(cap=st.integers(1, 4))
    def open_bank(self, cap: int):
        self.root = Path(tempfile.mkdtemp(prefix="bankprop-"))
        self.cap = cap
        self.config = LoopConfig(curator={"active_cap": cap, "min_trials": 4})
        self.bank = SkillBank(self.root, embedder=HashEmbedder(), config=self.config, run_id="p")
        self.store = EvidenceStore(self.root)
        self.round = 0
        self.next_id = 0
        self.snapshots: list[int] = []
        self.files_seen: set[str] = set()
        self.rows_seen = 0

    @rule(topic=st.sampled_from(TOPICS), extra=st.sampled_from(EXTRA), locked=st.booleans())
    def add(self, topic: str, extra: str, locked: bool):
        self.next_id += 1
        skill = make_skill(f"k{self.next_id}", f"{topic} {extra}", do_not_retire=locked)
        active_before = len(self.bank.active())
        result = self.bank.add(skill, round_=self.round)
        if result.status == "cap_full":
            assert active_before == self.cap and all(s.do_not_retire for s in self.bank.active())
        if result.evicted:
            assert active_before == self.cap
            assert all(not self.bank.get(e).do_not_retire for e in result.evicted)

    @rule(data=st.data())
    def retire(self, data):
        candidates = [s.id for s in self.bank.active() if not s.do_not_retire]
        if candidates:
            self.bank.retire(data.draw(st.sampled_from(candidates)), round_=self.round, reason="prop")

    @rule(data=st.data())
    def reinstate(self, data):
        shelved = [s.id for s in self.bank.all() if not s.is_active]
        if shelved:
            self.bank.reinstate(data.draw(st.sampled_from(shelved)), round_=self.round)

    @rule(data=st.data(), passed=st.integers(0, 5), failed=st.integers(0, 5))
    def route_capsules(self, data, passed: int, failed: int):
        active = [s.id for s in self.bank.active()]
        if active:
            skill_id = data.draw(st.sampled_from(active))
            rows = routed_capsules("p", skill_id, self.round, passed, failed)
            self.store.append("capsule", self.round,
                              [c.model_copy(update={"capsule_id": f"{c.capsule_id}-{self.next_id}"})
                               for c in rows])
            self.next_id += 1

    @rule()
    def curate(self):
        self.bank.curate(self.round)

    @rule()
    def end_round(self):
        self.bank.snapshot(self.round)
        self.snapshots.append(self.round)
        self.round += 1

    @precondition(lambda self: bool(self.snapshots))
    @rule(data=st.data())
    def restore(self, data):
        self.bank.restore(data.draw(st.sampled_from(self.snapshots)), current_round=self.round)

    @invariant()
    def never_over_cap_never_delete_never_lose_rows(self):
        assert len(self.bank.active()) <= self.cap
        files = {p.name for p in (self.root / "skills").glob("*.yaml")}
        assert self.files_seen <= files
        self.files_seen = files
        rows = sum(self.store.row_count(kind) for kind in self.store.KINDS)
        assert rows >= self.rows_seen
        self.rows_seen = rows
        on_disk = {s.id: s for s in load_skill_folder(self.root / "skills")} if files else {}
        assert on_disk == {s.id: s for s in self.bank.all()}

    def teardown(self):
        shutil.rmtree(self.root, ignore_errors=True)


BankMachine.TestCase.settings = settings(
    max_examples=25, stateful_step_count=20, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_bank_properties = BankMachine.TestCase
