"""Our SWE-bench verdicts against the official harness's on the same predictions file
(``ratchet export --predictions``), offline on the local images: they agree on an honest patch
and on a wrong one, and on a forgery they differ the way docs/swebench.md says (the harness
parses the test log the patch can rewrite, so it resolves a patch that rewrites the graded tests' reports to
passed; ours calls it tampering). The whole corpus is ``bench/swe_harness_agreement.py``."""

from __future__ import annotations

import pytest
import swebench_instances
from forgeries import FORGERIES
from official_harness import harness_dataset, official_grades

from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.report.predictions import export_predictions, read_predictions
from ratchet_ray.suites.swebench.docker.images import image_name
from ratchet_ray.suites.swebench.grader import SwebenchGrader
from ratchet_ray.types import Capsule, capsule_id

pytestmark = [pytest.mark.docker, pytest.mark.slow]
README_ONLY = ("diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n"
               " calc: a tiny library used to test the SWE-bench harness.\n+See the tests.\n")


def test_ours_and_the_official_harness_on_one_predictions_file(docker_client, local_settings,
                                                               limits, tasks, gold, tmp_path):
    grader = SwebenchGrader(local_settings, limits, tmp_path / "logs", client=docker_client)
    run = tmp_path / "swebench_run"
    run.mkdir()
    (run / "config.yaml").write_text("suite: swebench\nllm:\n  model: corpus\n")
    patches = {0: gold["ratchet__calc-1"], 1: README_ONLY, 2: FORGERIES["forge_only_graded"]}
    ours = {}
    for round_, patch in patches.items():
        result = grader.grade(tasks["ratchet__calc-1"], patch)
        ours[round_] = result.passed, result.exit_status
        EvidenceStore(run).append("capsule", round_, [Capsule(
            capsule_id=capsule_id(run.name, round_, "eval", "ratchet__calc-1"), run_id=run.name,
            round=round_, split="eval", task_id="ratchet__calc-1", skill_id="NONE",
            passed=result.passed, exit_status=result.exit_status, output=patch)])
    rows = [r for r in swebench_instances.make_instances() if r["instance_id"] == "ratchet__calc-1"]
    dataset = harness_dataset(rows, tmp_path / "harness.jsonl",
                              lambda i: image_name(i, local_settings))
    theirs = {}
    for round_ in patches:
        preds = tmp_path / f"preds_r{round_}.jsonl"
        export_predictions(run, preds, round_=round_)
        (line,) = read_predictions(preds)
        assert line["model_patch"] == patches[round_] and line["model_name_or_path"] == "corpus"
        theirs[round_] = official_grades(dataset, preds, tmp_path / f"h{round_}", f"t{round_}",
                                         workers=1)["ratchet__calc-1"]
    assert (ours[0][0], theirs[0]) == (True, "resolved")
    assert (ours[1][0], theirs[1]) == (False, "unresolved")
    assert ours[2] == (False, "test_tampering") and theirs[2] == "resolved"
