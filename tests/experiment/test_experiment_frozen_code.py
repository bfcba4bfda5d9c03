"""The experiment's evaluator frozen down to its code (issue 40): the built-in evaluator's modules
and ``ratchet_ray/metrics.py`` are hashed one by one and compared before every iteration, an
edit to one stops the run naming the file; the evaluator's own ``--manifest`` is frozen even
where an editable glob matches it (the engine refuses that glob); the hashes an evaluator
reports of itself are pinned; the noise margin accounts for the best being a maximum; and the
built-in evaluator says when its rounds are too few for the Curator or rollback to act."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from experiment_helpers import git, make_repo, params, rows, run, settings, write_script
from ratchet_ray.experiment import evaluator as evaluator_module
from ratchet_ray.experiment.contract import expected_max_normal, max_adjusted_margin
from ratchet_ray.experiment.engine import ExperimentEngine, ExperimentError
from ratchet_ray.experiment.evaluator import BUILTIN_CODE, EvaluatorChanged, FrozenEvaluator
from ratchet_ray.experiment.proposals import ScriptProposer

# The evaluator script ignores its arguments; the token makes the engine treat the command as the
# built-in evaluator, whose code is then frozen with it.
BUILTIN_LIKE = f"{sys.executable} evaluate.py experiment eval-skill-loop"


@pytest.fixture
def installed_copy(tmp_path, monkeypatch):
    """The built-in evaluator's code as a separate install outside the target repo (a copy of
    this checkout's files), so a test may edit it."""
    root = tmp_path / "site-packages"
    for rel in BUILTIN_CODE:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(evaluator_module.package_root() / rel, root / rel)
    monkeypatch.setattr(evaluator_module, "package_root", lambda: root)
    return root


class EditsBetweenIterations(ScriptProposer):
    """A script proposer; before its ``at``-th proposal something else edits ``path``."""

    def __init__(self, script: Path, path: Path, at: int):
        super().__init__(script)
        self.path, self.at, self.calls = path, at, 0

    def propose(self, ctx):
        self.calls += 1
        if self.calls == self.at:
            self.path.write_text(self.path.read_text() + "\n# moved the yardstick\n")
        return super().propose(ctx)


@pytest.mark.parametrize("rel", ["ratchet_ray/metrics.py", "ratchet_ray/experiment/skill_eval.py"])
def test_an_edit_to_the_evaluators_code_between_iterations_stops_the_run_naming_the_file(
        tmp_path, installed_copy, rel):
    repo = make_repo(tmp_path)
    frozen = FrozenEvaluator(repo, BUILTIN_LIKE)
    assert {str(installed_copy / r) for r in BUILTIN_CODE} <= {str(p) for p in frozen.files()}
    script = write_script(tmp_path, [params(2), params(3), params(4)])
    engine = ExperimentEngine(settings(repo, evaluator=BUILTIN_LIKE),
                              EditsBetweenIterations(script, installed_copy / rel, at=2))
    with pytest.raises(EvaluatorChanged, match=f"file\\(s\\) {installed_copy / rel} changed"):
        engine.run()
    ledger = rows(repo)
    assert [r.status for r in ledger] == ["keep", "keep", "discard"]
    assert str(installed_copy / rel) in ledger[-1].note and ledger[-1].scalar is None
    again = ExperimentEngine(settings(repo, evaluator=BUILTIN_LIKE), ScriptProposer(script))
    with pytest.raises(EvaluatorChanged, match=rel):  # a resume refuses it too
        again.run()


def test_in_a_ratchet_ray_checkout_the_evaluators_code_is_never_editable(tmp_path):
    repo = make_repo(tmp_path)
    (repo / "ratchet_ray").mkdir()
    (repo / "ratchet_ray" / "metrics.py").write_text("def loop_metrics(rows):\n    return rows\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a checkout holding the evaluator's code")
    with pytest.raises(ExperimentError, match="ratchet_ray/metrics.py match an --editable glob"):
        ExperimentEngine(settings(repo, evaluator=BUILTIN_LIKE, editable=["ratchet_ray/*.py"]),
                         ScriptProposer(write_script(tmp_path, [params(2)])))
    edit = {"reasoning": "loosen the scalar", "edits": [
        {"path": "ratchet_ray/metrics.py", "content": "def loop_metrics(rows):\n    return 1\n"}]}
    run(repo, write_script(tmp_path, [edit]), evaluator=BUILTIN_LIKE, max_iterations=1)
    violation = rows(repo)[-1]
    assert violation.status == "policy_violation"
    assert "ratchet_ray/metrics.py: protected" in violation.note


