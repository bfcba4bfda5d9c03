"""The ``mbpp_oracle`` suite: the sim world over the real MBPP+ tasks, graded for real.

The world and its oracle Solver are checked against the real sandboxed grader (a canonical
answer passes, a broken variant fails), and one short real run (Ray on 127.0.0.1, the real
MBPP+ grading, bank, Curator and evidence) in a world where retirement has work to do must
leave a bank the truth report agrees with, and retire a truly harmful skill.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ratchet_ray.run_config.files import layered_files, load_config

from local_ray import start_local_ray
from offline_data import mbpp_plus_path

ROOT = Path(__file__).resolve().parents[3]
# Two failure types, so each skill is routed to about half the train tasks; p0 ~ Beta(2, 2)
# (mean 0.5): a harmful skill (p0 - 0.5 x U(0.6, 1.4)) scores c-hat near -1, a helpful one
# (p0 + 0.35 x ...) well above 0, and retirement needs 4 trials, so within 4 rounds the Curator
# has clear cases to decide on real grades.
CLEAR_WORLD = ("mbpp_oracle.n_types=2", "mbpp_oracle.base_alpha=2", "mbpp_oracle.base_beta=2",
               "mbpp_oracle.p_helpful=0.4", "mbpp_oracle.p_neutral=0",
               "mbpp_oracle.p_harmful=0.6", "mbpp_oracle.p_off_target=0",
               "mbpp_oracle.harmful_effect=0.5", "curator.min_trials=4", "rounds=4",
               "n_train=16", "n_eval=6")


def oracle_config(results_dir: Path, *sets: str):
    mbpp_plus_path()  # the suite's tasks are MBPP+'s
    return load_config(layered_files("mbpp_oracle"), [f"results_dir={results_dir}", *sets])


def test_the_world_is_the_seeds_and_the_tasks_are_mbpp_plus(tmp_path):
    from ratchet_ray.suites.mbpp_oracle import MbppOracleSuite, world_of

    config = oracle_config(tmp_path, "seed=7")
    a, b = world_of(config), world_of(oracle_config(tmp_path, "seed=7"))
    other = world_of(oracle_config(tmp_path, "seed=8"))
    assert len(a.tasks) == 378 and a.tasks[0].task_id == "Mbpp/2"
    assert [(t.type, t.p0) for t in a.tasks] == [(t.type, t.p0) for t in b.tasks]
    assert [t.p0 for t in a.tasks] != [t.p0 for t in other.tasks]
    tasks = MbppOracleSuite().load_tasks(config)
    assert tasks[0].prompt.startswith("[Mbpp/2] Write a function")
    assert tasks[0].payload["entry_point"] == "similar_elements"
    assert a.task_of_text(tasks[5].prompt).task_id == tasks[5].task_id


def test_a_config_without_the_world_backend_is_refused(tmp_path):
    with pytest.raises(Exception, match="needs llm.backend sim"):
        oracle_config(tmp_path, "llm.backend=openai")
    with pytest.raises(Exception, match="n_tasks"):
        oracle_config(tmp_path, "mbpp_oracle.n_tasks=5")


def test_broken_variants_are_single_mutations_fixed_by_the_seed():
    from ratchet_ray.suites.mbpp_oracle.mutate import broken_variants

    code = "def f(xs, n):\n    return [x + 1 for x in xs[:n] if x < n]"
    first = broken_variants(code, 3, random.Random(1))
    assert first == broken_variants(code, 3, random.Random(1))
    assert len(first) == 3 and len({v.code for v in first}) == 3
    assert all(v.code != code and ":" in v.mutation for v in first)
    # No site but returned values: the result is forgotten.
    assert broken_variants("def g(s):\n    return s", 2, random.Random(0))[0].code == (
        "def g(s):\n    return None")
    # A flipped while condition could spin forever: nothing inside a while loop is mutated.
    looped = broken_variants("def h(n):\n    while n < 10:\n        n += 1\n    return n", 5,
                             random.Random(0))
    assert [v.mutation for v in looped] == ["return: every returned value -> None"]


def test_the_oracle_answers_pass_and_fail_the_real_grader(tmp_path):
    from ratchet_ray.suites.mbpp_oracle import MbppOracleSuite
    from ratchet_ray.suites.mbpp_oracle.backend import make_llm

    config = oracle_config(tmp_path)
    suite = MbppOracleSuite()
    tasks = {t.task_id: t for t in suite.load_tasks(config)}
    grader = suite.make_grader(config, tmp_path)
    llm = make_llm(config.llm.world)
    for task_id in ("Mbpp/2", "Mbpp/17", "Mbpp/62"):
        task = llm.world.task(task_id)
        good = llm.answer(task, None, True, random.Random(0))
        result = grader.grade(tasks[task_id], good)
        assert result.passed and result.exit_status == "ok", result.trace
        for seed in range(2):
            bad = llm.answer(task, None, False, random.Random(seed))
            assert bad.splitlines()[1].startswith("# oracle stand-in: broken (")
            result = grader.grade(tasks[task_id], bad)
            assert not result.passed and not result.infra_failure, (bad, result.trace)
    runs = grader.sandbox_runs
    assert grader.grade(tasks["Mbpp/62"], good).passed
    assert grader.sandbox_runs == runs  # the same program for the same task: graded once


@pytest.fixture(scope="module")
def clear_run(tmp_path_factory, _ray_session):
    """4 rounds of 22 tasks: 30-100 s on the shared 2 cores (by load), so its tests are ``slow``."""
    from ratchet_ray.loop.driver import run_loop

    start_local_ray()
    config = oracle_config(tmp_path_factory.mktemp("oracle"), *CLEAR_WORLD)
    return run_loop(config, show_progress=False)


@pytest.mark.slow
def test_a_real_run_agrees_with_its_truth_and_retires_a_harmful_skill(clear_run):
    from ratchet_ray.arm_summary import run_result
    from ratchet_ray.suites.sim.ablation_table import bank_disagreements
    from ratchet_ray.suites.sim.truth import analyze_run

    truth = analyze_run(clear_run)
    assert len(truth.rounds) == 4 and truth.skills
    assert bank_disagreements(clear_run, truth, run_result(clear_run)) == []
    retired_harmful = [s for s in truth.skills if s.harmful and s.retired_round is not None]
    assert retired_harmful, [(s.skill_id, s.effect_class, s.trials, s.c_hat)
                             for s in truth.skills]
    assert all(s.c_hat is not None and s.c_hat <= -0.1 for s in retired_harmful)


@pytest.mark.slow
def test_every_graded_answer_is_what_the_world_drew(clear_run):
    """Real grading on every capsule: each canonical answer passed but where a test ran past
    its time limit (evalplus times each test against the reference's own timing, so a loaded
    machine can time out even the reference: real grading's noise, as on ``mbpp``), and every
    broken variant failed (a variant MBPP+'s tests miss would pass; none does here)."""
    from ratchet_ray.evidence.store import EvidenceStore

    with EvidenceStore(clear_run).connect() as con:
        graded = con.execute("SELECT output, passed, infra_failure, exit_status "
                             "FROM capsule").fetchall()
    assert len(graded) >= 4 * 22
    canonical = [g for g in graded if g[0].startswith("# oracle stand-in: canonical")]
    broken = [g for g in graded if g[0].startswith("# oracle stand-in: broken")]
    assert len(canonical) + len(broken) == len(graded) and canonical and broken
    assert all(g[1] and g[3] == "ok" for g in canonical if g[3] != "timeout")
    assert sum(g[1] for g in canonical) >= 0.8 * len(canonical)
    assert not any(g[1] or g[2] for g in broken), [g for g in broken if g[1] or g[2]]


def test_the_graders_memory_does_not_answer_an_impossible_twin(tmp_path):
    """A twin has its task's id: a memory keyed by (task id, output) gave the twin its task's
    pass, a cheat no code committed (``suites.base.as_impossible_twin``)."""
    from ratchet_ray.suites.mbpp.twin import impossible_twin
    from ratchet_ray.suites.mbpp_oracle import MbppOracleSuite

    config = oracle_config(tmp_path)
    suite = MbppOracleSuite()
    task = next(t for t in suite.load_tasks(config) if t.task_id == "Mbpp/17")
    grader = suite.make_grader(config, tmp_path)
    good = f"```python\n{grader.dataset.problem(task.task_id)['canonical_solution']}\n```"
    assert grader.grade(task, good).passed
    twin = grader.grade(impossible_twin(task), good)
    assert (twin.passed, twin.exit_status, twin.infra_failure) == (False, "failed_tests", False)
    assert "impossible twin" in twin.trace and grader.grade(task, good).passed
