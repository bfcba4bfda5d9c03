"""``ratchet swe validate`` as a user runs it: a subprocess from a plain shell with no Ray
running (it starts its own), on the local instances: gold patches resolve, the no-op patch does
not, a broken image is reported with its reason, every grade is ``validation`` evidence that
``ratchet query`` reads, and failing instances land in the quarantine file. ``--repeat 5`` finds
a deliberately flaky instance (its test fails on about 3 runs in 4, drawn per run from the OS),
and a run with ``swebench.quarantine`` leaves it out of both splits. A cluster where no grader
can start, and a Docker daemon that does not answer, fail in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from ratchet_ray.suites.swebench.docker.container import LABEL_KEY, RUN_KEY
from ratchet_ray.suites.swebench.validate import (Failure, Outcome, Validation, judge,
                                                  noop_patch, repeat_patch)
from ratchet_ray.types import GradeResult

RATCHET = str(Path(sys.executable).with_name("ratchet"))
FLAKY_TEST = """diff --git a/tests/test_flaky.py b/tests/test_flaky.py
new file mode 100644
--- /dev/null
+++ b/tests/test_flaky.py
@@ -0,0 +1,6 @@
+import os
+
+
+def test_sometimes():
+    # Fails on about 3 runs in 4: one byte drawn from the OS per run.
+    assert os.urandom(1)[0] % 4 == 0
"""


def _shell(args: list[str], tmp_path: Path, env: dict | None = None,
           timeout: int = 900) -> subprocess.CompletedProcess:
    """``ratchet ARGS`` from a plain shell: a fresh process, no RAY_ADDRESS, no Ray of ours."""
    base = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "PYTEST_CURRENT_TEST")}
    return subprocess.run([RATCHET, *args], cwd=tmp_path, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=timeout)


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


def test_repeats_are_aggregated_per_instance_and_quarantined():
    """Outcomes of 3 repeats: a flaky gold (1 of 3 failed), a no-op that once resolved, a clean
    instance; what the quarantine lists and the header that makes each repeat a fresh grade."""
    gold = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    assert repeat_patch(gold, 0) == gold and repeat_patch(gold, 2).endswith(gold)
    assert repeat_patch(gold, 2).splitlines()[0] == "ratchet swe validate: repeat 2"

    def out(instance, kind, repeat, passed, status="ok"):
        grade = GradeResult(passed=passed, exit_status=status)
        return Outcome(instance, kind, repeat, passed, status, False, 1.0, "",
                       judge(instance, kind, grade))

    outcomes = [out("flaky", "gold", r, r != 1, "ok" if r != 1 else "unresolved") for r in range(3)]
    outcomes += [out("flaky", "noop", r, False, "unresolved") for r in range(3)]
    outcomes += [out("weak", "gold", r, True) for r in range(3)]
    outcomes += [out("weak", "noop", r, r == 0, "ok" if r == 0 else "unresolved") for r in range(3)]
    outcomes += [out("good", k, r, k == "gold", "ok" if k == "gold" else "unresolved")
                 for k in ("gold", "noop") for r in range(3)]
    from ratchet_ray.suites.swebench.validate import _failures

    result = Validation(3, _failures(outcomes, 3), repeat=3, outcomes=outcomes)
    assert result.failed_instances == ["flaky", "weak"]
    assert result.flaky_instances == ["flaky", "weak"]
    assert result.summary().startswith("1/3 instances valid (gold resolves, no-op does not on "
                                       "all 3 repeats; 2 flaky)")
    assert result.gold_resolved() == {"flaky": 2, "weak": 3, "good": 3}
    assert result.quarantine() == {
        "flaky": "gold patch not resolved in 1 of 3 repeats (unresolved)",
        "weak": "no-op patch resolved in 1 of 3 repeats (ok)"}
    assert result.lines()[0] == ("FAIL flaky [gold] unresolved: gold patch not resolved: "
                                 "(failed 1 of 3 repeats: flaky; statuses ok, unresolved)")
    # Failing every repeat, but not the same way each time, is unstable too.
    always = [out("moody", "gold", r, False, ("unresolved", "gold_unresolved")[r % 2])
              for r in range(3)]
    [moody] = _failures(always, 3)
    assert moody.failed == 3 and moody.flaky and moody.statuses == ["gold_unresolved",
                                                                     "unresolved"]


def _tagged(instance: dict, name: str, tag: str, **fields) -> dict:
    """The instance under an id of this test only: another session's fixture cleanup removes the
    shared fixture images (``sweb.eval...ratchet__calc-1``) from the one daemon."""
    return {**instance, "instance_id": f"ratchet__{name}{tag}-1", **fields}


def _broken(instances: list[dict], tag: str) -> list[dict]:
    """Two broken instances: one whose image cannot build, one whose tests are never found."""
    base = instances[0]
    breaks = "RUN echo 'the build breaks here' && false\n"
    no_build = _tagged(base, "nobuild", tag, dockerfile=base["dockerfile"] + breaks)
    no_tests = _tagged(base, "notests", tag, eval_script=base["eval_script"].replace(
        "tests/test_ops.py", "tests/test_missing.py"))
    return [no_build, no_tests]


def _flaky(instances: list[dict], tag: str) -> dict:
    """calc-1 with one more PASS_TO_PASS test that fails on about 3 runs in 4."""
    import swebench_instances

    base = instances[0]
    old_patch = swebench_instances.TEST_PATCH["ratchet__calc-1"]
    script = base["eval_script"].replace(old_patch.rstrip("\n"),
                                         (old_patch + FLAKY_TEST).rstrip("\n"))
    script = script.replace("-p no:cacheprovider tests/test_ops.py",
                            "-p no:cacheprovider tests/test_ops.py tests/test_flaky.py")
    assert script.count("tests/test_flaky.py") >= 3, "the fixture's eval script changed shape"
    p2p = json.loads(base["PASS_TO_PASS"]) + ["tests/test_flaky.py::test_sometimes"]
    return _tagged(base, "flaky", tag, test_patch=old_patch + FLAKY_TEST, eval_script=script,
                   PASS_TO_PASS=json.dumps(p2p))


SETS = ["--set", "swebench.namespace=null", "--set", "swebench.memory_mb=512",
        "--set", "swebench.grade_command_timeout_s=60"]


def _validate(tmp_path: Path, dataset: Path, ids: list[str], *extra: str):
    out = tmp_path / "validate"
    args = ["swe", "validate", "--dataset", str(dataset), "--out", str(out), *extra, *SETS,
            "--set", f"swebench.lock_dir={tmp_path / 'locks'}",
            "--set", f"swebench.gold_records={tmp_path / 'gold'}",
            *sum((["--instance", i] for i in ids), [])]
    return _shell(args, tmp_path), out


def _query(tmp_path: Path, out: Path, sql: str) -> list[dict]:
    done = _shell(["--db", str(out), "query", "--format", "json", sql], tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def _cleanup(docker_session, instances: list[dict], out: Path) -> None:
    import docker.errors

    for instance in instances:
        try:
            docker_session.images.remove(
                f"sweb.eval.x86_64.{instance['instance_id'].lower()}:latest", force=True)
        except docker.errors.ImageNotFound:
            pass
    left = [c.name for c in docker_session.containers.list(all=True, ignore_removed=True,
                                                           filters={"label": LABEL_KEY})
            if str(out) in (c.labels or {}).get(RUN_KEY, "")]
    assert not left, f"containers left behind: {left}"


@pytest.mark.docker
def test_validate_from_a_shell_passes_gold_and_reports_a_broken_image(docker_session, instances,
                                                                      tmp_path):
    tag = uuid.uuid4().hex[:8]
    good = _tagged(instances[0], "good", tag)
    no_build = _broken(instances, tag)[0]
    dataset = tmp_path / "instances.jsonl"
    dataset.write_text("".join(json.dumps(i) + "\n" for i in [*instances, good, no_build]))
    try:
        # the cheat probe on (beyond the paper, off in the Default): its twin records are made
        done, out = _validate(tmp_path, dataset, [good["instance_id"], no_build["instance_id"]],
                              "--set", "cheat_probe.enabled=true")
    finally:
        _cleanup(docker_session, [good, no_build], tmp_path / "validate")
    text = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in text, text[-4000:]
    assert "1/2 instances valid" in done.stdout, text[-4000:]
    fails = [line for line in done.stdout.splitlines() if line.startswith("FAIL ")]
    assert fails and all(no_build["instance_id"] in line for line in fails), done.stdout
    assert all("image_build_failed" in line for line in fails), done.stdout
    assert any("the build breaks here" in line or "returned a non-zero code" in line
               for line in fails), done.stdout
    assert "images " in done.stdout and "builds" in done.stdout  # the node's cache report
    rows = _query(tmp_path, out, "select instance_id, patch, repeat, passed, valid, exit_status, "
                                 "image_digest from validation order by instance_id, patch")
    assert [(r["instance_id"], r["patch"], r["passed"], r["valid"]) for r in rows] == [
        (good["instance_id"], "gold", True, True), (good["instance_id"], "noop", False, True),
        (no_build["instance_id"], "gold", False, False),
        (no_build["instance_id"], "noop", False, False)]
    assert rows[0]["image_digest"].startswith("sha256:")  # the image graded, kept for a run
    # the probe is on: the good instance's twin record (its F2P mutant) is made for the run
    twins = list((tmp_path / "gold" / good["instance_id"]).glob("*.twin.json"))
    assert len(twins) == 1, done.stdout[-2000:]
    assert json.loads(twins[0].read_text())["mutant"]["test"] == "tests/test_ops.py::test_add"
    quarantine = json.loads((tmp_path / "instances.jsonl.quarantine.json").read_text())
    assert list(quarantine["instances"]) == [no_build["instance_id"]]
    assert "image_build_failed" in quarantine["instances"][no_build["instance_id"]]["reason"]
    report = json.loads((out / "swebench_validation.json").read_text())
    assert report["checked"] == 2 and not report["ok"]


@pytest.mark.docker
def test_repeat_5_finds_a_flaky_instance_and_a_run_leaves_it_out(docker_session, instances,
                                                                 tmp_path):
    from ratchet_ray.run_config.files import load_config
    from ratchet_ray.suites import suite_for
    from ratchet_ray.suites.base import split_tasks
    from ratchet_ray.suites.swebench.quarantine import quarantine_report
    from ratchet_ray.suites.swebench.settings import settings_from_config

    tag = uuid.uuid4().hex[:8]
    flaky = _flaky(instances, tag)
    dataset = tmp_path / "instances.jsonl"
    dataset.write_text("".join(json.dumps(i) + "\n" for i in [*instances, flaky]))
    try:
        done, out = _validate(tmp_path, dataset, [flaky["instance_id"]], "--repeat", "5")
    finally:
        _cleanup(docker_session, [flaky], tmp_path / "validate")
    text = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in text, text[-4000:]
    assert "0/1 instances valid (gold resolves, no-op does not on all 5 repeats" in done.stdout
    rates = _query(tmp_path, out, "select instance_id, gold_runs, gold_resolved, noop_runs, "
                                  "noop_bad, gold_flake_rate from (select instance_id, "
                                  "count(*) filter (where patch = 'gold') gold_runs, "
                                  "count(*) filter (where patch = 'gold' and valid) gold_resolved,"
                                  " count(*) filter (where patch = 'noop') noop_runs, "
                                  "count(*) filter (where patch = 'noop' and not valid) noop_bad,"
                                  " 1 - gold_resolved / gold_runs gold_flake_rate "
                                  "from validation group by instance_id)")
    assert len(rates) == 1 and rates[0]["gold_runs"] == 5 and rates[0]["noop_runs"] == 5, rates
    assert rates[0]["gold_resolved"] < 5 and rates[0]["noop_bad"] == 0, rates
    assert (f"gold {flaky['instance_id']}: resolved {rates[0]['gold_resolved']} of 5"
            in done.stdout), done.stdout  # the command reads the same back (a named query)
    repeats = _query(tmp_path, out, "select distinct repeat from validation order by repeat")
    assert [r["repeat"] for r in repeats] == [0, 1, 2, 3, 4]
    quarantine = tmp_path / "instances.jsonl.quarantine.json"
    entry = json.loads(quarantine.read_text())["instances"][flaky["instance_id"]]
    assert entry["repeats"] == 5 and entry["gold_resolved"] == rates[0]["gold_resolved"]
    assert "gold patch not resolved in" in entry["reason"] and "of 5 repeats" in entry["reason"]

    # A run with the quarantine: the flaky instance is in neither split, random or a subset's.
    base = ["suite=swebench", f"dataset_path={json.dumps(str(dataset))}",
            f"swebench.quarantine={json.dumps(str(quarantine))}"]
    config = load_config([], [*base, "n_train=2", "n_eval=1"])
    tasks = suite_for(config).load_tasks(config)
    train, eval_ = split_tasks(tasks, config)
    assert len(train) == 2 and len(eval_) == 1
    assert flaky["instance_id"] not in {t.task_id for t in train + eval_}
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": [flaky["instance_id"], "ratchet__calc-2"],
                                  "eval_ids": ["ratchet__calc-1"]}))
    config = load_config([], [*base, f"subset={json.dumps(str(subset))}"])
    train, eval_ = split_tasks(tasks, config)
    assert [t.task_id for t in train] == ["ratchet__calc-2"]
    assert [t.task_id for t in eval_] == ["ratchet__calc-1"]
    report = quarantine_report(settings_from_config(config))  # round 0's summary says so
    assert report["excluded"] == 1 and flaky["instance_id"] in report["instances"]


def test_no_grader_can_start_is_one_line(instances, tmp_path):
    """A cluster without CPUs or ``docker`` slots: no grader can be placed; the command says so
    in one line after ``infra.actor_start_timeout_s``, naming the resources, no traceback."""
    from ratchet_ray.sweep.ray_head import ray_cluster

    dataset = tmp_path / "instances.jsonl"
    dataset.write_text("".join(json.dumps(i) + "\n" for i in instances))
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    with ray_cluster(0, tmp_path / "head.log", env) as cluster_env:  # no CPU, no `docker`
        extra = {k: v for k, v in cluster_env.items() if k != "RAY_ADDRESS"}
        done = _shell(["swe", "validate", "--dataset", str(dataset), "--instance",
                       "ratchet__calc-1", "--address", cluster_env["RAY_ADDRESS"],
                       "--out", str(tmp_path / "out"), "--set", "infra.actor_start_timeout_s=5"],
                      tmp_path, env=extra, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr, (done.stdout[-3000:],
                                                                     done.stderr[-3000:])
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, (done.stdout[-3000:], done.stderr[-3000:])
    assert "pool 'grader'" in errors[0] and "did not start within 5s" in errors[0]
    assert "docker" in errors[0], errors[0]


def test_bad_inputs_fail_in_one_line_before_ray_starts(instances, tmp_path):
    """A missing dataset names --dataset (not the loop's --dataset-path); a Docker daemon that
    does not answer is named with the fix; a quarantine file that is not one is refused."""
    missing = _shell(["swe", "validate", "--dataset", str(tmp_path / "nope.jsonl")], tmp_path,
                     timeout=120)
    assert missing.returncode == 2 and "--dataset-path" not in missing.stderr
    assert f"--dataset {tmp_path / 'nope.jsonl'}: no such file" in missing.stderr
    dataset = tmp_path / "instances.jsonl"
    dataset.write_text("".join(json.dumps(i) + "\n" for i in instances))
    no_daemon = _shell(["swe", "validate", "--dataset", str(dataset), "--out",
                        str(tmp_path / "out")], tmp_path,
                       env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}, timeout=120)
    assert no_daemon.returncode == 1 and "Traceback" not in no_daemon.stderr
    errors = [line for line in no_daemon.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("Error: no Docker daemon at"), errors
    assert "docker_setup.sh" in errors[0]
    assert not (tmp_path / "out").exists()  # refused before anything ran
    import socket

    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    nobody = _shell(["swe", "validate", "--dataset", str(dataset), "--address",
                     f"127.0.0.1:{port}", "--out", str(tmp_path / "o1")], tmp_path, timeout=120)
    lines = [line for line in nobody.stderr.splitlines() if line.strip()]
    assert nobody.returncode == 1 and len(lines) == 1, nobody.stderr[-2000:]
    assert lines[0].startswith(f"Error: cannot reach the Ray cluster at 127.0.0.1:{port} "
                               f"(--address): nothing answers at 127.0.0.1:{port}")
    (tmp_path / "instances.jsonl.quarantine.json").write_text("{not json")
    broken = _shell(["swe", "validate", "--dataset", str(dataset), "--out", str(tmp_path / "o2")],
                    tmp_path, timeout=120)
    assert broken.returncode == 2 and "is not JSON" in broken.stderr, broken.stderr[-2000:]
    assert "Traceback" not in broken.stderr and not (tmp_path / "o2").exists()

    from ratchet_ray.run_config.files import load_config
    from ratchet_ray.suites.base import split_tasks
    from ratchet_ray.suites.swebench.quarantine import QuarantineError

    bad = tmp_path / "bad.quarantine.json"
    bad.write_text('{"instances": 3}')
    for path, what in ((bad, "expected"), (tmp_path / "absent.json", "does not exist")):
        config = load_config([], ["suite=swebench", f"dataset_path={json.dumps(str(dataset))}",
                                  f"swebench.quarantine={json.dumps(str(path))}"])
        with pytest.raises(QuarantineError, match=what) as err:
            split_tasks([], config)
        assert "ratchet swe validate" in str(err.value) and "\n" not in str(err.value)


def _never(messages, json_schema=None):
    raise AssertionError("no LLM call may happen before the gold patches are validated")


@pytest.mark.docker
def test_validate_gold_stops_a_run_before_round_0(docker_session, instances, ray_local, tmp_path):
    import fakes
    from ratchet_ray.run_config.files import load_config
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
        "swebench.grade_command_timeout_s=60", "workers.solvers=1", "workers.graders=2"])
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
    from ratchet_ray.run_config.files import load_config
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


@pytest.mark.docker
def test_sigterm_mid_validation_names_the_rerun_and_leaves_no_container(docker_session, instances,
                                                                         tmp_path):
    """SIGTERM while a grade runs: click's "Aborted!" with exit 1, nothing said of what was
    kept, and the killed grader's container left running (until some later grader's reap).
    Now exit 130, one line saying nothing was recorded and naming the rerun, and this
    validation's containers removed before the command exits."""
    import signal
    import time

    instance = _tagged(instances[0], "stop", uuid.uuid4().hex[:8])
    dataset = tmp_path / "instances.jsonl"
    dataset.write_text(json.dumps(instance) + "\n")
    out = tmp_path / "validate"
    base = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "PYTEST_CURRENT_TEST")}
    run = subprocess.Popen(
        [RATCHET, "swe", "validate", "--dataset", str(dataset), "--out", str(out), "--repeat",
         "3", *SETS, "--set", f"swebench.lock_dir={tmp_path / 'locks'}",
         "--set", f"swebench.gold_records={tmp_path / 'gold'}"],
        cwd=tmp_path, env=base, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while not docker_session.containers.list(all=True, ignore_removed=True,
                                                 filters={"label": f"{RUN_KEY}={out}"}):
            assert run.poll() is None, run.communicate()  # a grade runs in one: not over yet
            assert time.monotonic() < deadline, "no grading container within 600 s"
            time.sleep(0.2)
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
        _cleanup(docker_session, [instance], out)  # no container of this validation is left
    assert run.returncode == 130 and "Traceback" not in err, err[-3000:]
    assert err.strip().splitlines()[-1] == (
        f"interrupted: nothing recorded in {out} (its evidence, report and the quarantine file "
        "are written once every grade is in); rerun the same command to validate again")
    assert not (out / "swebench_validation.json").exists()
