"""Recovery of a soft phase cut short (``ratchet_ray.loop.replay``): a 'lost' ``llm_call`` row is
written only when the cut attempt's replies really were lost, and a committed meta-skill is
rebuilt from its event, not added twice."""

from __future__ import annotations

from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.loop import replay
from ratchet_ray.loop.rundir import RunDir

META = "metasynth.json"


def _lost_rows(store: EvidenceStore) -> int:
    with store.connect() as con:
        return con.execute("SELECT count(*) FROM llm_call WHERE NOT ok AND role = 'metasynth'"
                           ).fetchone()[0]


def _meta_added(store: EvidenceStore, round_: int, skill_id: str) -> None:
    store.append("skill_event", round_, [{
        "run_id": "run1", "round": round_, "skill_id": skill_id, "event": "meta_added",
        "status_after": "active", "contribution": None, "trials": 0, "reason": "refresh",
        "created_at": 4e9}])


def test_a_cut_before_the_calls_were_recorded_marks_them_lost_and_reruns(tmp_path):
    run, store = RunDir(tmp_path / "run1"), EvidenceStore(tmp_path / "run1")
    replay.begin(run, 3, META)
    assert replay.recover_metasynth(run, store, 3, META) is None, "nothing committed: rerun"
    assert _lost_rows(store) == 1


def test_a_cut_after_the_calls_were_recorded_writes_no_lost_row(tmp_path):
    run, store = RunDir(tmp_path / "run1"), EvidenceStore(tmp_path / "run1")
    replay.begin(run, 3, META)
    replay.mark_calls_recorded(run, 3, META)
    assert replay.recover_metasynth(run, store, 3, META) is None
    assert _lost_rows(store) == 0, "its replies are in the evidence already"
    _meta_added(store, 3, "default_mbpp_v2")
    done = replay.recover_metasynth(run, store, 3, META)
    assert done["created"] == "default_mbpp_v2" and _lost_rows(store) == 0
    assert run.read_round_json(3, META) == done, "the rebuilt result is the phase's file"
