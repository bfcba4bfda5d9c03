"""The SWE-bench Grader: one Docker harness per worker, graded with swebench's own functions.

Per ``grade(task, patch)`` (idempotent per instance and patch: a finished report is reused):
1. an empty patch is unresolved at once (``exit_status="empty_patch"``; no container);
2. the instance image is ensured (pulled or built, see ``images``), a container is started with
   networking off (see ``container``);
3. the patch is applied with the swebench harness's fallback commands (``GIT_APPLY_CMDS``), each
   retried from a clean tree, then a reverse check; none applies -> ``patch_apply_failed``;
4. the instance's eval script runs under ``config.grader.timeout_s`` (per command) and within
   ``config.grader.instance_deadline_s`` (whole instance, setup included); a kill -> ``timeout``;
5. swebench's ``get_eval_report`` parses the log with the instance's log parser and grades
   FAIL_TO_PASS / PASS_TO_PASS; resolved -> ``passed=True``, else ``unresolved`` or
   ``tests_errored`` (no parseable test output).
Infrastructure faults (image missing, daemon errors, setup past the deadline, swebench's
environment-tier log signatures) return ``infra_failure=True`` with the reason as ``exit_status``.
The container is removed in ``finally`` and the cache level applied to the image. Every trace names
the per-instance log directory ``run_dir/logs/swebench/<instance>/<patch-key>/``.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

from ratchet_ray.config import GraderSettings
from ratchet_ray.suites.swebench.container import InstanceContainer, docker_client, instance_container
from ratchet_ray.suites.swebench.images import InstanceImages
from ratchet_ray.suites.swebench.infra import InfraFailure, classify_exception, infra_reason_from_report
from ratchet_ray.suites.swebench.settings import SwebenchSettings
from ratchet_ray.types import GradeResult, Task

LOG_SUBDIR = Path("logs") / "swebench"
TRACE_TAIL_CHARS = 2000
T = TypeVar("T")


def git_apply_commands() -> list[str]:
    """The harness's patch-apply fallbacks (their home moved from constants in swebench 5)."""
    try:
        from swebench.harness.constants import GIT_APPLY_CMDS  # type: ignore[attr-defined]
    except ImportError:
        from swebench.harness.run_evaluation import GIT_APPLY_CMDS
    return list(GIT_APPLY_CMDS)


def patch_key(patch: str) -> str:
    return hashlib.sha1(patch.encode()).hexdigest()[:12]


