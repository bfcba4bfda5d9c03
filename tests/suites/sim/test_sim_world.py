"""The sim world, its embedder and its LLM backend through the real role code (no Ray)."""

from __future__ import annotations

import statistics
from collections import Counter

import pytest

from ratchet_ray.run_config.files import ConfigError, load_config
from ratchet_ray.llm.registry import make_embedder, make_llm
from ratchet_ray.roles.critic import critique
from ratchet_ray.roles.router import Router
from ratchet_ray.roles.solver import solve
from ratchet_ray.roles.synthesizer_prompt import synth_messages
from ratchet_ray.bank.skill_contract import SkillDraft
from ratchet_ray.roles.synthesizer import draft_to_skill
from ratchet_ray.suites import get_suite
from ratchet_ray.suites.sim import world_spec
from ratchet_ray.suites.sim.grader import SimGrader
from ratchet_ray.suites.sim.world import World, parse_token
from ratchet_ray.synthesis.preprocess import canonicalize, cover_guard, Cluster
from ratchet_ray.types import Capsule, Task
from ratchet_ray.suites import settings_for

from sim_helpers import legacy_config as sim_config  # legacy-world numbers


@pytest.fixture
def config(tmp_path):
    return sim_config(tmp_path)


def test_world_is_a_function_of_the_seed(tmp_path):
    a, b = (World(world_spec(sim_config(tmp_path, "seed=7"))) for _ in range(2))
    other = World(world_spec(sim_config(tmp_path, "seed=8")))
    assert a.tasks == b.tasks and a.phrases == b.phrases
    assert a.tasks != other.tasks
    token = a.make_token(2, True, "some pattern")
    assert a.skill_truth(token) == b.skill_truth(token)


def test_skill_prior_and_the_unguided_shift(config):
    world = World(world_spec(config))
    guided = Counter(world.skill_truth(world.make_token(i % world.k, True, i)).effect_class
                     for i in range(3000))
    unguided = Counter(world.skill_truth(world.make_token(i % world.k, False, i)).effect_class
                       for i in range(3000))
    assert abs(guided["helpful"] / 3000 - settings_for(config).p_helpful) < 0.04
    assert abs(guided["harmful"] / 3000 - settings_for(config).p_harmful) < 0.04
    # A3: half the helpful mass moves to neutral when no authoring guide is in the prompt
    assert abs(unguided["helpful"] / 3000 - settings_for(config).p_helpful / 2) < 0.04


def test_route_probs_follow_accuracy_noise_and_hard_bias(tmp_path):
    world = World(world_spec(sim_config(tmp_path, "sim.route_hard_bias=1.0")))
    easy = next(t for t in world.tasks if t.p0 >= world.median_p0)
    hard = next(t for t in world.tasks if t.p0 < world.median_p0)
    aimed = world.make_token(hard.type, True, "x")
    other = world.make_token((hard.type + 1) % world.k, True, "y")
    probs = world.route_probs(hard.task_id, [aimed, other])
    assert probs[0] == pytest.approx(0.85 + 0.05 / 2) and probs[1] == pytest.approx(0.05 / 2)
    assert sum(world.route_probs(easy.task_id, [aimed, other])) == 0.0


def test_embedder_groups_paraphrases_and_canonicalisation_has_work(config):
    world = World(world_spec(config))
    embedder = make_embedder(config.llm)
    phrases = [p for t in range(world.k) for p in world.phrases[t]]
    labels = canonicalize(phrases, embedder, config.synth.canon_threshold)
    # paraphrases of one type merge, types stay apart
    assert len(set(labels)) == world.k
    for t in range(world.k):
        assert len({labels[phrases.index(p)] for p in world.phrases[t]}) == 1
    vectors = embedder.embed(world.phrases[0])
    sims = [float(vectors[i] @ vectors[j]) for i in range(len(vectors))
            for j in range(i + 1, len(vectors))]
    assert min(sims) < config.synth.canon_threshold  # not every pair merges directly


def test_roles_answer_through_the_real_role_code(config, tmp_path):
    world = World(world_spec(config))
    llm, embedder = make_llm(config.llm), make_embedder(config.llm)
    task = get_suite("sim").load_tasks(config)[0]
    truth = world.task(task.task_id)
    # Synthesizer: a draft for the task's own pattern, carrying a token of that type
    pattern = world.phrases[truth.type][0]
    reply = llm.complete(synth_messages("sim", None, f"{pattern} (x4)", [], []), seed=1)
    skill = draft_to_skill(SkillDraft.model_validate_json(reply.text), set(), "sim")
    token = parse_token(skill.guidance.applies_when)
    assert world.skill_truth(token).target == truth.type and not world.skill_truth(token).guided
    kept, skipped = cover_guard([Cluster(pattern=pattern)], [skill], embedder,
                                config.synth.cover_threshold)
    assert skipped and not kept  # the skill covers its own pattern
    # Router: offered the aimed skill, it picks it at about route_accuracy + noise
    router = Router(llm, embedder, config.router, config.llm.roles.router)
    picks = [router.route(task, [skill], seed=s).skill_id for s in range(300)]
    assert 0.8 < picks.count(skill.id) / 300 < 0.97
    # Solver + grader: the pass rate is the true p(task | skill)
    grader = SimGrader.for_run(world, tmp_path)
    passes = [grader.grade(task, solve(llm, task, skill, output_kind="code", max_tokens=64,
                                       temperature=0.0, seed=s).output).passed
              for s in range(400)]
    assert abs(statistics.fmean(passes) - world.p(task.task_id, token)) < 0.08
    assert (tmp_path / "sim" / "world.json").is_file()
    # Critic: a verdict whose pattern names the task's type most of the time
    capsule = Capsule(capsule_id="c1", run_id="r", round=0, split="train", task_id=task.task_id,
                      skill_id=skill.id, passed=False, output="x", grader_trace="failed")
    verdicts = [critique(llm, task, capsule.model_copy(update={"capsule_id": f"c{i}"}), skill,
                         seed=i).verdict for i in range(100)]
    own = sum(v.pattern in world.phrases[truth.type] for v in verdicts)
    assert 0.75 < own / 100 <= 1.0


def test_sim_suite_and_backend_go_together(tmp_path):
    with pytest.raises(ConfigError, match="sim backend only answers the sim suite"):
        load_config([], ["suite=sim"])
    with pytest.raises(ConfigError, match="sim backend only answers a suite that derives its "
                                          "simulated world"):
        load_config([], ["llm.backend=sim"])
    config = sim_config(tmp_path, "seed=9", "sim.n_types=3")
    assert config.llm.world.seed == 9 and config.llm.world.n_types == 3


def test_grader_reports_an_output_without_outcome(config, tmp_path):
    grader = SimGrader.for_run(World(world_spec(config)), tmp_path)
    task = Task(task_id="sim/000", suite="sim", prompt="[sim/000] x")
    result = grader.grade(task, "def f(): pass")
    assert not result.passed and result.exit_status == "NoOutcome" and not result.infra_failure
