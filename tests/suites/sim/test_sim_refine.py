"""Arm A10 in the simulated world: a revision's true effect is known (its parent's shifted by a
draw whose mean rises with the share of the skill's own target-type failures it was built
from), the sim LLM answers the revision prompt, and a short real A10 run (Ray on 127.0.0.1)
refines skills whose truth the report gives per version, agreeing with the live bank."""

from __future__ import annotations

import json
import statistics

import pytest

from ratchet_ray.arm_summary import run_result
from ratchet_ray.bank.skill_io import load_skill_folder
from ratchet_ray.llm.registry import make_llm
from ratchet_ray.roles.refiner_prompt import refine_messages
from ratchet_ray.roles.synthesizer_prompt import synth_messages
from ratchet_ray.bank.skill_contract import SkillDraft
from ratchet_ray.roles.synthesizer import draft_to_skill
from ratchet_ray.suites.sim import world_spec
from ratchet_ray.suites.sim.report import write_sim_report
from ratchet_ray.suites.sim.truth import analyze_run
from ratchet_ray.suites.sim.world import REVISION_RE, World, parse_token

from local_ray import start_local_ray
from sim_helpers import rows, run_sim, legacy_config as sim_config  # legacy-world numbers


def parent_token(token: str) -> str | None:
    """The token a revision revised (None for a first version)."""
    found = REVISION_RE.match(token)
    return found.group(1) if found else None


@pytest.fixture
def world(tmp_path):
    return World(world_spec(sim_config(tmp_path)))


def test_a_revision_is_its_parent_shifted_better_from_its_own_failures(world):
    spec = world.spec
    parents = [world.make_token(i % world.k, True, "p", i) for i in range(400)]
    own = [world.make_revision_token(p, 1.0, "r") for p in parents]
    foreign = [world.make_revision_token(p, 0.0, "r") for p in parents]
    assert all(parent_token(r) == p for r, p in zip(own, parents))
    assert parent_token(parents[0]) is None and parse_token(f"x {own[0]} y") == own[0]

    def shift(child, parent):
        c, p = world.skill_truth(child), world.skill_truth(parent)
        assert (c.target, c.guided) == (p.target, p.guided)
        return c.delta(c.target) - p.delta(p.target)
    up = [shift(c, p) for c, p in zip(own, parents)]
    down = [shift(c, p) for c, p in zip(foreign, parents)]
    # N(+gain, noise) from its own failures, N(-gain, noise) from other types' (clipped)
    assert statistics.fmean(up) == pytest.approx(spec.refine_gain, abs=0.03)
    assert statistics.fmean(down) == pytest.approx(-spec.refine_gain, abs=0.03)
    assert 0.08 < sum(d < 0 for d in up) / len(up) < 0.3  # can still harm: P(N(.1, .1) < 0)
    # correlated with the parent: the revision's effect tracks the parent's
    pairs = [(world.skill_truth(p).delta(world.skill_truth(p).target),
              world.skill_truth(c).delta(world.skill_truth(c).target))
             for c, p in zip(own, parents)]
    assert statistics.correlation(*zip(*pairs)) > 0.8
    # a revision of a revision shifts its own parent's truth; the draw is fixed by the token
    again = world.make_revision_token(own[0], 1.0, "r2")
    assert parent_token(again) == own[0]
    assert World(world.spec).skill_truth(again) == world.skill_truth(again)
    top = spec.helpful_effect * 1.4
    assert all(-spec.harmful_effect * 1.4 <= world.skill_truth(c).delta(world.skill_truth(c).target)
               <= top for c in own)


def test_the_sim_llm_revises_from_the_failures_in_the_prompt(tmp_path):
    config = sim_config(tmp_path)
    llm, world = make_llm(config.llm), World(world_spec(config))
    phrase = world.phrases[2][0]
    draft = SkillDraft.model_validate_json(llm.complete(
        synth_messages("sim", None, f"{phrase} (x3)", [], []), seed=1).text)
    skill = draft_to_skill(draft, set(), "sim")
    parent = parse_token(skill.guidance.applies_when)
    target = world.skill_truth(parent).target
    same = [t for t in world.tasks if t.type == target][:4]
    other = [t for t in world.tasks if t.type != target][:4]

    def revise(tasks):
        examples = [f"Task: {t.prompt}\nCritic (hurt): wrong" for t in tasks]
        reply = llm.complete(refine_messages("sim", None, skill, examples, failures=len(tasks)),
                             seed=3)
        return parse_token(json.loads(reply.text)["guidance"]["applies_when"])
    own, foreign = revise(same), revise(other)
    assert parent_token(own) == parent and parent_token(foreign) == parent
    assert own.split(".r")[-1][0] == "9" and foreign.split(".r")[-1][0] == "0"  # q in ninths
    assert revise(same) == own  # seeded


@pytest.fixture(scope="module")
def a10_run(tmp_path_factory, _ray_session):
    start_local_ray()
    root = tmp_path_factory.mktemp("a10")
    return run_sim(sim_config(root, "rounds=8", "n_train=40", "n_eval=10", arm="A10"))


@pytest.mark.slow
def test_a10_run_refines_and_the_truth_is_reported_per_version(a10_run):
    events = rows(a10_run, "SELECT round, skill_id, reason FROM skill_event "
                           "WHERE event = 'refined' ORDER BY created_at")
    assert events, "no skill was refined in 8 rounds of A10"
    files = {s.id: s for s in load_skill_folder(a10_run / "skills")}
    truth = analyze_run(a10_run)
    by_id = {s.skill_id: s for s in truth.skills}
    for round_, parent_id, reason in events:
        child_id = reason.split("superseded by ")[1].split(" ")[0]
        parent, child = files[parent_id], files[child_id]
        assert child.lineage == parent.lineage_id
        assert child.lineage_version == parent.lineage_version + 1
        # the child's world token is a revision of the parent's: its truth is known
        p_tok = parse_token(parent.guidance.applies_when)
        c_tok = parse_token(child.guidance.applies_when)
        assert parent_token(c_tok) == p_tok
        row, prow = by_id[child_id], by_id[parent_id]
        assert (row.lineage, row.lineage_version) == (child.lineage, child.lineage_version)
        assert prow.refined_round == events[[e[1] for e in events].index(parent_id)][0]
        assert row.target_delta is not None and prow.target_delta is not None
    # never pooled: each version's trials are its own routed first attempts
    for row in truth.skills:
        (count,) = rows(a10_run, "SELECT count(*) FROM capsule WHERE split = 'train' AND "
                                 f"coalesce(attempt, 0) = 0 AND skill_id = '{row.skill_id}'")[0]
        assert row.trials == count
    # the report agrees with the live bank; created - deprecated = active, refined counted
    assert {s.skill_id: s.status for s in truth.skills} == {
        k: s.status.value for k, s in files.items()}
    result = run_result(a10_run)
    assert result.skills_created - result.skills_deprecated == result.active_at_end
    stats = truth.retirement()
    assert stats["refined"] == len({e[1] for e in events})
    assert stats["refine_delta"] is not None and 0 <= stats["refined_better"] <= 1
    report = write_sim_report(a10_run)[0].read_text()
    assert "## Refinement" in report and "| A10 |" in report
