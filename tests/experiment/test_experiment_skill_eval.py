"""``ratchet experiment eval-skill-loop``: the built-in evaluator, end to end on the real loop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ratchet_ray.cli import main
from ratchet_ray.run_config.files import load_config
from ratchet_ray.experiment.contract import parse_contract
from ratchet_ray.roles.solver_prompt import SOLVER_TEMPLATE

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}
ENV.pop("RAY_ADDRESS", None)


def test_bad_seeds_are_a_usage_error(tmp_path):
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": ["Mbpp/2"], "eval_ids": ["Mbpp/3"]}))
    result = CliRunner().invoke(main, ["experiment", "eval-skill-loop", "--subset", str(subset),
                                       "--seeds", "42,x"])
    assert result.exit_code == 2 and "expected comma-separated integers" in result.output


@pytest.mark.slow
@pytest.mark.model
def test_eval_skill_loop_prints_the_contract_for_a_candidate_overlay(tmp_path):
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": ["Mbpp/2", "Mbpp/3"],
                                  "eval_ids": ["Mbpp/4", "Mbpp/6"]}))
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("synth:\n  min_cluster_size: 2\n")  # a knob the manifest allows
    manifest = tmp_path / "manifest.yaml"  # the evaluator's own settings: few actors, cheap
    # The quickstart's caps (Makefile QUICKSTART_FLAGS): the base model's runaway answers stop
    # at 256 tokens, its verdicts at 120.
    manifest.write_text("allowed_keys: [synth.*]\nsettings:\n  workers: {solvers: 1, graders: 1}\n"
                        "  llm.max_tokens: 256\n  llm.roles.critic.max_tokens: 120\n"
                        "cost_budget_usd: 1\n")
    meta = tmp_path / "meta.md"
    meta.write_text((ROOT / "configs" / "meta_skills" / "default_mbpp.md").read_text()
                    + "\n- Candidate rule: name the input type in applies_when.\n")
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "solver.md").write_text(SOLVER_TEMPLATE.replace("Use only the standard library.",
                                                               "Candidate: no imports at all."))
    runs = tmp_path / "runs"
    proc = subprocess.run(
        [sys.executable, "-m", "ratchet_ray.cli", "experiment", "eval-skill-loop",
         "--subset", str(subset), "--seeds", "42", "--rounds", "1",
         "--config-overlay", str(overlay), "--meta-skill", str(meta), "--scalar", "final_pass",
         "--prompts-dir", str(prompts), "--manifest", str(manifest), "--results-dir", str(runs)],
        cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = parse_contract(proc.stdout)
    assert result.seeds == [42] and result.lower_is_better is False
    assert 0.0 <= result.scalar <= 1.0 and len(result.metrics["scalar_per_seed"]) == 1
    assert result.scalar == result.metrics["final_pass_at_1"]
    assert result.metrics["prop1_floor"] == pytest.approx(
        result.metrics["round0_pass_at_1"] - 0.345, abs=1e-3)
    assert result.metrics["cost_usd"] == 0.0 and len(result.metrics["evaluator_sha"]) == 16
    assert len(result.metrics["manifest_sha256"]) == 64 and "needs_review" not in result.metrics
    (run_dir,) = (runs / "mbpp").iterdir()
    metas = sorted(p.name for p in (run_dir / "meta-skills").glob("*.md"))
    assert metas == ["candidate_mbpp.md"]  # the candidate's prior replaced the shipped default
    assert "Candidate rule" in (run_dir / "meta-skills" / "candidate_mbpp.md").read_text()
    assert json.loads((run_dir / "train_ids.json").read_text()) == ["Mbpp/2", "Mbpp/3"]
    # The candidate's role prompts are the run's: recorded (folder and digest) for a resume.
    recorded = load_config([run_dir / "config.yaml"]).prompts
    assert recorded.dir == str(prompts) and "Candidate: no imports" in recorded.texts["solver"]
    config = load_config([run_dir / "config.yaml"])  # the manifest's pins and the cost share
    assert (config.workers.solvers, config.workers.graders) == (1, 1)
    assert config.budget.max_cost_usd == 1.0 and config.synth.min_cluster_size == 2


def test_a_bad_candidate_prompt_is_a_usage_error_before_any_run(tmp_path):
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": ["Mbpp/2"], "eval_ids": ["Mbpp/3"]}))
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "solver.md").write_text("Solve it.\n\nTask:\n{task}\n")
    result = CliRunner().invoke(main, ["experiment", "eval-skill-loop", "--subset", str(subset),
                                       "--prompts-dir", str(prompts)])
    assert result.exit_code == 2, result.output
    assert "solver.md: missing required placeholder(s) {guidance}" in result.output
