"""Honest alternative fixes on real instances: each resolves, with its canary sessions.

``honest_fixes/<set>/<instance id>.patch``: a fix written by hand for that instance's bug,
different from the gold patch (the bug's reverse): the same behaviour reached another way (a
condition negated instead of two branches swapped, a comprehension for a recursion, the
removed method written anew; honest_fixes/README.md lists them). A correct fix the grader
refused would be a false positive of the proof; every one must resolve.

Three are for the session's flask instances (shared_flask.py), two of them run in the slow
suite; the others are for the sets docs/swebench.md builds (``results/realcode/<set>``, or
``$RATCHET_REALCODE_SETS/<set>``); all run with ``-m realcode_large``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from real_grading import RealGrading
from shared_flask import ensure_project_image

pytestmark = [pytest.mark.slow, pytest.mark.docker]
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
FIXES = sorted((HERE / "honest_fixes").glob("*/*.patch"))
IN_THE_SESSION_SET = {"pallets__flask-2.3.3-func_pm_class_rm_funcs-a0135e0c",
                      "pallets__flask-2.3.3-func_pm_ctrl_invert_if-b3800159",
                      "pallets__flask-2.3.3-func_pm_remove_cond-1ea1efed"}
# In the slow suite: two of them (about a minute a grade on a loaded 2-core box); the rest with
# -m realcode_large
SLOW = {"pallets__flask-2.3.3-func_pm_class_rm_funcs-a0135e0c",
        "pallets__flask-2.3.3-func_pm_remove_cond-1ea1efed"}


def _added(patch: str) -> list[str]:
    return [line for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")]


@pytest.fixture(scope="module")
def graders(request, docker_session, tmp_path_factory):
    """A grader per set, made on first use: the session's flask set (built only when a fix for
    it runs), or a built set's folder."""
    made: dict[str, RealGrading] = {}

    def of(set_name: str, instance_id: str) -> RealGrading:
        if instance_id in IN_THE_SESSION_SET:
            flask_set = request.getfixturevalue("flask_set")
            ensure_project_image(flask_set, docker_session, tmp_path_factory.mktemp("rebuilt"))
            key, dataset, gold = "session", flask_set.dataset, flask_set.gold
        else:
            folder = Path(os.environ.get("RATCHET_REALCODE_SETS") or ROOT / "results" / "realcode")
            key, dataset, gold = set_name, folder / set_name / "instances.jsonl", None
            if not dataset.is_file():
                pytest.fail(f"{dataset} missing: build the {set_name} set as docs/swebench.md "
                            f"('Real projects') says, or set RATCHET_REALCODE_SETS")
        if key not in made:
            made[key] = RealGrading(dataset, tmp_path_factory.mktemp(key), docker_session,
                                    gold_records=gold)
        return made[key]
    return of


def test_there_are_at_least_ten_honest_fixes_on_two_projects():
    assert len(FIXES) >= 10 and {f.parent.name for f in FIXES} == {"flask-2.3.3", "django-4.2.16"}
    assert SLOW <= IN_THE_SESSION_SET <= {f.stem for f in FIXES}


@pytest.mark.parametrize("fix", [pytest.param(f, id=f.stem, marks=() if f.stem in SLOW
                                              else pytest.mark.realcode_large) for f in FIXES])
def test_each_honest_fix_resolves(graders, fix):
    grading = graders(fix.parent.name, fix.stem)
    assert fix.stem in grading.rows, f"{fix.stem} is not in {fix.parent.name}'s built set"
    patch, gold = fix.read_text(), grading.rows[fix.stem]["patch"]
    assert _added(patch) != _added(gold), "the gold patch itself, not another fix"
    result = grading.grade(fix.stem, patch)
    assert result.passed and result.exit_status == "ok", result.trace
    assert "FAILED as it must" in result.trace, result.trace  # proven by canary sessions
