"""A frozen evaluator: a candidate cannot move the measuring stick (issue 26).

- the built-in evaluator's manifest: an overlay key outside its allowlist (``llm.model``) is a
  veto naming the key, before anything runs; a safety-critical key is ``needs_review``;
- the engine: a review path or an evaluator's review reason gives ``needs_review`` (never
  merged, the commit kept on a review branch); the per-experiment time budget applies by
  default; a cost over the per-experiment budget is a veto; a gain smaller than the noise
  measured on the baseline's repeats is refused, a larger one kept.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from experiment_helpers import git, make_repo, params, rows, run, write_script
from ratchet_ray.cli import main
from ratchet_ray.experiment.contract import max_adjusted_margin, parse_contract, repeat_noise
from ratchet_ray.experiment.engine import DEFAULT_EVAL_SHARE, ENGINE_KEY
from ratchet_ray.experiment.ledger import STATUSES
from ratchet_ray.experiment.manifest import EvaluatorManifest, ManifestError, flatten
from ratchet_ray.experiment.skill_eval import repeat_seeds

# Reads params.txt; no per-seed scalars, so the engine measures the noise on the baseline: the
# noise repeat k (RATCHET_EVAL_REPEAT) adds 0.1 * k to the value.
NOISY_EVALUATOR = '''\
import json, os, sys
from pathlib import Path

params = dict(line.split(" = ", 1) for line in Path("params.txt").read_text().splitlines()
              if " = " in line)
repeat = int(os.environ.get("RATCHET_EVAL_REPEAT", "0") or 0)
metrics = {"cost_usd": float(params.get("cost", "0"))}
if params.get("review"):
    metrics["needs_review"] = [params["review"].strip()]
print(json.dumps({"scalar": float(params["value"]) + 0.1 * repeat, "vetoes": [],
                  "metrics": metrics, "seeds": [42], "lower_is_better": False}))
'''


def noisy_repo(root: Path) -> Path:
    repo = make_repo(root)
    (repo / "evaluate.py").write_text(NOISY_EVALUATOR)
    git(repo, "commit", "-qam", "a noisy evaluator without per-seed scalars")
    return repo


# ---- the built-in evaluator's manifest ------------------------------------------------------
def test_the_manifest_vetoes_keys_outside_its_allowlist_and_flags_safety_critical_ones():
    rules = EvaluatorManifest()
    check = rules.check_overlay({"llm": {"model": "bigger-model", "temperature": 0.0},
                                 "synth": {"min_cluster_size": 2},
                                 "curator": {"counterfactual": {"fraction": 0.2},
                                             "retire_on_tampering": False},
                                 "rollback": {"enabled": False}, "dataset_path": "/tmp/x",
                                 "grader": {"allow_weak_sandbox": True}})
    vetoed = sorted(v.split()[4].rstrip(",") for v in check.vetoes)
    assert vetoed == ["dataset_path", "grader.allow_weak_sandbox", "llm.model",
                      "llm.temperature"]
    assert all("does not let a candidate change" in v for v in check.vetoes)
    assert [r.split()[4].rstrip(",") for r in check.review] == [
        "curator.retire_on_tampering", "rollback.enabled"]
    assert flatten({"a": {"b": {"c": 1}, "d": {}}}) == {"a.b.c": 1, "a.d": {}}


def test_a_manifest_file_is_validated_and_hashed(tmp_path):
    path = tmp_path / "manifest.yaml"
    path.write_text("allowed_keys: [synth.*]\nreview_keys: []\nsettings:\n  workers: "
                    "{solvers: 1}\ncost_budget_usd: 2.5\n")
    rules = EvaluatorManifest.load(path)
    assert rules.allowed_keys == ("synth.*",) and rules.cost_budget_usd == 2.5
    assert rules.overrides() == ["workers.solvers=1"]
    assert rules.check_overlay({"curator": {"min_trials": 5}}).vetoes  # not allowed here
    assert rules.sha256() != EvaluatorManifest().sha256()
    path.write_text("allowed_keys: [synth.*]\nallow_everything: true\n")
    with pytest.raises(ManifestError, match="unknown field.*allow_everything"):
        EvaluatorManifest.load(path)


def test_eval_skill_loop_vetoes_an_overlay_that_changes_the_model(tmp_path):
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": ["Mbpp/2"], "eval_ids": ["Mbpp/3"]}))
    overlay = tmp_path / "knobs.yaml"
    overlay.write_text("synth:\n  min_cluster_size: 2\nllm:\n  model: a-stronger-model\n")
    result = CliRunner().invoke(main, ["experiment", "eval-skill-loop", "--subset", str(subset),
                                       "--seeds", "42,7", "--config-overlay", str(overlay)])
    assert result.exit_code == 0, result.output
    contract = parse_contract(result.output)
    (veto,) = contract.vetoes
    assert veto.startswith("the config overlay sets llm.model, which the evaluator does not")
    assert contract.metrics["ran"] is False and contract.seeds == [42, 7]
    assert len(contract.metrics["manifest_sha256"]) == 64


@pytest.mark.parametrize("text, words", [
    (b"\xff\xfesynth: {}\n", ["not UTF-8 text (byte 0xff at offset 0)"]),
    (b"synth: [1\n", ["not valid YAML (line 2, column 1"]),
    (b"- synth\n", ["expected a mapping of config keys"]),
], ids=["not-utf8", "not-yaml", "a-list"])
def test_eval_skill_loop_refuses_an_overlay_that_is_no_mapping_on_one_line(tmp_path, text,
                                                                            words):
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": ["Mbpp/2"], "eval_ids": ["Mbpp/3"]}))
    overlay = tmp_path / "knobs.yaml"
    overlay.write_bytes(text)
    result = CliRunner().invoke(main, ["experiment", "eval-skill-loop", "--subset", str(subset),
                                       "--seeds", "42", "--config-overlay", str(overlay)])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and result.output.rstrip().endswith(errors[0]), result.output
    for word in [f"--config-overlay {overlay}", *words, "e.g. synth: {min_cluster_size: 2}"]:
        assert word in errors[0]


def test_noise_repeats_run_other_seeds():
    assert repeat_seeds([42, 7], "") == [42, 7] and repeat_seeds([42, 7], "2") == [2042, 2007]
    with pytest.raises(ValueError, match="RATCHET_EVAL_REPEAT"):
        repeat_seeds([42], "x")


# ---- the engine -----------------------------------------------------------------------------
def test_a_review_path_yields_needs_review_and_is_never_merged(tmp_path):
    repo = make_repo(tmp_path)
    start = git(repo, "rev-parse", "HEAD")
    script = write_script(tmp_path, [params(2.0), params(3.0)])
    report = run(repo, script, review=["params.txt"], max_iterations=2)
    ledger = rows(repo)
    assert "needs_review" in STATUSES
    assert [r.status for r in ledger] == ["keep", "needs_review", "needs_review"]
    first = ledger[1]
    assert "changes review path(s) params.txt" in first.note and "review/t/iter001" in first.note
    assert report.head == start and git(repo, "rev-parse", "HEAD") == start  # nothing merged
    assert git(repo, "rev-parse", "review/t/iter001") == first.candidate_commit
    assert "value = 2.0" in git(repo, "show", "review/t/iter001:params.txt")
    assert (repo / "params.txt").read_text() == "value = 1.0\n"


def test_an_evaluators_review_reason_yields_needs_review(tmp_path):
    repo = noisy_repo(tmp_path)
    script = write_script(tmp_path, [params(5.0, review="disables the rollback gate")])
    run(repo, script, evaluator=f"{sys.executable} evaluate.py", max_iterations=1,
        noise_margin=0.0)
    last = rows(repo)[-1]
    assert last.status == "needs_review" and "disables the rollback gate" in last.note


def test_the_per_experiment_time_budget_applies_by_default(tmp_path):
    repo = make_repo(tmp_path)
    script = write_script(tmp_path, [params(2.0, mode="sleep")])
    run(repo, script, budget_s=20, max_iterations=1, max_fix_attempts=0)
    last = rows(repo)[-1]
    limit = 20 * DEFAULT_EVAL_SHARE
    assert last.status == "crash" and f"past its {limit:.0f} s budget" in last.note
    assert last.wall_s < 20  # one evaluation did not spend the whole run's budget


def test_a_cost_over_the_per_experiment_budget_is_a_veto(tmp_path):
    repo = noisy_repo(tmp_path)
    script = write_script(tmp_path, [params(9.0, cost=12.5)])
    run(repo, script, evaluator=f"{sys.executable} evaluate.py", max_iterations=1,
        noise_margin=0.0)
    last = rows(repo)[-1]
    assert last.status == "veto" and "cost $12.5000 is over the per-experiment budget" in last.note


def test_the_noise_margin_refuses_a_gain_smaller_than_the_baselines_noise(tmp_path):
    repo = noisy_repo(tmp_path)
    script = write_script(tmp_path, [params(1.1), params(1.5)])
    run(repo, script, evaluator=f"{sys.executable} evaluate.py", max_iterations=2)
    base, small, large = rows(repo)
    noise = base.metrics[ENGINE_KEY]["noise"]
    assert noise["scalars"] == pytest.approx([1.0, 1.1, 1.2])
    margin = repeat_noise([1.0, 1.1, 1.2])
    assert noise["margin"] == pytest.approx(margin) and margin == pytest.approx(0.1414, abs=1e-3)
    assert small.status == "revert" and small.noise_margin == pytest.approx(margin, abs=1e-5)
    assert "no improvement beyond the noise margin" in small.note  # +0.1 < 0.141
    assert large.status == "keep"  # +0.5 > 0.141
    # the best is now the maximum of two evaluations: the margin is widened for it
    assert large.noise_margin == pytest.approx(max_adjusted_margin(margin, 2), abs=1e-5)
