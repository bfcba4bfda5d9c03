"""The closing lines of a run (report.learned): which skill was learned from how many failures,
where later rounds routed it, and the eval pass@1 with its n and a noise verdict."""

from __future__ import annotations

from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.report.learned import learned_skills, story


def _capsule(round_, split, task, skill, passed, attempt=0, impossible=False):
    return {"capsule_id": f"{round_}-{split}-{task}-{attempt}-{impossible}", "run_id": "r",
            "round": round_, "split": split, "task_id": task, "attempt": attempt,
            "skill_id": skill, "passed": passed, "impossible": impossible}


def _added(round_, skill, sources):
    return {"run_id": "r", "round": round_, "skill_id": skill, "event": "added",
            "status_after": "active", "reason": "author=synthesized", "sources": sources}


def _run(tmp_path, eval_rounds):
    store = EvidenceStore(tmp_path)
    for round_, passes in enumerate(eval_rounds):
        store.append("capsule", round_, [_capsule(round_, "eval", f"e{i}", "NONE", p)
                                         for i, p in enumerate(passes)])
    return store


def test_a_skill_learned_then_routed_is_told_with_its_sources_and_outcomes(tmp_path):
    store = _run(tmp_path, [[False, False, True]])
    store.append("skill_event", 0, [_added(0, "recursion_guard", 4)])
    store.append("skill_event", 1, [_added(1, "late_skill", 2)])
    store.append("capsule", 0, [_capsule(0, "train", "t1", "NONE", False)])
    store.append("capsule", 1, [
        _capsule(1, "train", "t1", "recursion_guard", True),
        _capsule(1, "train", "t2", "recursion_guard", False),
        _capsule(1, "eval", "e0", "recursion_guard", True),
        _capsule(1, "eval", "e1", "NONE", False),
        _capsule(1, "eval", "e2", "NONE", True),
        # neither counts: a counterfactual probe and an impossible twin
        _capsule(1, "train", "t1", "NONE", False, attempt=1),
        _capsule(1, "train", "t2", "recursion_guard", True, attempt=-1, impossible=True),
    ])
    skills = {s.skill_id: s for s in learned_skills(tmp_path)}
    assert skills["recursion_guard"].sources == 4
    assert [(r.round, r.tasks, r.passed) for r in skills["recursion_guard"].routed] == [(1, 3, 2)]
    assert skills["late_skill"].routed == []
    lines = story(tmp_path)
    assert lines[0] == ("skill recursion_guard, learned in round 0 from 4 failures, was routed "
                        "to 3 tasks in round 1: 2 passed")
    assert lines[1] == ("skill late_skill, learned in round 1 from 2 failures (the last round): "
                        "no later round to route it in")
    assert lines[2].startswith("eval pass@1 0.333 (n=3) in round 0 -> 0.667 (n=3) in round 1; "
                               "rolling gain +0.333")
    assert lines[2].endswith("within noise: more eval tasks (--n-eval) or rounds would tell")


def test_a_gain_outside_noise_is_called_so(tmp_path):
    _run(tmp_path, [[False] * 40, [True] * 40])
    EvidenceStore(tmp_path).append("skill_event", 0, [_added(0, "s", None)])
    lines = story(tmp_path)
    assert lines[0] == "skill s, learned in round 0, was not routed to any task in rounds 1-1"
    assert lines[1].endswith("over 40 tasks: outside sampling noise"), lines[1]


def test_a_run_without_skills_says_none_was_learned(tmp_path):
    _run(tmp_path, [[False, True]])
    assert story(tmp_path) == [
        "no skill was learned: no cluster of failure verdicts was large enough "
        "(synth.min_cluster_size) or every draft was refused (ratchet audit)",
        "eval pass@1 0.500 (n=2) in round 0: one round, nothing to compare"]
    assert story(tmp_path / "empty") == []
