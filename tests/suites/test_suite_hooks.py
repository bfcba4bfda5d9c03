"""A plugin suite's registered hooks and its suite object reach the generic code exactly as a
built-in suite's do: the Solver's agent turn, actor resources, the Critic's review prompt, subset
groups, baseline sampling overrides (the suite object's); and ``register`` refuses a malformed hook naming it. No Ray."""

from __future__ import annotations

import pytest

from fakes import ScriptedLLM
from ratchet_ray.cli.select_subset import select_subset
from ratchet_ray.loop.runtime import actor_options
from ratchet_ray.roles.critic_prompt import critic_messages
from ratchet_ray.roles.solver import solve
from ratchet_ray.suites import Cluster, SuiteRegistryError, get_suite, register, registry
from ratchet_ray.suites.hooks import (actor_resources, critic_prompt, sampling_overrides,
                                      subset_grouping, sweep_report)
from ratchet_ray.types import Capsule, Task


class Agent:
    """A suite whose Solver is an agent (``AgentTurn``): it answers after two LLM calls."""

    name, output_kind = "agenty", "plan"

    def load_tasks(self, config):
        return []

    def make_grader(self, config, run_dir):
        return None

    def solver_settings(self, config):
        return {"steps": 2}

    def sampling_overrides(self, temperature):
        return [f"agenty.temperature={temperature}"]

    subset_group_label = "areas"

    @staticmethod
    def subset_group(task_id):
        return task_id.split("/")[0]

    def solve_agent(self, llm, task, skill, settings, *, log_dir=None):
        from ratchet_ray.llm.base import Message

        replies = [llm.complete([Message("user", f"step {i} of {task.task_id}")], max_tokens=8)
                   for i in range(settings["steps"])]
        return " then ".join(r.text for r in replies), replies


def own_review(task, capsule, skill, *, prefill=False, templates=None):
    from ratchet_ray.llm.base import Message

    return [Message("user", f"# Plan review\n{task.task_id}: {capsule.exit_status}")]


@pytest.fixture(autouse=True)
def agenty():
    register("agenty", Agent, cluster=Cluster(resources={"solver": {"gpu_slot": 1}}),
             critic=own_review)
    yield
    registry.unregister("agenty")


def test_the_agent_turn_is_the_suites_own():
    llm = ScriptedLLM(lambda messages, schema: messages[-1].content.split()[1])
    task = Task(task_id="a/1", suite="agenty", prompt="plan it")
    result = solve(llm, task, None, output_kind="plan", max_tokens=8, temperature=0.0,
                   agent_settings=Agent().solver_settings(None), turn=get_suite("agenty"))
    assert (result.exit_status, result.output, len(result.replies)) == ("ok", "0 then 1", 2)
    with pytest.raises(ValueError, match="no built-in turn"):
        solve(llm, task, None, output_kind="plan", max_tokens=8, temperature=0.0)


def test_resources_review_groups_and_sampling_come_from_the_suite():
    assert actor_options("solver", "agenty") == {"num_cpus": 0.25,
                                                 "resources": {"gpu_slot": 1}}
    assert "resources" not in actor_options("grader", "agenty")
    assert actor_resources("swebench", "grader") == {"docker": 1}  # a built-in's, the same way
    assert critic_prompt("agenty") is own_review and critic_prompt("swebench") == "patch"
    assert critic_prompt("never_registered") == "code"
    task = Task(task_id="a/1", suite="agenty", prompt="plan it")
    capsule = Capsule(capsule_id="c", run_id="r", round=0, split="train", task_id="a/1",
                      skill_id="NONE", passed=False, exit_status="wrong_plan")
    assert critic_messages(task, capsule, None)[0].content == "# Plan review\na/1: wrong_plan"
    assert sampling_overrides("agenty", 0.7) == ["agenty.temperature=0.7"]
    assert sampling_overrides("mbpp", 0.7) == []
    assert sweep_report("agenty", []) is None and sweep_report("never_registered", []) is None
    label, group = subset_grouping("agenty")
    assert (label, group("b/7")) == ("areas", "b") and subset_grouping("mbpp") is None
    rows = [{"task_id": f"{area}/{i}", "probe": 0, "passed": False}
            for area in "ab" for i in range(4)]
    doc = select_subset(rows, suite="agenty", n_hard=4, n_train=2, n_eval=2, seed=1, probes=1)
    assert doc["areas"] == {"a": 2, "b": 2}  # balanced over the suite's groups


@pytest.mark.parametrize("hooks, problem", [
    ({"critic": "prose"}, "critic 'prose': use one of code, patch"),
    ({"cluster": Cluster(resources={"grader": {"docker": 0}})},
     "cluster.resources .*must map a role"),
    ({"cluster": Cluster(placement=3)}, "cluster.placement must be a function"),
    ({"cluster": {"placement": 3}}, "cluster must be a Cluster"),
    ({"resources": {"grader": {"docker": 1}}}, "resources moved into the Cluster extension"),
    ({"commands": "not a target"}, "commands 'not a target' must be 'module:attr'"),
    ({"flavor": "code"}, "unknown register\\(\\) argument\\(s\\) flavor"),
])
def test_a_malformed_hook_is_refused_naming_it(hooks, problem):
    with pytest.raises(SuiteRegistryError, match=f"suite 'agenty': {problem}"):
        register("agenty", Agent, replace=True, **hooks)
    assert critic_prompt("agenty") is own_review  # the registration in place is unchanged


def test_an_agent_suite_must_bring_its_settings():
    class NoSettings(Agent):
        solver_settings = None

    with pytest.raises(SuiteRegistryError, match="must define solver_settings"):
        register("agenty", NoSettings, replace=True)
    assert get_suite("agenty").solver_settings(None) == {"steps": 2}


def test_a_world_that_knows_each_skills_truth_judges_a_transfer_as_sim_does(tmp_path):
    from ratchet_ray.packs.transfer import HARMFUL, judge_for

    register("agenty", Agent, replace=True,
             skill_truth=lambda run_dir: ({"s1": "active", "s2": "retired"}, {"s1"}))
    judge = judge_for("agenty")
    assert judge.label == HARMFUL
    assert judge.judge(tmp_path) == ({"s1": "active", "s2": "retired"}, {"s1"})
    assert judge_for("sim").label == HARMFUL  # the built-in world, through the same hook
    assert judge_for("mbpp").label == "harmful_cf"  # no truth: harm as measured in the run
    assert judge_for("never_registered").label == "harmful_cf"
