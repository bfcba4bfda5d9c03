"""actors/skill_bank.py on a real local Ray: one named single-writer actor per run, reattachable,
with the embedder built in the actor from a factory."""

from __future__ import annotations

import skill_builders
import fakes
import ray
import ray.cloudpickle
from skill_builders import TOPICS, make_skill, routed_capsules

from actors.skill_bank import actor_name, launch_skill_bank
from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.evidence.store import EvidenceStore

# Ray workers cannot import the tests folder by name; ship these modules by value.
ray.cloudpickle.register_pickle_by_value(fakes)
ray.cloudpickle.register_pickle_by_value(skill_builders)


def test_bank_actor_serialises_concurrent_adds_and_keeps_the_cap(ray_local, run_dir):
    config = LoopConfig(curator={"active_cap": 4})
    handle = launch_skill_bank(run_dir, embedder=fakes.HashEmbedder, config=config, run_id="actor1",
                               num_cpus=0)
    assert ray.get(handle.ping.remote()) == "actor1"
    skills = [make_skill(f"s{i}", topic) for i, topic in enumerate(TOPICS[:8])]
    results = ray.get([handle.add.remote(s, round_=1) for s in skills])
    assert [r.status for r in results] == ["added"] * 8
    assert sum(len(r.evicted) for r in results) == 4
    assert len(ray.get(handle.active.remote())) == 4

    again = launch_skill_bank(run_dir, embedder=fakes.HashEmbedder, config=config,
                              run_id="actor1", num_cpus=0)
    assert again._actor_id == handle._actor_id  # a restarted driver reattaches by name
    ray.get(handle.snapshot.remote(1))
    EvidenceStore(run_dir).append("capsule", 2, routed_capsules("actor1", "s7", 2, 0, 100))
    decisions = ray.get(handle.curate.remote(2))
    assert [d.skill_id for d in decisions if d.action == "retire"] == ["s7"]
    assert ray.get(handle.restore.remote(1, current_round=2)) == ["s7"]

    ray.kill(handle, no_restart=True)
    local = SkillBank(run_dir, embedder=None, config=config, run_id="actor1")
    assert len(local.active()) == 4 and len(local.all()) == 8
    con = EvidenceStore(run_dir).connect()
    counts = dict(con.execute("select event, count(*) from skill_event group by 1").fetchall())
    assert counts == {"added": 8, "evicted": 4, "retired": 1, "restored": 1}
    assert actor_name("actor1") == "skill_bank:actor1"
