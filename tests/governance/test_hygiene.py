"""Silent bypass and cost per skill (issue 24) on scripted Parquet evidence written through the
real EvidenceStore and SkillBank: dead weight, routed-but-ignored on probe pairs, dead-weight-
first eviction (off in the Default), prompt tokens per skill, and ``ratchet audit --bypass /
--cost / --leakage`` over such a run dir."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes import HashEmbedder
from offline_data import mbpp_plus_path
from skill_builders import TOPICS, make_skill, routed_capsules

from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.cli import main
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.run_config.files import dump_config
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.governance import bypass
from ratchet_ray.types import Capsule, Guidance, capsule_id


def open_bank(run_dir: Path, config: LoopConfig | None = None) -> SkillBank:
    return SkillBank(run_dir, embedder=HashEmbedder(), config=config or LoopConfig(),
                     run_id="run1")


def probe_pair(skill_id: str, round_: int, task: str, with_skill: str, without: str,
               passed: tuple[bool, bool] = (True, False)) -> list[Capsule]:
    """Attempt 0 routed to ``skill_id`` and the attempt-1 probe routed to NONE."""
    return [Capsule(capsule_id=capsule_id("run1", round_, "train", task, attempt), run_id="run1",
                    round=round_, split="train", task_id=task, attempt=attempt, skill_id=skill,
                    passed=ok, output=output)
            for attempt, skill, ok, output in ((0, skill_id, passed[0], with_skill),
                                               (1, "NONE", passed[1], without))]


SOLUTION = "def f(xs):\n    return sorted(set(xs))\n"


def scripted_run(run_dir: Path, config: LoopConfig | None = None) -> SkillBank:
    """Round 0 adds ``busy``, ``idle``, ``ignored`` and ``heeded``; round 8 adds ``young``.
    ``busy`` is routed every round, ``idle`` never, ``ignored`` on 3 probe pairs whose outputs
    differ only in whitespace, ``heeded`` on 3 pairs whose outputs differ; evidence to round 12."""
    bank = open_bank(run_dir, config)
    for i, name in enumerate(["busy", "idle", "ignored", "heeded"]):
        assert bank.add(make_skill(name, TOPICS[i]), round_=0).ok
    store = EvidenceStore(run_dir)
    for r in range(1, 13):
        rows = routed_capsules("run1", "busy", r, 1, 1)
        if r == 8:
            assert bank.add(make_skill("young", TOPICS[5]), round_=8).ok
        if r <= 3:
            rows += probe_pair("ignored", r, f"Mbpp/{r}", SOLUTION, SOLUTION.replace("    ", "\t"))
            rows += probe_pair("heeded", r, f"Mbpp/{10 + r}", SOLUTION,
                               "def f(xs):\n    out = []\n    for x in xs:\n        out.append(x)"
                               "\n    return out\n", passed=(True, r == 3))
        store.append("capsule", r, rows)
    return bank


def test_similarity_is_difflib_on_collapsed_whitespace():
    assert bypass.similarity("a  b\n c", "a b c") == 1.0
    assert bypass.similarity("", "") == 1.0 and bypass.similarity("abc", "") == 0.0
    assert 0.0 < bypass.similarity("return x + 1", "return x - 1") < 1.0


def test_dead_weight_is_active_k_rounds_never_routed(tmp_path):
    bank = scripted_run(tmp_path / "run")
    with bank.log.store.connect() as con:
        dead = bypass.dead_weight(con, bank.all(), k=10)
        assert sorted(dead) == ["idle"]  # young: 4 rounds only; the others were routed
        assert (dead["idle"].active_since, dead["idle"].rounds_unrouted) == (0, 12)
        assert sorted(bypass.dead_weight(con, bank.all(), k=4)) == ["idle", "young"]
        assert bypass.dead_weight(con, bank.all(), k=13) == {}
        with pytest.raises(ValueError, match="dead_weight_rounds"):
            bypass.dead_weight(con, bank.all(), k=0)
    bank.retire("idle", round_=12)
    with bank.log.store.connect() as con:  # a deprecated skill is no dead weight
        assert "idle" not in bypass.dead_weight(con, bank.all(), k=10)


def test_routed_but_ignored_on_probe_pairs(tmp_path):
    bank = scripted_run(tmp_path / "run")
    with bank.log.store.connect() as con:
        got = bypass.ignored_skills(con)
        assert sorted(got) == ["heeded", "ignored"]
        assert (got["ignored"].pairs, got["ignored"].near_identical) == (3, 3)
        assert got["ignored"].ignored and got["ignored"].mean_similarity == 1.0
        assert got["heeded"].near_identical == 0 and not got["heeded"].ignored
        # fewer pairs than min_pairs: never called ignored
        assert not bypass.ignored_skills(con, min_pairs=4)["ignored"].ignored


def test_cost_is_guidance_tokens_times_routings(tmp_path):
    bank = scripted_run(tmp_path / "run")
    with bank.log.store.connect() as con:
        rows = {r["skill_id"]: r for r in bypass.skill_costs(con, bank.all(), bank.stats())}
    busy = bank.get("busy")
    per = -(-len(busy.guidance_text()) // 4)
    assert rows["busy"]["tokens_per_routing"] == per == bypass.guidance_tokens(busy)
    assert rows["busy"]["train_routings"] == 24 and rows["busy"]["train_tokens"] == 24 * per
    assert rows["busy"]["contribution"] == 0.0 and rows["busy"]["gain_per_1k"] == 0.0
    # heeded: 3 routed train capsules, all passed: +3 net over 3 * per tokens
    heeded = bypass.guidance_tokens(bank.get("heeded"))
    assert rows["heeded"]["train_tokens"] == 3 * heeded
    assert rows["heeded"]["gain_per_1k"] == pytest.approx(1000 * 3 / (3 * heeded), abs=1e-6)
    assert rows["idle"]["train_routings"] == 0 and rows["idle"]["gain_per_1k"] is None


def test_dead_weight_first_eviction_is_opt_in(tmp_path):
    for first in (False, True):
        config = LoopConfig.model_validate({"curator": {
            "active_cap": 5, "evict_dead_weight_first": first, "dead_weight_rounds": 10}})
        bank = scripted_run(tmp_path / f"run_{first}", config)
        # busy has the lowest score (0.0 over 24; heeded/ignored are +1; idle/young untried 0.0
        # with fewer trials, so busy goes first by the paper's order)
        result = bank.add(make_skill("newcomer", TOPICS[6]), round_=12)
        assert result.ok
        assert result.evicted == (["idle"] if first else ["busy"])
        event = [e for e in bank.log.store.connect().execute(
            "SELECT reason FROM skill_event WHERE event = 'evicted'").fetchall()]
        assert ("dead weight: ACTIVE since round 0, never routed" in event[0][0]) is first
    assert LoopConfig().curator.evict_dead_weight_first is False


def ratchet(run_dir: Path, *args: str):
    return CliRunner().invoke(main, ["--db", str(run_dir), *args])


def test_audit_bypass_and_cost_tables(tmp_path):
    run_dir = tmp_path / "run"
    scripted_run(run_dir)
    out = ratchet(run_dir, "audit", "--bypass")
    assert out.exit_code == 0, out.output
    assert "dead weight: idle, young" not in out.output  # k = 10: young is 4 rounds old
    assert "dead weight: idle; routed but ignored (>= 0.95 similar on most probe pairs): " \
           "ignored" in out.output
    rows = {r["skill_id"]: r for r in json.loads(ratchet(run_dir, "audit", "--bypass",
                                                         "--format", "json").output)}
    assert rows["idle"]["dead_weight"] and rows["ignored"]["ignored"]
    assert rows["busy"]["routings_since"] == 24 and not rows["busy"]["dead_weight"]
    cost = json.loads(ratchet(run_dir, "audit", "--cost", "--format", "json").output)
    assert {r["skill_id"] for r in cost} == {"busy", "idle", "ignored", "heeded", "young"}
    refused = ratchet(run_dir, "audit", "--cost", "--bypass", "--format", "json")
    assert refused.exit_code != 0 and "pass one of --leakage, --bypass, --cost" in refused.output


def test_run_report_shows_dead_weight_and_ignored_skills(tmp_path):
    from ratchet_ray.report.data import load_run
    from ratchet_ray.report.sections import skills_section

    run_dir = tmp_path / "run"
    scripted_run(run_dir)
    dump_config(LoopConfig.model_validate({"curator": {"dead_weight_rounds": 4}}),
                run_dir / "config.yaml")  # the run's own k, not the Default's 10
    run = load_run(run_dir)
    rows = {s.skill_id: s for s in run.skills}
    assert {k: rows[k].rounds_unrouted for k in rows} == {
        "busy": None, "idle": 12, "ignored": None, "heeded": None, "young": 4}
    assert rows["ignored"].ignored and rows["ignored"].probe_similarity == 1.0
    assert not rows["heeded"].ignored and rows["heeded"].probe_similarity < 0.95
    assert rows["busy"].probe_similarity is None and not rows["busy"].ignored
    html = skills_section([run])
    assert html.count(">dead weight</span>") == 2 and html.count(">ignored</span>") == 1
    assert "12 rounds unrouted" in html and "silent bypass" in html


@pytest.fixture(scope="module")
def mbpp_path() -> str:
    return mbpp_plus_path()


def test_audit_leakage_flags_a_skill_quoting_an_eval_solution(tmp_path, mbpp_path):
    from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus

    run_dir = tmp_path / "run"
    config = LoopConfig(dataset_path=mbpp_path)
    bank = open_bank(run_dir, config)
    dump_config(config, run_dir / "config.yaml")
    (run_dir / "train_ids.json").write_text(json.dumps(["Mbpp/3", "Mbpp/4"]))
    (run_dir / "eval_ids.json").write_text(json.dumps(["Mbpp/2"]))
    line = next(l.strip() for l in load_mbpp_plus(mbpp_path).problem("Mbpp/2")
                ["canonical_solution"].splitlines() if "return" in l)
    leaky = make_skill("leaky", TOPICS[0]).model_copy(update={"guidance": Guidance(
        applies_when="two tuples", key_insight=f"Just write: {line}")})
    assert bank.add(leaky, round_=0).ok and bank.add(make_skill("clean", TOPICS[1]), round_=0).ok
    out = ratchet(run_dir, "audit", "--leakage")
    assert out.exit_code == 0, out.output
    assert "leakage >= 0.6: leaky" in out.output and "Mbpp/2" in out.output
    rows = {r["skill_id"]: r for r in json.loads(ratchet(run_dir, "audit", "--leakage",
                                                         "--format", "json").output)}
    assert rows["leaky"]["flagged"] and rows["leaky"]["eval_score"] == 1.0
    assert not rows["clean"]["flagged"] and rows["clean"]["eval_score"] == 0.0
    assert "eval task Mbpp/2 solution (100% copied" in rows["leaky"]["top_span"]
