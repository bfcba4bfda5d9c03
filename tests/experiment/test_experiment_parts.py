"""The engine's parts on their own: contract line, globs, ledger file, skill-loop contract."""

from __future__ import annotations

import math

import pytest

from ratchet_ray.experiment.contract import (ContractError, EvalResult, format_contract, improves,
                                             noise_margin, parse_contract)
from ratchet_ray.experiment.ledger import COLUMNS, Ledger, LedgerError, LedgerRow
from ratchet_ray.experiment.paths import PathPolicy, PolicyError, glob_match
from ratchet_ray.experiment.skill_eval import FloorParams, skill_loop_contract


def test_contract_round_trips_and_the_last_line_wins():
    result = EvalResult(0.5, ["v"], {"scalar_per_seed": [0.4, 0.6]}, [42, 7], True)
    text = 'noise\n{"scalar": 9, "other": 1\n' + format_contract(EvalResult(1.0)) + "\n" \
        + format_contract(result) + "\ntrailing log\n"
    assert parse_contract(text) == result


@pytest.mark.parametrize("line, problem", [
    ('{"scalar": 1}', "lacks vetoes"),
    ('{"scalar": NaN, "vetoes": [], "metrics": {}, "seeds": [], "lower_is_better": false}',
     "finite number"),
    ('{"scalar": true, "vetoes": [], "metrics": {}, "seeds": [], "lower_is_better": false}',
     "finite number"),
    ('{"scalar": 1, "vetoes": "x", "metrics": {}, "seeds": [], "lower_is_better": false}',
     "vetoes must be a list"),
    ('{"scalar": 1, "vetoes": [], "metrics": {}, "seeds": ["a"], "lower_is_better": false}',
     "seeds must be a list of ints"),
    ('{"scalar": 1, "vetoes": [], "metrics": {}, "seeds": [], "lower_is_better": "no"}',
     "lower_is_better"),
    ("just logs", "no contract line"),
])
def test_malformed_contract_lines_are_named(line, problem):
    with pytest.raises(ContractError, match=problem):
        parse_contract(line)


def test_noise_margin_and_direction():
    flat = EvalResult(1.0, metrics={"scalar_per_seed": [1.0, 1.0, 1.0]})
    noisy = EvalResult(1.0, metrics={"scalar_per_seed": [0.0, 1.0, 2.0]})
    assert noise_margin(flat, noisy) == pytest.approx(math.sqrt(1.0 / 3))
    assert noise_margin(EvalResult(1.0), noisy) == 0.0  # one side without per-seed values
    assert improves(1.2, 1.0, 0.1, False) and not improves(1.1, 1.0, 0.1, False)
    assert improves(0.8, 1.0, 0.1, True) and not improves(1.2, 1.0, 0.1, True)


@pytest.mark.parametrize("path, pattern, hit", [
    ("params.txt", "*.txt", True), ("a/b.txt", "*.txt", False), ("a/b.txt", "**/*.txt", True),
    ("b.txt", "**/*.txt", True), ("data/x/y.csv", "data/**", True), ("datax/y", "data/**", False),
    ("configs/meta_skills/default_mbpp.md", "configs/meta_skills/*.md", True),
    ("m1.py", "m[0-9].py", True), ("mx.py", "m[!x].py", False), ("ab", "a?", True),
])
def test_glob_matching(path, pattern, hit):
    assert glob_match(path, pattern) is hit


def test_policy_protected_wins_and_paths_cannot_escape(tmp_path):
    policy = PathPolicy.of(["src/**"], ["src/eval/**"])
    assert policy.violations(["src/a.py", "src/eval/m.py", "README.md"]) == [
        "README.md: not editable", "src/eval/m.py: protected"]
    with pytest.raises(PolicyError, match="at least one --editable"):
        PathPolicy.of([], [])
    from ratchet_ray.experiment.paths import repo_relative

    (tmp_path / "link").symlink_to("/etc")
    for bad in ("../x", "/etc/passwd", "link/passwd"):
        with pytest.raises(PolicyError):
            repo_relative(tmp_path, bad)