@pytest.mark.parametrize("form", ["--manifest manifest.yaml", "--manifest=manifest.yaml"])
def test_an_editable_glob_that_matches_the_evaluators_manifest_is_refused(tmp_path, form):
    repo = make_repo(tmp_path)
    (repo / "manifest.yaml").write_text("allowed_keys: [synth.*]\n")
    (repo / "knobs.yaml").write_text("synth: {min_cluster_size: 3}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a manifest and a knob file")
    command = f"{BUILTIN_LIKE} {form} --config-overlay knobs.yaml"
    frozen = FrozenEvaluator(repo, command, inputs=["*.yaml"])
    assert "manifest.yaml" in frozen.in_repo and "knobs.yaml" not in frozen.in_repo
    with pytest.raises(ExperimentError, match="manifest.yaml match an --editable glob"):
        ExperimentEngine(settings(repo, evaluator=command, editable=["*.yaml"]),
                         ScriptProposer(write_script(tmp_path, [params(2)])))
    engine = ExperimentEngine(settings(repo, evaluator=command, editable=["knobs.yaml"]),
                              ScriptProposer(write_script(tmp_path, [params(2)])))
    assert engine.policy.violations(["manifest.yaml"]) == ["manifest.yaml: protected"]


REPORTING_EVALUATOR = '''\
import json
from pathlib import Path

params = dict(line.split(" = ", 1) for line in Path("params.txt").read_text().splitlines()
              if " = " in line)
print(json.dumps({"scalar": float(params["value"]), "vetoes": [], "seeds": [42],
                  "metrics": {"evaluator_config_sha256": params.get("cfg", "base").strip()},
                  "lower_is_better": False}))
'''


def test_a_candidate_whose_evaluation_reports_another_yardstick_is_vetoed(tmp_path):
    repo = make_repo(tmp_path)
    (repo / "evaluate.py").write_text(REPORTING_EVALUATOR)
    git(repo, "commit", "-qam", "an evaluator that reports the config it resolves")
    script = write_script(tmp_path, [params(2, cfg="loosened"), params(3)])
    run(repo, script, noise_margin=0.0, max_iterations=2)
    base, moved, honest = rows(repo)
    assert base.metrics["_engine"]["reported"] == {"evaluator_config_sha256": "base"}
    assert moved.status == "veto" and "evaluator_config_sha256" in moved.note
    assert honest.status == "keep"


def test_the_margin_grows_with_the_evaluations_the_best_was_chosen_from():
    assert max_adjusted_margin(0.1, 0) == max_adjusted_margin(0.1, 1) == 0.1
    widened = [max_adjusted_margin(0.1, n) for n in (2, 5, 10, 25)]
    assert widened == sorted(widened) and widened[0] > 0.1
    assert expected_max_normal(10) == pytest.approx(1.54, abs=0.03)  # tables: 1.539


def test_the_built_in_evaluator_runs_long_enough_by_default_or_says_why_not():
    from ratchet_ray.cli.experiment import eval_skill_loop
    from ratchet_ray.settings.schema import LoopConfig
    from ratchet_ray.experiment.skill_eval import governance_gaps

    rounds = next(p for p in eval_skill_loop.params if p.name == "rounds").default
    assert governance_gaps(LoopConfig(rounds=rounds)) == []  # the Default's 60/40 split
    gaps = governance_gaps(LoopConfig(rounds=3, n_train=6, n_eval=4))
    assert any("rollback cannot act in 3 round(s)" in g for g in gaps)
    assert any("at most 20 routed attempts" in g and "min_trials=100" in g for g in gaps)
    assert governance_gaps(LoopConfig(rounds=3, n_train=6, n_eval=4,
                                      rollback={"enabled": False},
                                      curator={"min_trials": 20})) == []
