"""``ratchet swe validate`` on the local instances, over a real Grader pool on a local Ray: gold
patches resolve, the no-op patch does not, and broken instances are reported with their reason
(an image that cannot build; a test command that finds no tests) with a non-zero exit."""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner

from ratchet_ray.cli import main
from ratchet_ray.suites.swebench.container import LABEL_KEY, RUN_KEY
from ratchet_ray.suites.swebench.validate import Failure, judge, noop_patch
from ratchet_ray.types import GradeResult


def test_judge_reads_each_kind_of_grade():
    ok = GradeResult(passed=True, exit_status="ok")
    unresolved = GradeResult(passed=False, exit_status="unresolved", trace="unresolved\nF2P 0/1")
    infra = GradeResult(passed=False, exit_status="image_build_failed", infra_failure=True,
                        trace="infrastructure failure (image_build_failed): RUN false")
    assert judge("i", "gold", ok) is None and judge("i", "noop", unresolved) is None
    assert judge("i", "gold", unresolved).reason.startswith("gold patch not resolved: unresolved")
    assert "(infrastructure)" in judge("i", "gold", infra).reason
    assert judge("i", "noop", ok) == Failure("i", "noop", "ok", "the no-op patch resolves: the "
                                             "FAIL_TO_PASS tests pass without the fix")
    assert judge("i", "noop", infra).status == "image_build_failed"
    assert judge("i", "gold", None, "ActorDied: x").status == "grader_died"
    assert noop_patch().startswith("diff --git a/ratchet_validate_noop.txt")


def _broken(instances: list[dict], tag: str) -> list[dict]:
    """Two broken instances: one whose image cannot build, one whose tests are never found."""
    base = instances[0]
    no_build = {**base, "instance_id": f"ratchet__nobuild{tag}-1",
                "dockerfile": base["dockerfile"] + "RUN echo 'the build breaks here' && false\n"}
    no_tests = {**base, "instance_id": f"ratchet__notests{tag}-1",
                "eval_script": base["eval_script"].replace("tests/test_ops.py",
                                                           "tests/test_missing.py")}
    return [no_build, no_tests]


@pytest.mark.docker
def test_validate_passes_the_fixture_and_reports_broken_instances(docker_session, instances,
                                                                  ray_local, tmp_path):
    tag = uuid.uuid4().hex[:8]
    # calc-1 stands for the fixture (calc-2 grades the same way; calc-3's no-op patch hangs
    # until the timeout): one Ray start, four containers, one failing build.
    good = [i for i in instances if i["instance_id"] == "ratchet__calc-1"]
    broken = _broken(instances, tag)
    dataset = tmp_path / "instances.jsonl"
    dataset.write_text("".join(json.dumps(i) + "\n" for i in [*instances, *broken]))
    out = tmp_path / "validate"
    sets = ["--set", "swebench.namespace=null", "--set", "swebench.cache_level=instance",
            "--set", "swebench.memory_mb=512", "--set", "grader.timeout_s=60",
            "--set", f"swebench.lock_dir={tmp_path / 'locks'}"]
    args = ["swe", "validate", "--dataset", str(dataset), "--workers", "2", "--out", str(out),
            *sum((["--instance", i["instance_id"]] for i in [*good, *broken]), [])]
    try:  # one validation (one Ray start): the good instances pass, the broken ones fail
        bad = CliRunner().invoke(main, [*args, *sets])
    finally:
        import docker.errors

        for instance in broken:
            try:
                docker_session.images.remove(
                    f"sweb.eval.x86_64.{instance['instance_id'].lower()}:latest", force=True)
            except docker.errors.ImageNotFound:
                pass
    assert f"{len(good)}/{len(good) + 2} instances valid" in bad.output, (bad.output, bad.exception)
    assert not any(i["instance_id"] in bad.output for i in good), bad.output
    assert "images " in bad.output and "builds" in bad.output  # the node's cache report
    assert bad.exit_code == 1, bad.output
    lines = [line for line in bad.output.splitlines() if line.startswith("FAIL ")]
    no_build = [line for line in lines if broken[0]["instance_id"] in line]
    assert no_build and all("image_build_failed" in line for line in no_build), bad.output
    assert any("the build breaks here" in line or "returned a non-zero code" in line
               for line in no_build), bad.output
    no_tests = [line for line in lines if broken[1]["instance_id"] in line]
    assert len(no_tests) == 1 and "[gold]" in no_tests[0], bad.output
    assert "gold patch not resolved" in no_tests[0], bad.output
    report = json.loads((out / "swebench_validation.json").read_text())
    assert report["checked"] == len(good) + 2 and not report["ok"]
    left = [c.name for c in docker_session.containers.list(all=True, ignore_removed=True,
                                                           filters={"label": LABEL_KEY})
            if str(out) in (c.labels or {}).get(RUN_KEY, "")]
    assert not left, f"containers left behind: {left}"


def _never(messages, json_schema=None):
    raise AssertionError("no LLM call may happen before the gold patches are validated")