def test_ledger_appends_and_survives_a_torn_last_line(tmp_path):
    ledger = Ledger(tmp_path / "results.tsv")
    ledger.append(LedgerRow(0, "keep", reasoning="multi\nline\treasoning", metrics={"a": [1, 2]},
                            seeds=[42, 7], scalar=0.5))
    with (tmp_path / "results.tsv").open("a") as fh:
        fh.write("1\tkeep\tpartial")  # a kill during a write
    assert [r.iteration for r in ledger.rows()] == [0]
    ledger.append(LedgerRow(1, "revert", scalar=0.25))
    got = ledger.rows()
    assert [(r.iteration, r.status) for r in got] == [(0, "keep"), (1, "revert")]
    assert got[0].reasoning == "multi line reasoning" and got[0].metrics == {"a": [1, 2]}
    assert got[0].seeds == [42, 7] and got[1].scalar == 0.25
    lines = (tmp_path / "results.tsv").read_text().split("\n")
    assert lines[0].split("\t") == list(COLUMNS) and lines[2] == "1\tkeep\tpartial"
    with pytest.raises(ValueError, match="unknown ledger status"):
        LedgerRow(2, "maybe")
    (tmp_path / "other.tsv").write_text("commit\tval_bpb\n")
    with pytest.raises(LedgerError, match="never rewritten"):
        Ledger(tmp_path / "other.tsv")


def _loop_rows(passes, cost=0.0):
    return [{"round": i, "eval_pass_at_1": p, "cost_usd": cost} for i, p in enumerate(passes)]


def test_proposition_1_floor_matches_the_paper():
    params = FloorParams()  # tau 0.10, N_min 100, C 50, delta 1e-3
    assert params.epsilon() == pytest.approx(0.195, abs=1e-3)
    assert params.floor(0.65) == pytest.approx(0.65 - 0.10 - 0.195 - 0.05, abs=1e-3)  # ~0.30


def test_skill_loop_contract_scalar_and_vetoes():
    runs = {42: _loop_rows([0.2, 0.3, 0.4]), 7: _loop_rows([0.2, 0.2, 0.3])}
    gain = skill_loop_contract(runs, scalar="rolling_gain")
    assert gain.scalar == pytest.approx((0.15 + 0.05) / 2) and gain.vetoes == []
    assert gain.metrics["scalar_per_seed"] == pytest.approx([0.15, 0.05])
    assert gain.seeds == [7, 42] and gain.lower_is_better is False
    final = skill_loop_contract(runs, scalar="final_pass")
    assert final.scalar == pytest.approx(0.35)
    collapsed = {42: _loop_rows([0.9, 0.1, 0.1], cost=2.0)}
    bad = skill_loop_contract(collapsed, scalar="final_pass", cost_budget_usd=1.0)
    assert bad.metrics["prop1_floor"] == pytest.approx(0.9 - 0.345, abs=1e-3)
    assert any("below the Proposition 1 floor" in v for v in bad.vetoes)
    assert any("over the budget" in v for v in bad.vetoes)
    empty = skill_loop_contract({42: []}, scalar="rolling_gain")
    assert empty.vetoes == ["seed 42: no round with an eval pass finished"]
    with pytest.raises(ValueError, match="unknown scalar"):
        skill_loop_contract(runs, scalar="peak")


def test_frozen_evaluator_files_program_always_inputs_never(tmp_path):
    from ratchet_ray.experiment.evaluator import FrozenEvaluator

    for name in ("eval.py", "subset.json", "prior.md"):
        (tmp_path / name).write_text(name)
    outside = tmp_path.parent / f"{tmp_path.name}-metric.cfg"
    outside.write_text("frozen")
    frozen = FrozenEvaluator(tmp_path, "python eval.py --meta prior.md --subset subset.json",
                             paths=[str(outside)], inputs=["*.md", "*.py"])
    assert frozen.in_repo == {"eval.py", "subset.json"} and frozen.outside == {outside}
    positional = FrozenEvaluator(tmp_path, "python eval.py prior.md", inputs=["*.md", "*.py"])
    assert positional.in_repo == {"eval.py", "prior.md"}  # not after a flag: frozen
    before = frozen.digest()
    (tmp_path / "prior.md").write_text("a candidate's change")
    assert frozen.digest() == before
    outside.write_text("moved yardstick")
    assert frozen.digest() != before
    with pytest.raises(ValueError, match="matches no file"):
        FrozenEvaluator(tmp_path, "python eval.py", paths=["nothing/*"])
