"""The Docker harness grader on real containers built from the local instances."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ratchet_ray.suites.swebench.settings import GradingLimits
from ratchet_ray.suites.swebench.grader import SwebenchGrader
from ratchet_ray.suites.swebench.docker.images import image_name
from ratchet_ray.suites.swebench.settings import SwebenchSettings

pytestmark = pytest.mark.docker

NOT_APPLYING = """diff --git a/calc/ops.py b/calc/ops.py
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -40,3 +40,3 @@
 def nothing_here():
-    return 0
+    return 1
"""


def _log_dir(result) -> Path:
    return Path(result.trace.rsplit("log: ", 1)[1].strip())


def test_gold_patch_resolves_and_the_report_is_reused(docker_client, tasks, gold, local_settings,
                                                      limits, tmp_path):
    grader = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)
    result = grader.grade(tasks["ratchet__calc-1"], gold["ratchet__calc-1"])
    assert result.passed and result.exit_status == "ok" and not result.infra_failure, result.trace
    assert "FAIL_TO_PASS: 1/1 pass" in result.trace and "PASS_TO_PASS: 2/2 pass" in result.trace
    log_dir = _log_dir(result)
    assert log_dir.parent == tmp_path / "logs" / "swebench" / "ratchet__calc-1"
    assert "PASSED tests/test_ops.py::test_add" in (log_dir / "test_output.txt").read_text()
    again = grader.grade(tasks["ratchet__calc-1"], gold["ratchet__calc-1"])
    assert again.passed and "cached report" in again.trace


def test_empty_and_wrong_patches_are_unresolved(docker_client, tasks, gold, local_settings, limits,
                                                tmp_path):
    grader = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)
    empty = grader.grade(tasks["ratchet__calc-1"], "  \n")
    assert (empty.passed, empty.exit_status, empty.infra_failure) == (False, "empty_patch", False)
    wrong = grader.grade(tasks["ratchet__calc-1"], gold["ratchet__calc-2"])
    assert (wrong.passed, wrong.exit_status) == (False, "unresolved")
    assert "failing: tests/test_ops.py::test_add" in wrong.trace


def test_patch_that_does_not_apply_fails_with_the_reason(docker_client, tasks, local_settings, limits,
                                                         tmp_path):
    grader = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)
    result = grader.grade(tasks["ratchet__calc-2"], NOT_APPLYING)
    assert (result.passed, result.exit_status, result.infra_failure) == (False, "patch_apply_failed", False)
    assert "patch --batch --forward --fuzz=5" in result.trace  # the last fallback was tried
    log = (_log_dir(result) / "run_instance.log").read_text()
    assert "`git apply --verbose` failed" in log


def test_hanging_eval_is_recorded_as_timeout(docker_client, tasks, gold, local_settings, tmp_path):
    grader = SwebenchGrader(local_settings, GradingLimits(timeout_s=4, instance_deadline_s=120),
                            tmp_path, client=docker_client)
    # calc-1's fix leaves calc-3's readiness bug in place, so its F2P test spins forever.
    result = grader.grade(tasks["ratchet__calc-3"], gold["ratchet__calc-1"])
    assert (result.passed, result.exit_status, result.infra_failure) == (False, "timeout", False)
    assert "per-command timeout" in result.trace and result.duration_s < 60
    assert "Timeout error: 4 seconds exceeded" in (_log_dir(result) / "test_output.txt").read_text()
    assert not (_log_dir(result) / "report.json").exists(), "timeouts must not be cached"


def test_infrastructure_failures_are_classified(docker_client, tasks, gold, local_settings, limits,
                                               tmp_path):
    no_dockerfile = tasks["ratchet__calc-1"].model_copy(deep=True)
    no_dockerfile.payload.pop("dockerfile")
    no_dockerfile.task_id = no_dockerfile.payload["instance_id"] = "ratchet__never-built"
    missing = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client).grade(
        no_dockerfile, gold["ratchet__calc-1"])
    assert (missing.infra_failure, missing.exit_status) == (True, "image_missing")
    assert "no `dockerfile`" in missing.trace and "log: " in missing.trace

    late = SwebenchGrader(local_settings, GradingLimits(instance_deadline_s=1e-6), tmp_path,
                          client=docker_client).grade(tasks["ratchet__calc-1"], gold["ratchet__calc-1"])
    assert (late.infra_failure, late.exit_status) == (True, "setup_timeout")

    no_daemon = SwebenchSettings(namespace=None, docker_host="unix:///nonexistent/docker.sock")
    down = SwebenchGrader(no_daemon, limits, tmp_path).grade(tasks["ratchet__calc-1"],
                                                             gold["ratchet__calc-1"])
    assert (down.infra_failure, down.exit_status) == (True, "daemon_unreachable")
    assert ".ci/docker_setup.sh" in down.trace


def test_cache_level_none_removes_the_instance_image(docker_client, tasks, gold, limits, tmp_path,
                                                    local_settings):
    # the image is held through every session of the grade (canary sessions and the gold
    # record's too) and removed once it ends
    settings = local_settings.model_copy(update={"cache_level": "none"})
    name = image_name("ratchet__calc-2", settings)
    import docker

    try:
        docker_client.images.remove(name)
    except docker.errors.ImageNotFound:
        pass  # absent already: the state this test starts from
    grader = SwebenchGrader(settings, limits, tmp_path, client=docker_client)
    result = grader.grade(tasks["ratchet__calc-2"], gold["ratchet__calc-2"])
    assert result.passed, result.trace
    assert not grader._harness().exists(name), "cache level none keeps no instance image"
    assert docker_client.images.get("ratchet-swe-base"), "images present before the run are kept"


def test_several_graders_in_threads(docker_client, tasks, gold, local_settings, limits, tmp_path):
    graders = [SwebenchGrader(local_settings, limits, tmp_path / f"g{i}", client=docker_client)
               for i in range(3)]
    jobs = [(graders[n % 3], tasks[iid], gold[iid])
            for n, iid in enumerate(["ratchet__calc-1", "ratchet__calc-2", "ratchet__calc-3",
                                     "ratchet__calc-1", "ratchet__calc-2", "ratchet__calc-3"])]
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda job: job[0].grade(job[1], job[2]), jobs))
    assert all(r.passed for r in results), [r.trace for r in results if not r.passed]


def test_several_grader_actors_on_ray(ray_local, docker_client, tasks, gold, local_settings, limits,
                                      tmp_path):
    ray = ray_local
    actor = ray.remote(SwebenchGrader)
    graders = [actor.options(num_cpus=0.5).remote(local_settings, limits, tmp_path) for _ in range(2)]
    ids = ["ratchet__calc-1", "ratchet__calc-2", "ratchet__calc-3"]
    refs = [graders[n % 2].grade.remote(tasks[i], gold[i]) for n, i in enumerate(ids)]
    wrong = graders[0].grade.remote(tasks["ratchet__calc-2"], gold["ratchet__calc-1"])
    results = ray.get(refs + [wrong])
    assert [r.passed for r in results] == [True, True, True, False], [r.trace for r in results]
    assert results[-1].exit_status == "unresolved"


def test_doctor_reports_daemon_disk_and_images(docker_client, local_settings):
    from ratchet_ray.suites.swebench.doctor import check_environment

    checks = {c.name: c for c in check_environment(local_settings, ["ratchet__calc-1"], min_free_gb=0.1)}
    assert checks["docker daemon"].ok and checks["free disk"].ok
    assert checks["leftover containers"].ok and "built locally" in checks["instance images"].detail
    down = check_environment(local_settings.model_copy(update={"docker_host": "unix:///nonexistent.sock"}))
    assert [(c.name, c.ok) for c in down] == [("docker daemon", False)]