@pytest.mark.docker
def test_validate_gold_stops_a_run_before_round_0(docker_session, instances, ray_local, tmp_path):
    import fakes
    from ratchet_ray.config_files import load_config
    from ratchet_ray.loop.breaker import RunStopped
    from ratchet_ray.loop.driver import run_loop
    from ratchet_ray.loop.runtime import Models

    tag = uuid.uuid4().hex[:8]
    no_build = _broken(instances, tag)[0]
    dataset = tmp_path / "instances.jsonl"
    dataset.write_text("".join(json.dumps(i) + "\n" for i in [*instances, no_build]))
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": [no_build["instance_id"]],
                                  "eval_ids": ["ratchet__calc-1"]}))
    config = load_config([], [
        "suite=swebench", "rounds=1", f"subset={json.dumps(str(subset))}",
        f"dataset_path={json.dumps(str(dataset))}", "swebench.validate_gold=true",
        "swebench.namespace=null", "swebench.cache_level=instance", "swebench.memory_mb=512",
        f"swebench.lock_dir={tmp_path / 'locks'}", f"results_dir={tmp_path / 'results'}",
        "grader.timeout_s=60", "workers.solvers=1", "workers.graders=2"])
    llm = fakes.ScriptedLLM(_never)
    with pytest.raises(RunStopped) as stopped:
        run_loop(config, models=Models(llm=llm, embedder=fakes.HashEmbedder()),
                 show_progress=False)
    message = str(stopped.value)
    assert "swebench.validate_gold: 1/2 instances valid" in message, message
    assert no_build["instance_id"] in message and "image_build_failed" in message
    assert "ratchet__calc-1" not in message.split("(all in")[0]
    run_dir = next((tmp_path / "results" / "swebench").iterdir())
    report = json.loads((run_dir / "swebench_validation.json").read_text())
    assert report["checked"] == 2 and {f["instance_id"] for f in report["failures"]} == {
        no_build["instance_id"]}
    assert not (run_dir / "round_00" / "summary.json").exists() and llm.calls == []


def test_unknown_ids_and_missing_gold_patches_are_named(instances, tmp_path):
    from ratchet_ray.suites.swebench.settings import SwebenchSettings
    from ratchet_ray.suites.swebench.validate import gold_pairs

    dataset = tmp_path / "instances.jsonl"
    no_gold = {**instances[0], "instance_id": "ratchet__nogold-1", "patch": ""}
    dataset.write_text("".join(json.dumps(i) + "\n" for i in [*instances, no_gold]))
    settings = SwebenchSettings(dataset_name=str(dataset), namespace=None)
    pairs = gold_pairs(settings, ["ratchet__calc-2", "ratchet__calc-1"])
    assert [(t.task_id, "patch" in t.payload) for t, _ in pairs] == [
        ("ratchet__calc-2", False), ("ratchet__calc-1", False)]  # the task never holds the gold
    assert pairs[1][1] == instances[0]["patch"]
    with pytest.raises(ValueError, match="not in .*: ratchet__calc-99"):
        gold_pairs(settings, ["ratchet__calc-1", "ratchet__calc-99"])
    with pytest.raises(ValueError, match="without a gold `patch`.*ratchet__nogold-1"):
        gold_pairs(settings, ["ratchet__nogold-1"])


def test_the_registry_hook_grades_through_the_callable_it_is_given(instances, tmp_path):
    """The hook's plumbing without Docker: a stand-in grading callable (the driver passes
    ``loop.grade_pool.grade_all`` over the run's Grader pool)."""
    from ratchet_ray.config_files import load_config
    from ratchet_ray.suites import before_rounds
    from ratchet_ray.suites.swebench.settings import settings_from_config
    from ratchet_ray.suites.swebench.validate import REPORT_FILE, gold_pairs

    dataset = tmp_path / "instances.jsonl"
    dataset.write_text("".join(json.dumps(i) + "\n" for i in instances))
    seen: list[tuple[str, str]] = []

    def grade(items):
        seen.extend((task.task_id, patch) for task, patch in items)
        # calc-1's gold resolves, calc-2's does not; every no-op is unresolved; the pool
        # lost calc-2's no-op.
        lost = ("ratchet__calc-2", noop_patch())
        return [GradeResult(passed=True) if patch == instances[0]["patch"]
                else "ActorDied: gone" if (task.task_id, patch) == lost
                else GradeResult(passed=False, exit_status="unresolved", trace="unresolved")
                for task, patch in items]

    base = ["suite=swebench", f"dataset_path={json.dumps(str(dataset))}"]
    settings = settings_from_config(load_config([], base))
    tasks = [task for task, _gold in gold_pairs(settings, ["ratchet__calc-1", "ratchet__calc-2"])]
    assert before_rounds(load_config([], base), grade, tasks, tmp_path) is None and not seen
    message = before_rounds(load_config([], [*base, "swebench.validate_gold=true"]), grade,
                            tasks, tmp_path)
    assert [k for k, _ in seen] == ["ratchet__calc-1"] * 2 + ["ratchet__calc-2"] * 2
    assert message.startswith("swebench.validate_gold: 1/2 instances valid")
    assert "FAIL ratchet__calc-2 [gold] unresolved" in message
    assert "FAIL ratchet__calc-2 [noop] grader_died: ActorDied: gone" in message
    assert json.loads((tmp_path / REPORT_FILE).read_text())["checked"] == 2
