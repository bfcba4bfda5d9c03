"""The truth-aware analysis and c_cf on hand-written evidence (no Ray): exact numbers."""

from __future__ import annotations

import csv
import errno
import json

import pytest

from ratchet_ray.bank.skill_io import dump_skill
from ratchet_ray.run_config.files import dump_config
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.governance.counterfactual import counterfactual_stats, probe_selected
from ratchet_ray.suites.sim import world_spec
from ratchet_ray.suites.sim.report import write_sim_report
from ratchet_ray.metrics import hoeffding_eps
from ratchet_ray.suites.sim.truth import analyze_run
from ratchet_ray.suites.sim.world import World
from ratchet_ray.types import Capsule, Guidance, Skill

from sim_helpers import legacy_config as sim_config  # legacy-world numbers


def _capsule(round_, split, task, skill, passed, attempt=0):
    return Capsule(capsule_id=f"{round_}-{split}-{task}-{attempt}", run_id="r", round=round_,
                   split=split, task_id=task, skill_id=skill, passed=passed, attempt=attempt)


@pytest.fixture
def run_dir(tmp_path):
    config = sim_config(tmp_path, "curator.min_trials=2")
    world = World(world_spec(config))
    path = tmp_path / "run"
    (path / "skills").mkdir(parents=True)
    dump_config(config, path / "config.yaml")
    t0, t1 = world.tasks[0], world.tasks[1]
    (path / "eval_ids.json").write_text(json.dumps([t1.task_id]))
    (path / "loop.json").write_text(json.dumps({"suite": "sim", "rounds": []}))
    token = world.make_token(t0.type, True, "x")
    (path / "skills" / "s1.yaml").write_text(dump_skill(Skill(
        id="s1", name="s1", description="d", intent="i",
        guidance=Guidance(applies_when=f"when (ref {token})", key_insight="k"))))
    store = EvidenceStore(path)
    # train: s1 routed on t0 twice (pass, fail); probes with NONE (fail, fail) on the same tasks
    store.append("capsule", 0, [_capsule(0, "train", t0.task_id, "s1", True),
                                _capsule(0, "train", t0.task_id, "NONE", False, attempt=1),
                                _capsule(0, "eval", t1.task_id, "NONE", True)])
    store.append("capsule", 1, [_capsule(1, "train", t0.task_id, "s1", False),
                                _capsule(1, "train", t0.task_id, "NONE", False, attempt=1),
                                _capsule(1, "eval", t1.task_id, "s1", False)])
    store.append("skill_event", 0, [{"run_id": "r", "round": 0, "skill_id": "s1",
                                     "event": "added", "status_after": "active"}])
    store.append("skill_event", 1, [{"run_id": "r", "round": 1, "skill_id": "s1",
                                     "event": "retired", "status_after": "deprecated"}])
    return path, world, token


def test_counterfactual_stats_are_pass_skill_minus_pass_none(run_dir):
    path, _, _ = run_dir
    with EvidenceStore(path).connect() as con:
        stats = counterfactual_stats(con)
    # pairs: (pass, fail) and (fail, fail): c_cf = 1/2 - 0/2 = +0.5
    assert stats["s1"].trials == 2 and stats["s1"].contribution == 0.5
    assert (stats["s1"].successes, stats["s1"].failures) == (1, 0)


def test_probe_selection_is_seeded_and_follows_the_fraction():
    picked = [probe_selected(42, 3, f"sim/{i:03d}", 0.3) for i in range(2000)]
    assert abs(sum(picked) / 2000 - 0.3) < 0.04
    assert picked == [probe_selected(42, 3, f"sim/{i:03d}", 0.3) for i in range(2000)]
    assert not any(probe_selected(42, 3, f"sim/{i:03d}", 0.0) for i in range(100))


def test_analysis_against_the_truth(run_dir, monkeypatch):
    path, world, token = run_dir
    t0, t1 = world.tasks[0], world.tasks[1]
    truth = analyze_run(path)
    assert [r.round for r in truth.rounds] == [0, 1]
    assert truth.rounds[0].measured == 1.0 and truth.rounds[1].measured == 0.0
    assert truth.rounds[0].true == pytest.approx(t1.p0)
    assert truth.rounds[1].true == pytest.approx(world.p(t1.task_id, token))
    assert truth.e_p0 == pytest.approx(t1.p0)
    assert truth.floor == pytest.approx(t1.p0 - (0.1 + hoeffding_eps(2, 1e-3)) - 50 * 1e-3)
    (skill,) = truth.skills
    assert (skill.trials, skill.c_hat, skill.c_cf, skill.probes) == (2, 0.0, 0.5, 2)
    assert skill.c_true_routed == pytest.approx(world.p(t0.task_id, token) - t0.p0)
    assert (skill.added_round, skill.retired_round) == (0, 1)
    stats = truth.retirement()
    assert stats["retired"] == 1 and stats["retired_harmful"] == int(skill.harmful)
    written = write_sim_report(path, out=path / "report")
    assert (path / "report" / "sim_report.md").is_file() and len(written) == 5
    # A disk that fills while the report is written again leaves the previous files whole (the
    # CSVs were written in place: a full disk left a torn or empty rounds.csv)
    before = {f.name: f.read_bytes() for f in written}

    def full(self, rows):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(csv.DictWriter, "writerows", full)
    with pytest.raises(OSError, match="No space left"):
        write_sim_report(path, out=path / "report")
    assert {f.name: f.read_bytes() for f in written} == before
    assert not [f for f in (path / "report").iterdir() if f.name not in before]
