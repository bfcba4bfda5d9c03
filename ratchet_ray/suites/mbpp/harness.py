"""The sandbox process: grades one MBPP+ solution with evalplus and reports one result line.

Started by ``sandbox.Sandbox`` as ``[unshare ...] python -I -B harness.py JOB.pkl`` with a scrubbed
environment; imports only the standard library, evalplus and its sibling ``confine.py``.

Stages: (1) setup, trusted: read the job, load the task's expected outputs, import evalplus, build
the private filesystem (namespaces mode), make the working dir; (2) confine (``confine.py``):
rlimits and the fork hook that drops every later process to the sandbox uid; (3) grade exactly as
evalplus does: ``untrusted_check`` on the base inputs, then on the plus inputs (fast_check);
(4) on failure, re-run the first failing input once in a probe process to name the cause
(exception, wrong output, timeout, memory); (5) print ``RATCHET-RESULT {json}`` and kill every
sandboxed process. The whole run is bounded by ``time_budget(job)`` (an interval timer; the
configured ``budget_s``, raised only for tasks with slow reference solutions); stdout carries
``RATCHET-STAGE untrusted`` before any untrusted code runs, so the grader can tell a broken
sandbox (infrastructure) from code that broke out of its budget.
Result keys: passed, exit_status, trace, infra, base, plus, notes.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import pickle
import reprlib
import select
import signal
import sys
import time
from pathlib import Path

# -I keeps this directory off sys.path, so the sibling is loaded by file location.
_spec = importlib.util.spec_from_file_location("ratchet_confine",
                                               Path(__file__).with_name("confine.py"))
confine = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(confine)

# evalplus caps one split's check at 60 s (EVALPLUS_TIMEOUT_PER_TASK); the probe needs <= 2*5+2 s.
EVALPLUS_SPLIT_CAP_S = 60.0
PROBE_ALLOWANCE_S = 12.0
RESULT_MARK = "RATCHET-RESULT "
STAGE_MARK = "RATCHET-STAGE untrusted"
PRIVATE_WORKDIR = "/tmp/sandbox"
_short = reprlib.Repr()
_short.maxstring, _short.maxother, _short.maxlist, _short.maxtuple = 100, 100, 6, 6
_short.maxdict, _short.maxset, _short.maxlevel = 6, 6, 3


class BudgetExceeded(Exception):
    """The grading budget ran out (raised from the interval-timer handler)."""


def _emit(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _args_repr(args) -> str:
    return ", ".join(_short.repr(arg) for arg in list(args)[:8])


def _probe(code: str, entry_point: str, args: tuple, expected, seconds: float) -> dict:
    """Runs in the forked probe (already unprivileged): where and how does the solution fail?"""
    from evalplus.eval.utils import reliability_guard, swallow_io, time_limit

    reliability_guard()  # the same guard evalplus puts around the checked code
    namespace: dict = {}
    stage = "exec"
    try:
        with swallow_io(), time_limit(seconds):
            exec(code, namespace)
        stage = "lookup"
        function = namespace[entry_point]
        stage = "call"
        with swallow_io(), time_limit(seconds):
            output = function(*copy.deepcopy(args))
        stage = "compare"
        with time_limit(seconds):
            return {"stage": stage, "input": _args_repr(args), "got": _short.repr(output),
                    "expected": _short.repr(expected)}
    except BaseException as exc:  # the probe's whole job is to name this
        return {"stage": stage, "input": _args_repr(args), "exception": type(exc).__name__,
                "message": str(exc)[:200]}


def diagnose(code: str, entry_point: str, args: tuple, expected, seconds: float) -> dict:
    """Fork the probe (the fork hook confines it) and read its one JSON answer."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            report = _probe(code, entry_point, args, expected, seconds)
            # newline-terminated: a grandchild the code forked may hold the pipe open (no EOF)
            os.write(write_end, json.dumps(report).encode()[:16000] + b"\n")
        finally:
            os._exit(0)
    os.close(write_end)
    chunks, deadline = [], time.monotonic() + 2 * seconds + 2
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([read_end], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return {"stage": "call", "input": _args_repr(args), "exception": "TimeoutException",
                        "message": f"no answer within {2 * seconds + 2:.0f}s"}
            chunk = os.read(read_end, 65536)
            chunks.append(chunk)
            if not chunk or b"\n" in chunk:
                break
    finally:
        os.close(read_end)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        return json.loads(b"".join(chunks).split(b"\n")[0].decode())
    except ValueError:
        return {"stage": "call", "input": _args_repr(args), "exception": "crashed",
                "message": "the process died without an answer"}


def _classify(report: dict, evalplus_status: str) -> str:
    name = report.get("exception")
    if name in ("TimeoutException", "BudgetExceeded"):
        return "timeout"
    if name == "MemoryError":
        return "memory"
    if name == "KeyError" and report.get("stage") == "lookup":
        return "missing_entry_point"
    if name:
        return name
    return "timeout" if evalplus_status == "timeout" else "failed_tests"


def _describe(report: dict, entry_point: str) -> str:
    call = f"{entry_point}({report.get('input', '?')})"
    if "exception" in report:
        where = {"exec": "defining the module", "lookup": f"looking up {entry_point}"}.get(
            report.get("stage"), call)
        return f"{where} raised {report['exception']}: {report.get('message', '')}"
    return f"{call} returned {report.get('got')}, expected {report.get('expected')}"


def grade(job: dict, trace: list[str]) -> dict:
    """evalplus's check, split by split; progress lines go to ``trace`` as they happen."""
    from evalplus.eval import PASS, untrusted_check

    problem, entry_point, code = job["problem"], job["problem"]["entry_point"], job["solution"]
    expected = job["expected"]
    result = {"passed": False, "exit_status": "failed_tests", "base": None, "plus": None}
    for split in ("base", "plus"):
        inputs = problem[f"{split}_input"]
        status, details = untrusted_check(
            "mbpp", code, inputs, entry_point, expected=expected[split], atol=problem["atol"],
            ref_time=expected[f"{split}_time"], fast_check=True,
            min_time_limit=job["min_time_limit"], gt_time_limit_factor=job["gt_time_limit_factor"])
        confine.sweep(job["mode"] == "namespaces", job["uid"])
        result[split] = status
        if status == PASS:
            trace.append(f"{split}: pass ({len(inputs)} tests)")
            continue
        done = len(details)
        index = min(max(done - 1 if status == "fail" and done else done, 0), len(inputs) - 1)
        trace.append(f"{split}: {status} at test {index + 1}/{len(inputs)}")
        reference_s = expected[f"{split}_time"][index]
        limit = max(job["min_time_limit"], job["gt_time_limit_factor"] * reference_s)
        report = diagnose(code, entry_point, inputs[index], expected[split][index], min(limit, 5.0))
        confine.sweep(job["mode"] == "namespaces", job["uid"])
        result["exit_status"] = _classify(report, status)
        trace.append(_describe(report, entry_point))
        break
    else:
        result.update(passed=True, exit_status="ok")
    return result


def time_budget(job: dict) -> float:
    """``budget_s``, raised for tasks whose reference solution is slow: a solution within
    evalplus's per-test limits (factor x reference time) must not lose to our budget."""
    expected, needed = job["expected"], PROBE_ALLOWANCE_S
    for split in ("base", "plus"):
        spent = job["gt_time_limit_factor"] * sum(expected[f"{split}_time"])
        needed += min(EVALPLUS_SPLIT_CAP_S, spent) + 2.0
    return max(float(job["budget_s"]), needed)


def _setup(job: dict, notes: list[str]) -> tuple[str, int | None]:
    """Trusted, privileged preparation; returns the working dir and the uid children drop to."""
    with open(job["groundtruth_path"], "rb") as handle:
        job["expected"] = pickle.load(handle)[job["problem"]["task_id"]]
    import evalplus.eval  # noqa: F401  (import now: later imports may be out of reach)
    import evalplus.eval.utils  # noqa: F401

    runtime = [sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path]
    uid = job["uid"]
    if job["mode"] == "namespaces":
        confine.private_filesystem(runtime, notes)
        workdir = PRIVATE_WORKDIR
        os.makedirs(workdir, mode=0o700)
    else:
        workdir = job["workdir"]
        if uid is not None and not confine.runtime_reachable(runtime):
            raise PermissionError("the Python runtime is not reachable by the sandbox uid")
    if uid is not None:
        os.chown(workdir, uid, uid)
    os.chmod(workdir, 0o700)
    os.chdir(workdir)
    os.environ.update(HOME=workdir, TMPDIR=workdir, EVALPLUS_MAX_MEMORY_BYTES="-1")
    return workdir, uid


def main(job_path: str) -> int:
    notes: list[str] = []
    with open(job_path, "rb") as handle:
        job = pickle.load(handle)
    try:
        _, job["uid"] = _setup(job, notes)
        confine.apply_rlimits(job["limits"], job["uid"])
    except Exception as exc:  # setup is trusted code: any failure here is infrastructure
        _emit(RESULT_MARK + json.dumps({"passed": False, "exit_status": "sandbox_setup_error",
                                        "trace": f"{type(exc).__name__}: {exc}"[:500],
                                        "infra": True, "notes": notes}))
        return 0
    try:
        compile(job["solution"], "<solution>", "exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        _emit(RESULT_MARK + json.dumps({"passed": False, "exit_status": "syntax_error",
                                        "trace": f"{type(exc).__name__}: {exc}"[:500],
                                        "infra": False, "notes": notes}))
        return 0
    confine.confine_forks(job["uid"])

    budget = time_budget(job)

    def out_of_budget(signum, frame):
        raise BudgetExceeded(f"grading budget of {budget:.1f}s exhausted")

    signal.signal(signal.SIGALRM, out_of_budget)
    signal.setitimer(signal.ITIMER_REAL, budget)
    _emit(STAGE_MARK)
    trace: list[str] = []
    try:
        result = grade(job, trace)
    except BudgetExceeded as exc:
        result = {"passed": False, "exit_status": "timeout"}
        trace.append(str(exc))
    except MemoryError:
        result = {"passed": False, "exit_status": "memory"}
        trace.append("the grading process ran out of memory")
    signal.setitimer(signal.ITIMER_REAL, 0)
    result.update(infra=False, notes=notes, trace="\n".join(trace))
    _emit(RESULT_MARK + json.dumps(result))
    confine.sweep(job["mode"] == "namespaces", job["uid"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
