"""Infrastructure failures: the environment broke, not the model's patch.

Contracts:
- ``InfraFailure(reason, message)`` is raised by the image and container helpers for anything the
  model cannot have caused; ``reason`` is one of ``REASONS`` and becomes the capsule's
  ``exit_status`` with ``infra_failure=True`` (the row counts in the denominator and is never fed
  to the Critic).
- ``classify_exception(exc)`` maps Docker SDK / transport errors to a reason, or None when the
  exception is not an infrastructure failure.
- ``infra_reason_from_report(report)`` reads swebench's own post-hoc classification of an eval
  log (``swebench.harness.infra_failure``, applied by ``get_eval_report``): only its
  *environment* tier is an infrastructure failure; ambiguous signatures (a missing module a patch
  may have caused) stay model failures.
"""

from __future__ import annotations

from ratchet_ray.suites.swebench.imports import serial_imports

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
)


class InfraFailure(RuntimeError):
    """An environment failure during grading or solving; ``reason`` is one of ``REASONS``."""

    def __init__(self, reason: str, message: str):
        if reason not in REASONS and not reason.startswith("env_"):
            raise ValueError(f"InfraFailure: unknown reason {reason!r}; valid: {REASONS}")
        super().__init__(message)
        self.reason = reason


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


def infra_reason_from_report(report: dict) -> str | None:
    """``env_<reason>`` when swebench's own post-hoc classifier flagged an eval log as an
    environment fault (``report["infra_failure"]``); ambiguous signatures stay model failures."""
    if report.get("infra_failure"):
        return f"env_{report.get('infra_failure_reason') or 'unknown'}"
    return None
