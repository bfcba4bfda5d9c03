"""The evaluator frozen to its import closure (issue 51): every module the evaluation path
imports, found from the ``import`` statements (lazy and relative ones too), the data it reads
and its config are hashed and protected, so a candidate that edits one is a
``policy_violation`` before it runs: the built-in evaluator's grader and a module two imports
away from it, even under a broad editable glob, and a custom evaluator's module two imports
away (a custom evaluator's walk stops at the editable module it imports on purpose, the
candidate)"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from experiment_helpers import git, make_repo, params, rows, run, write_script
from ratchet_ray.experiment.closure import import_closure
from ratchet_ray.experiment.evaluator import FrozenEvaluator, package_root

BUILTIN_LIKE = f"{sys.executable} evaluate.py experiment eval-skill-loop --suite mbpp"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_closure_follows_lazy_relative_and_from_imports(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/entry.py": "import json\n\ndef f():\n    from pkg import lazy  # a function's import\n",
        "pkg/lazy.py": "from . import deep\n",
        "pkg/deep.py": "from pkg.sub.leaf import VALUE\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/leaf.py": "VALUE = 1\n",
        "pkg/unused.py": "import pkg.entry\n",
        "broken.py": "def (:\n",
    })
    found = import_closure(tmp_path, ["pkg.entry", "broken"])
    assert set(found) == {"pkg", "pkg.entry", "pkg.lazy", "pkg.deep", "pkg.sub", "pkg.sub.leaf",
                          "broken"}  # json is not under the root; an unparsable file is kept
    assert found["pkg.sub.leaf"] == tmp_path / "pkg" / "sub" / "leaf.py"


def test_a_custom_evaluators_module_two_imports_away_is_refused(tmp_path):
    repo = make_repo(tmp_path)
    evaluate = repo / "evaluate.py"
    evaluate.write_text("import yard.score  # the yardstick's own module\n" + evaluate.read_text())
    _write(repo, {"yard/__init__.py": "", "yard/score.py": "from yard import grade\nimport model\n",
                  "yard/grade.py": "LIMIT = 1\n", "model.py": "import helper\nK = 1\n",
                  "helper.py": "H = 1\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "an evaluator importing its yardstick and the candidate")
    editable = ["params.txt", "model.py", "helper.py"]
    frozen = FrozenEvaluator(repo, f"{sys.executable} evaluate.py", inputs=editable)
    # yard/grade.py is two imports away (evaluate -> yard.score -> yard.grade): frozen, hashed
    # and protected; model.py, which the yardstick imports on purpose and an editable glob
    # names, is the candidate: the walk stops there (helper.py, only it imports, stays too)
    assert {"yard/__init__.py", "yard/score.py", "yard/grade.py"} <= frozen.closure
    assert not {"model.py", "helper.py"} & frozen.closure
    two_away = {"reasoning": "relax the limit", "edits": [
        {"path": "yard/grade.py", "content": "LIMIT = 0\n"}]}
    candidate = {"reasoning": "a better model", "edits": [
        {"path": "model.py", "content": "import helper\nK = 2\n"},
        {"path": "params.txt", "content": "value = 2\n"}]}
    run(repo, write_script(tmp_path, [two_away, candidate]), editable=editable, max_iterations=2)
    base, refused, kept = rows(repo)
    assert refused.status == "policy_violation" and refused.scalar is None  # never ran
    assert "yard/grade.py: protected" in refused.note
    assert kept.status == "keep"  # the candidate the evaluator imports stays editable


def test_the_built_in_evaluators_grader_and_what_it_imports_are_refused(tmp_path):
    repo = make_repo(tmp_path)
    shutil.copytree(package_root() / "ratchet_ray", repo / "ratchet_ray",
                    ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a ratchet-ray checkout")
    frozen = FrozenEvaluator(repo, BUILTIN_LIKE)
    suite = "ratchet_ray/suites/mbpp"
    # the grader, the dataset loader, the run dir that writes eval_pass_at_1, and confine.py:
    # two imports from the grader (grader -> sandbox -> a lazy import of confine)
    assert {f"{suite}/grader.py", f"{suite}/dataset.py", f"{suite}/sandbox.py",
            f"{suite}/confine.py", "ratchet_ray/loop/rundir.py"} <= frozen.closure
    assert "ratchet_ray/roles/router.py" not in frozen.closure  # the loop under test
    outside = {p.name for p in frozen.outside}
    assert {"default.yaml", "rundir.py", "grader.py"} <= outside  # this interpreter's copies
    edits = [{"reasoning": f"edit {rel}", "edits": [{"path": rel, "content": "PASS = True\n"}]}
             for rel in (f"{suite}/grader.py", f"{suite}/confine.py")]
    edits.append({"reasoning": "a routing change", "edits": [
        {"path": "ratchet_ray/roles/router.py",
         "content": (repo / "ratchet_ray/roles/router.py").read_text() + "\n# tuned\n"},
        {"path": "params.txt", "content": "value = 2\n"}]})
    run(repo, write_script(tmp_path, edits), evaluator=BUILTIN_LIKE,
        editable=["params.txt", "ratchet_ray/suites/**", "ratchet_ray/roles/**"],
        max_iterations=3)
    base, grader, confine, router = rows(repo)
    assert grader.status == confine.status == "policy_violation"
    assert f"{suite}/grader.py: protected" in grader.note
    assert f"{suite}/confine.py: protected" in confine.note
    assert router.status == "keep"
