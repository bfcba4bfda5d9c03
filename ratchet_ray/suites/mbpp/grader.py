"""``MbppGrader``: one model output for one MBPP+ task -> ``GradeResult``, via the sandbox.

Contract: ``grade(task, output)`` never raises. Every failure is ``passed=False`` with
``exit_status`` naming the reason:
- ``no_code`` / ``missing_entry_point``: nothing gradable was extracted (nothing was run);
- ``syntax_error``: the extracted module does not compile;
- ``failed_tests``: a test returned the wrong value (the trace shows input, got and expected);
- ``timeout`` / ``memory``: a time or memory limit was hit;
- an exception's name (``TypeError``, ``RecursionError``...) raised by the solution, or
  ``crashed`` when its process died without one (``os._exit``, a segfault);
- ``killed_by_SIG...`` / ``sandbox_crash``: the sandbox process died without a verdict;
- ``infra_failure=True`` rows (``sandbox_setup_error``, ``sandbox_unavailable``, a grader
  exception's name): the infrastructure failed before any generated code ran; they stay in the
  denominator but the Critic must not learn from them.
``trace`` is short (<= 2000 chars) and starts with the sandbox mode, e.g. ``[sandbox namespaces]``.
Expected outputs are computed once per machine per task (``GroundTruthStore``) and the store's
readiness is memoised per grader (one per process / actor); ``warm`` precomputes them.
"""

from __future__ import annotations

import logging
import signal
import time
from pathlib import Path
from typing import Iterable

from ratchet_ray.config import GraderSettings, LoopConfig
from ratchet_ray.suites.mbpp.dataset import MbppDataset, load_mbpp_plus
from ratchet_ray.suites.mbpp.extract import extract_code
from ratchet_ray.suites.mbpp.groundtruth import GroundTruthStore
from ratchet_ray.suites.mbpp.sandbox import Sandbox, SandboxLimits, SandboxRun, SandboxUnavailable
from ratchet_ray.types import GradeResult, Task

log = logging.getLogger(__name__)
MAX_TRACE_CHARS = 2000
# evalplus's defaults (evalplus.config): per-test limit = max(min, factor * canonical time)
MIN_TIME_LIMIT_S = 1.0
GT_TIME_LIMIT_FACTOR = 4.0
_EXTRACT_TRACE = {"no_code": "no Python code found in the model output",
                  "missing_entry_point": "the code defines no top-level function {entry}()"}


class MbppGrader:
    def __init__(self, dataset: MbppDataset, settings: GraderSettings | None = None, *,
                 groundtruth: GroundTruthStore | None = None, limits: SandboxLimits | None = None,
                 work_root: Path | None = None):
        settings = settings or GraderSettings()
        self.dataset = dataset
        self.groundtruth = groundtruth or GroundTruthStore(dataset)
        self.sandbox = Sandbox(limits or SandboxLimits(budget_s=settings.timeout_s,
                                                       memory_mb=settings.memory_mb),
                               work_root=work_root)

    @classmethod
    def from_config(cls, config: LoopConfig, run_dir: Path | None = None) -> "MbppGrader":
        """MBPP+ grading keeps no per-run state, so ``run_dir`` is accepted and unused."""
        return cls(load_mbpp_plus(config.dataset_path), config.grader)

    @property
    def isolation(self) -> str:
        return self.sandbox.description

    def warm(self, task_ids: Iterable[str]) -> dict[str, float]:
        """Compute (or find cached) expected outputs; returns seconds per newly computed task."""
        before = set(self.groundtruth.timings)
        self.groundtruth.ensure(task_ids)
        return {t: s for t, s in self.groundtruth.timings.items() if t not in before}

    def grade(self, task: Task, output: str) -> GradeResult:
        started = time.monotonic()
        try:
            return self._grade(task, output, started)
        except SandboxUnavailable as exc:  # logged once at start-up; nothing was run
            return GradeResult(passed=False, exit_status="sandbox_unavailable", infra_failure=True,
                               trace=str(exc)[:MAX_TRACE_CHARS],
                               duration_s=time.monotonic() - started)
        except Exception as exc:  # grade() never raises: the row still counts, as infra failure
            log.exception("MBPP+ grading of %s failed inside the grader", task.task_id)
            return GradeResult(passed=False, exit_status=type(exc).__name__, infra_failure=True,
                               trace=f"[grader error] {type(exc).__name__}: {exc}"[:2000],
                               duration_s=time.monotonic() - started)

    def _grade(self, task: Task, output: str, started: float) -> GradeResult:
        problem = self.dataset.problem(task.task_id)
        entry_point = problem["entry_point"]
        extracted = extract_code(output, entry_point)
        if extracted.code is None:
            return GradeResult(passed=False, exit_status=extracted.reason,
                               trace=_EXTRACT_TRACE[extracted.reason].format(entry=entry_point),
                               duration_s=time.monotonic() - started)
        groundtruth_path = self.groundtruth.ensure([task.task_id])[task.task_id]
        job = {"solution": extracted.code, "groundtruth_path": str(groundtruth_path),
               "min_time_limit": MIN_TIME_LIMIT_S, "gt_time_limit_factor": GT_TIME_LIMIT_FACTOR,
               "problem": {key: problem[key] for key in
                           ("task_id", "entry_point", "base_input", "plus_input", "atol")}}
        # Loading big expected outputs (Mbpp/255: ~780 MB) takes time before grading starts.
        extra_grace = groundtruth_path.stat().st_size / 50e6
        run = self.sandbox.run(job, extra_grace_s=extra_grace)
        return _to_result(run, time.monotonic() - started)


def _to_result(run: SandboxRun, duration_s: float) -> GradeResult:
    header = f"[sandbox {run.mode}]" + (f" notes: {'; '.join(run.notes)}" if run.notes else "")
    if run.result is not None:
        result = run.result
        trace = f"{header}\n{result.get('trace', '')}"
        return GradeResult(passed=bool(result.get("passed")), trace=trace[:MAX_TRACE_CHARS],
                           exit_status=str(result.get("exit_status", "sandbox_crash")),
                           infra_failure=bool(result.get("infra")), duration_s=duration_s)
    infra = not run.reached_untrusted  # died before any generated code ran: our failure
    if run.timed_out:
        status = "sandbox_setup_timeout" if infra else "timeout"
        detail = f"killed after {run.wall_s:.1f}s without a verdict"
    elif run.returncode is not None and run.returncode < 0:
        name = signal.Signals(-run.returncode).name
        status = "timeout" if name == "SIGXCPU" else f"killed_by_{name}"
        detail = f"sandbox process died from {name}"
    else:
        status = "sandbox_setup_error" if infra else "sandbox_crash"
        detail = f"sandbox process exited {run.returncode} without a verdict"
    trace = f"{header}\n{detail}\n{run.stderr_tail[-800:]}".rstrip()
    return GradeResult(passed=False, exit_status=status, infra_failure=infra,
                       trace=trace[:MAX_TRACE_CHARS], duration_s=duration_s)