class InstanceLog:
    """Timestamped lines appended to ``run_instance.log`` (thread-safe, flushed per line)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._fh = path.open("a", encoding="utf-8")

    def __call__(self, message: str) -> None:
        with self._lock:
            self._fh.write(f"{time.strftime('%H:%M:%S')} {message}\n")
            self._fh.flush()

    def close(self) -> None:
        self._fh.close()


class Deadline:
    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def remaining(self) -> float:
        return self.end - time.monotonic()

    def check(self, stage: str) -> None:
        if self.remaining() <= 0:
            raise InfraFailure("setup_timeout", f"instance deadline of {self.seconds:g}s passed "
                                                f"before {stage}")

    def run(self, stage: str, fn: Callable[[], T]) -> T:
        """``fn()`` unless it outlives the deadline (it then finishes in the background)."""
        self.check(stage)
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=target, name=f"deadline-{stage}", daemon=True)
        worker.start()
        worker.join(max(0.0, self.remaining()))
        if worker.is_alive():
            raise InfraFailure("setup_timeout", f"{stage} did not finish within the instance "
                                                f"deadline of {self.seconds:g}s")
        if "error" in box:
            raise box["error"]
        return box["value"]


def _tail(text: str, limit: int = TRACE_TAIL_CHARS) -> str:
    return text if len(text) <= limit else f"...[{len(text) - limit} chars cut]\n{text[-limit:]}"


class SwebenchGrader:
    """Grades patches for SWE-bench instances (see the module docstring for the contract)."""

    def __init__(self, settings: SwebenchSettings, limits: GraderSettings, run_dir: str | Path,
                 *, client: Any = None):
        self.settings = settings
        self.limits = limits
        self.log_root = Path(run_dir) / LOG_SUBDIR
        self._client = client
        self._images: InstanceImages | None = None
        self._connect_lock = threading.Lock()

    def _harness(self) -> InstanceImages:
        """Connect lazily, so a worker without a daemon grades every task as an infra failure."""
        with self._connect_lock:
            if self._images is None:
                client = self._client or docker_client(self.settings)
                self._images = InstanceImages(client, self.settings)
            return self._images

    def grade(self, task: Task, output: str) -> GradeResult:
        started = time.monotonic()
        instance_id = task.task_id
        if not output.strip():
            return GradeResult(passed=False, exit_status="empty_patch",
                               trace="empty patch: nothing to apply, FAIL_TO_PASS tests cannot pass")
        patch = output if output.endswith("\n") else output + "\n"
        log_dir = self.log_root / instance_id / patch_key(patch)
        report_path = log_dir / "report.json"
        if report_path.exists():
            cached = json.loads(report_path.read_text())["grade"]
            return GradeResult(**{**cached, "trace": f"(cached report {report_path})\n{cached['trace']}"})
        log = InstanceLog(log_dir / "run_instance.log")
        try:
            result, swe_report = self._grade(task, patch, log_dir, log)
        except Exception as exc:  # noqa: BLE001 - classified below; non-infra errors re-raise
            reason = classify_exception(exc)
            if reason is None:
                log(f"grader error: {type(exc).__name__}: {exc}")
                raise
            log(f"infrastructure failure ({reason}): {exc}")
            result, swe_report = GradeResult(passed=False, exit_status=reason, infra_failure=True,
                                             trace=f"infrastructure failure ({reason}): {exc}"), None
        finally:
            log.close()
        result.duration_s = time.monotonic() - started
        result.trace = f"{result.trace}\nlog: {log_dir}"
        if swe_report is not None:
            report_path.write_text(json.dumps({"grade": result.model_dump(), "swebench": swe_report},
                                              indent=2))
        return result

    def _grade(self, task: Task, patch: str, log_dir: Path,
               log: InstanceLog) -> tuple[GradeResult, dict | None]:
        """The graded result and, for a completed (cacheable) grade, swebench's report."""
        from swebench.harness.constants import CONTAINER_PATCH_FILE, LOG_TEST_OUTPUT
        from swebench.harness.grading import get_eval_report
        from swebench.harness.utils import make_test_spec

        instance = task.payload
        instance_id = task.task_id
        deadline = Deadline(self.limits.instance_deadline_s)
        images = deadline.run("connecting to Docker", self._harness)
        image = deadline.run("obtaining the image", lambda: images.ensure(instance, log))
        spec = make_test_spec({**instance, "image": image})
        (log_dir / "patch.diff").write_text(patch)
        try:
            deadline.check("starting the container")
            with instance_container(images.client, image, instance_id, self.settings) as box:
                log(f"container {box.name} started from {image}")
                box.write_file(CONTAINER_PATCH_FILE, patch)
                applied, apply_output = self._apply(box, CONTAINER_PATCH_FILE, log)
                if not applied:
                    trace = f"patch_apply_failed: no fallback command applied the patch\n{_tail(apply_output)}"
                    return GradeResult(passed=False, exit_status="patch_apply_failed", trace=trace), \
                        {"patch_successfully_applied": False, "apply_output": _tail(apply_output)}
                deadline.check("running the eval script")
                (log_dir / "eval.sh").write_text(spec.eval_script)
                box.write_file("/eval.sh", spec.eval_script)
                timeout = min(self.limits.timeout_s, deadline.remaining())
                run = box.run("/bin/bash /eval.sh", timeout)
                log(f"eval script exit {run.exit_code} after {run.duration_s:.1f}s")
        finally:
            images.release(image, log)
        output_path = log_dir / LOG_TEST_OUTPUT
        output_path.write_text(run.output + (f"\n\nTimeout error: {timeout:.0f} seconds exceeded."
                                             if run.timed_out else ""))
        if run.timed_out:
            which = ("per-command timeout" if timeout >= self.limits.timeout_s
                     else "instance deadline")
            return GradeResult(passed=False, exit_status="timeout",
                               trace=f"timeout: eval script killed after {timeout:.0f}s ({which})\n"
                                     f"{_tail(run.output)}"), None
        pred = {"instance_id": instance_id, "model_patch": patch, "model_name_or_path": "ratchet"}
        report = get_eval_report(spec, pred, str(output_path), include_tests_status=True)[instance_id]
        infra = infra_reason_from_report(report)
        if infra is not None:
            return GradeResult(passed=False, exit_status=infra, infra_failure=True,
                               trace=f"infrastructure failure ({infra}) in the eval log\n"
                                     f"{_tail(run.output)}"), None
        return self._verdict(report, run.output), report

    def _apply(self, box: InstanceContainer, patch_file: str, log: InstanceLog) -> tuple[bool, str]:
        """swebench's apply chain: each fallback from a pristine tree, then a reverse check."""
        outputs = []
        for attempt, command in enumerate(git_apply_commands()):
            if attempt:
                # A failed attempt (notably --reject) leaves partial state behind.
                box.run("git checkout -- . ; git clean -fd", self.limits.timeout_s)
            result = box.run(f"{command} {patch_file}", self.limits.timeout_s)
            outputs.append(f"$ {command}\n{result.output}")
            if result.exit_code == 0:
                log(f"applied patch with `{command}`")
                return True, result.output
            log(f"`{command}` failed (exit {result.exit_code})")
        check = box.run(f"git apply --check --reverse {patch_file}", self.limits.timeout_s)
        if check.exit_code == 0:
            log("patch already applied (reverse check)")
            return True, check.output
        return False, "\n".join(outputs)

    @staticmethod
    def _verdict(report: dict, test_output: str) -> GradeResult:
        if not report.get("patch_successfully_applied"):
            return GradeResult(passed=False, exit_status="tests_errored",
                               trace=f"tests_errored: no parseable test results\n{_tail(test_output)}")
        status = report.get("tests_status", {})
        lines = []
        for kind in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            ok = status.get(kind, {}).get("success", [])
            bad = status.get(kind, {}).get("failure", [])
            lines.append(f"{kind}: {len(ok)}/{len(ok) + len(bad)} pass"
                         + (f"; failing: {', '.join(bad[:10])}" if bad else ""))
        if report.get("resolved"):
            return GradeResult(passed=True, exit_status="ok", trace="resolved\n" + "\n".join(lines))
        return GradeResult(passed=False, exit_status="unresolved",
                           trace="unresolved\n" + "\n".join(lines) + "\n" + _tail(test_output))
