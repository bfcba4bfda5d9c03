"""Infrastructure failures: the environment broke, not the model's patch (docs/grading.md,
"Infrastructure or the patch's failure").

Contracts:
- ``InfraFailure(reason, message)``, ``reason`` one of ``REASONS``: the capsule's
  ``exit_status`` with ``infra_failure=True`` (counted in the denominator, never shown to the
  Critic). Infrastructure comes only from trusted signals (Docker's errors, the grader's own
  checks), never from the log.
- ``log_classifier_note(report)``: swebench's log classifier reads text the code under test can
  print, so its verdict is only a note for the grade's log.
- ``memory_verdict(result, oom_kills, memory_mb)``: after the container's memory cgroup killed a
  process while the patch's code ran (the kernel's count), a grade neither resolved nor
  tampering becomes ``OUT_OF_MEMORY``, the patch's failure; a resolution keeps its verdict with
  a note (a test may expect a child to be killed), tampering stays tampering.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from ratchet_ray.evidence.tampering import is_tampering
from ratchet_ray.suites.swebench.imports import serial_imports
from ratchet_ray.types import GradeResult

REASONS = (
    "image_missing",        # not local, not pullable, and nothing to build it from
    "image_build_failed",   # the local build of an instance image failed
    "daemon_unreachable",   # no Docker daemon at the configured address
    "docker_error",         # the daemon answered with an error (create/start/exec/copy)
    "setup_timeout",        # the instance deadline passed before the tests could start
    "exec_hung",            # the daemon stopped answering, even after the container's processes
                            # were killed (a process holding the output open is the model's)
    "bad_eval_script",      # the instance's eval script has no swebench start/end test markers
    "disk_guard",           # a build or pull was refused: too little free disk (image_cache)
    "gold_unavailable",     # no gold record and no gold patch to make one (gold.py)
    "gold_unresolved",      # the gold patch itself does not resolve on this image (gold.py)
    "twin_unavailable",     # an impossible twin the grader cannot build: no FAIL_TO_PASS mutant
                            # the gold patch fails (twin.py); never a pass
)

# How to start a daemon: the one wording of every message that finds none (a failed connection,
# the doctor's and the preflight's fix, `swe make-instances`).
START_DOCKER = ("start the Docker daemon (`sudo systemctl start docker`; from a checkout: "
                "bash .ci/docker_setup.sh)")
OUT_OF_MEMORY = "out_of_memory"


class InfraFailure(RuntimeError):
    """An environment failure during grading or solving; ``reason`` is one of ``REASONS``."""

    def __init__(self, reason: str, message: str):
        if reason not in REASONS:
            raise ValueError(f"InfraFailure: unknown reason {reason!r}; valid: {REASONS}")
        super().__init__(message)
        self.reason = reason


def within(fn: Callable[[], Any], seconds: float, name: str) -> tuple[bool, Any]:
    """``fn()`` in a daemon thread named ``name``, waited for ``seconds``: ``(True, value)``, or
    ``(False, None)`` while it still runs (it finishes in the background); its error is raised
    in the caller's thread."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target, name=name, daemon=True)
    worker.start()
    worker.join(max(0.0, seconds))
    if worker.is_alive():
        return False, None
    if "error" in box:
        raise box["error"]
    return True, box.get("value")


def classify_exception(exc: BaseException) -> str | None:
    """The infrastructure reason for ``exc``, or None when it is not an infrastructure failure."""
    with serial_imports:
        import docker.errors
        import requests.exceptions

    if isinstance(exc, InfraFailure):
        return exc.reason
    if isinstance(exc, docker.errors.ImageNotFound):
        return "image_missing"
    if isinstance(exc, docker.errors.BuildError):
        return "image_build_failed"
    if isinstance(exc, (requests.exceptions.ConnectionError, ConnectionError, FileNotFoundError)):
        return "daemon_unreachable"
    if isinstance(exc, docker.errors.DockerException):
        # DockerException without an API response: the client could not reach a daemon at all.
        text = str(exc)
        if "Error while fetching server API version" in text or "Connection" in text:
            return "daemon_unreachable"
        return "docker_error"
    if isinstance(exc, requests.exceptions.RequestException):
        return "docker_error"
    return None


def docker_failure(exc: BaseException, doing: str) -> InfraFailure:
    """``exc``, met while ``doing``, as an ``InfraFailure`` (its reason, else ``docker_error``)."""
    return InfraFailure(classify_exception(exc) or "docker_error", f"{doing}: {exc}")


def log_classifier_note(report: dict) -> str:
    """A note of what swebench's log classifier said, "" when nothing (see module contract)."""
    if not report.get("infra_failure"):
        return ""
    reason = report.get("infra_failure_reason") or "unknown"
    return (f"swebench's log classifier flagged the eval log as an environment fault ({reason}); "
            "not trusted (the log holds what the code under test printed), so not infrastructure")


def memory_verdict(result: GradeResult, oom_kills: int | None, memory_mb: int) -> GradeResult:
    """``result`` after the container's memory cgroup killed ``oom_kills`` processes while the
    patch's code ran (see module contract); ``result`` itself when none were (or unknown)."""
    if not oom_kills:
        return result
    what = (f"the kernel's OOM killer ended {oom_kills} process(es) in the container's memory "
            f"cgroup (limit swebench.memory_mb={memory_mb}) while the patch's code ran")
    if result.passed or is_tampering(result.exit_status):
        return GradeResult(**{**result.model_dump(), "trace": f"{result.trace}\nnote: {what}"})
    return GradeResult(passed=False, exit_status=OUT_OF_MEMORY, infra_failure=False,
                       trace=f"{OUT_OF_MEMORY}: {what}; the code ran, so this is the patch's "
                             f"failure, not infrastructure (was: {result.exit_status})\n{result.trace}")
