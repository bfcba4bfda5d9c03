"""Whose failure is it: the code's (graded, ``infra_failure=False``) or the infrastructure's?

The sandboxed runner writes a start frame before the solution is compiled or run; everything
after it is the code's. Each attack here runs at MODULE level (at import, before the entry point
is ever called), where the grader used to file the failure as ``sandbox_setup_*`` infrastructure.
The attacks also try to make their failure look like infrastructure: killing the runner, closing
every file descriptor (the channel included), writing garbage or a forged start frame into the
channel, exiting with odd codes. A sandbox that really does not start (an invalid bind, a missing
binary, a start-up that never ends, a runner fault before the code) is still infrastructure.
All of it runs through the real bubblewrap sandbox."""

from __future__ import annotations

import os
import shutil
import time
import uuid

import pytest

from ratchet_ray.evidence.tampering import PROTOCOL_VIOLATION
from ratchet_ray.suites.mbpp import sandbox as sandbox_module
from ratchet_ray.suites.mbpp import session as session_module
from ratchet_ray.suites.mbpp.grader import MbppGrader
from ratchet_ray.suites.mbpp.sandbox import SandboxLimits

TASK = "Mbpp/17"
CHANNEL = "import sys, posix\nFD = int(sys.argv[1])  # the runner's result fd\n"


def module(setup: str) -> str:
    """A solution whose entry point uses a table built at import by ``setup`` (the extraction
    keeps a module-level assignment only when the entry point uses it)."""
    body = "\n".join("    " + line for line in setup.strip().splitlines())
    return (f"```python\ndef build_table():\n{body}\n    return [4]\n\n\nTABLE = build_table()\n\n\n"
            f"def square_perimeter(a):\n    return TABLE[0] * a\n```")


def frame(payload: bytes) -> str:
    return f"(len({payload!r}).to_bytes(4, 'big') + {payload!r})"


@pytest.fixture
def graded_as_the_codes(strict_grader, mbpp_tasks, mbpp_dataset, own_sandbox_processes):
    """Grade ``output``: a failure of the code, with one of ``statuses``, nothing left running,
    and the grader still passes the reference solution afterwards."""
    if not strict_grader.isolation.startswith("bwrap"):
        pytest.skip(f"needs the bubblewrap sandbox: {strict_grader.isolation}")

    def check(output: str, *statuses: str):
        result = strict_grader.grade(mbpp_tasks[TASK], output)
        assert (result.passed, result.infra_failure) == (False, False), result
        assert result.exit_status in statuses, result
        assert "before running the code" not in result.trace, result.trace
        deadline = time.monotonic() + 10  # the sandbox is reaped before grade() returns
        while own_sandbox_processes() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert own_sandbox_processes() == set()
        good = strict_grader.grade(mbpp_tasks[TASK], mbpp_dataset.problem(TASK)["canonical_solution"])
        assert good.passed and not good.infra_failure, good.trace
        return result

    return check


# --- the code's own failures at import --------------------------------------------------------

def test_endless_loop_at_import_is_a_timeout(graded_as_the_codes):
    prelude = "n = 0\nwhile True:\n    n += 1"
    result = graded_as_the_codes(module(prelude), "timeout")
    assert "loading the module" in result.trace


def test_sleep_at_import_is_a_timeout(graded_as_the_codes):
    result = graded_as_the_codes(module("import time\nBUILT = time.sleep(3600)"), "timeout")
    assert "loading the module" in result.trace


def test_self_kill_at_import_is_a_crash(graded_as_the_codes):
    result = graded_as_the_codes(module("import posix\nposix.kill(posix.getpid(), 9)"), "crashed")
    assert "SIGKILL" in result.trace


@pytest.mark.parametrize("victims", ["posix.getppid(),", "-1,", "posix.getppid(), 1, -1"],
                         ids=["runner", "everything", "runner-init-everything"])
def test_killing_the_runner_at_import_is_a_crash(graded_as_the_codes, victims):
    """The runner dies, so no frame of the split ever comes: the sandbox ends (its init exits
    with the runner) while the code waits, without having answered anything."""
    prelude = f"import posix, time\nfor pid in ({victims}):\n    try:\n        posix.kill(pid, 9)\n" \
              "    except OSError:\n        pass\ntime.sleep(60)"
    result = graded_as_the_codes(module(prelude), "crashed")
    assert "died without an answer (base: loading the module)" in result.trace


def test_closing_every_file_descriptor_at_import_is_a_crash(graded_as_the_codes):
    result = graded_as_the_codes(module("import os\nos.closerange(0, 1024)"), "crashed")
    assert "died without an answer" in result.trace


def test_closing_every_file_descriptor_then_hanging_is_a_timeout(graded_as_the_codes):
    graded_as_the_codes(module("import os, time\nos.closerange(0, 1024)\ntime.sleep(3600)"),
                        "timeout")


@pytest.mark.parametrize("code", [0, 1, 70, 127, 255])
def test_odd_exit_codes_at_import_are_a_crash(graded_as_the_codes, code):
    graded_as_the_codes(module(f"import posix\nposix._exit({code})"), "crashed")


# --- forging the channel ----------------------------------------------------------------------

def test_a_forged_start_frame_is_a_protocol_violation(graded_as_the_codes):
    fake = frame(b'{"k":"start"}')
    prelude = f"{CHANNEL}posix.write(FD, {fake})\nposix._exit(0)"
    result = graded_as_the_codes(module(prelude), PROTOCOL_VIOLATION)
    assert "protocol violation before base tests" in result.trace


@pytest.mark.parametrize("payload, status", [
    ("b'\\xff' * 64", "failed_tests"),  # a frame over max_frame_mb: too large to check
    ("b'\\x00\\x00\\x00\\x03abc'", PROTOCOL_VIOLATION),
    ("b'\\x00\\x00\\x00\\x10{\"k\": \"start\"'", PROTOCOL_VIOLATION),  # the rest comes from the runner
], ids=["oversized-length", "not-json", "truncated-start"])
def test_garbage_in_the_channel_is_the_codes(graded_as_the_codes, payload, status):
    prelude = f"{CHANNEL}posix.write(FD, {payload})\nposix.close(FD)\nposix._exit(0)"
    graded_as_the_codes(module(prelude), status)


def test_forged_frames_then_killing_the_runner_stay_the_codes(graded_as_the_codes):
    """A well-formed fake 'syntax' frame, then the runner killed: still graded, never infra."""
    fake = frame(b'{"k":"syntax","name":"SandboxSetupError","msg":"fake"}')
    prelude = f"{CHANNEL}posix.write(FD, {fake})\nposix.kill(posix.getppid(), 9)\nposix._exit(3)"
    result = graded_as_the_codes(module(prelude), "syntax_error")
    assert "SandboxSetupError: fake" in result.trace


# --- the infrastructure's failures ------------------------------------------------------------

@pytest.fixture
def bwrap_grader(strict_grader):
    if not strict_grader.isolation.startswith("bwrap"):
        pytest.skip(f"needs the bubblewrap sandbox: {strict_grader.isolation}")
    return strict_grader


def _extend_bwrap(monkeypatch, extra: list[str], command: list[str] = ()) -> None:
    """Later sandbox starts get ``extra`` bwrap options and ``command`` before the runner."""
    real = sandbox_module.bwrap_argv

    def patched(bwrap, limits):
        argv = real(bwrap, limits)
        assert argv[-1] == "--"
        return [*argv[:-1], *extra, "--", *command]

    monkeypatch.setattr(sandbox_module, "bwrap_argv", patched)


def _assert_infra(grader, mbpp_tasks, status: str, *evidence: str):
    result = grader.grade(mbpp_tasks[TASK], module("import posix"))
    assert (result.passed, result.infra_failure, result.exit_status) == (False, True, status), result
    for text in evidence:
        assert text in result.trace, result.trace
    return result


def test_an_invalid_bind_is_infrastructure(bwrap_grader, mbpp_tasks, monkeypatch):
    missing = f"/nonexistent-ratchet-{uuid.uuid4().hex}"
    _extend_bwrap(monkeypatch, ["--ro-bind", missing, "/mnt"])
    _assert_infra(bwrap_grader, mbpp_tasks, "sandbox_setup_error", "before running the code",
                  missing)


def test_a_missing_bwrap_binary_is_infrastructure(bwrap_grader, mbpp_tasks, monkeypatch):
    missing = f"/nonexistent-ratchet-{uuid.uuid4().hex}/bwrap"
    real_which = shutil.which
    monkeypatch.setattr(sandbox_module.shutil, "which",
                        lambda name, *a, **k: missing if name == "bwrap" else real_which(name, *a, **k))
    result = bwrap_grader.grade(mbpp_tasks[TASK], module("import posix"))
    # as root, confine.py cannot exec it (the sandbox exits); otherwise Popen itself raises
    assert (result.passed, result.infra_failure) == (False, True), result
    assert result.exit_status in ("sandbox_setup_error", "FileNotFoundError"), result
    assert missing in result.trace, result.trace


def test_a_start_up_that_never_ends_is_infrastructure(mbpp_dataset, groundtruth_store, mbpp_tasks,
                                                      monkeypatch):
    grader = MbppGrader(mbpp_dataset, groundtruth=groundtruth_store,
                        limits=SandboxLimits(budget_s=2.0, grace_s=1.0, startup_s=3.0))
    if not grader.isolation.startswith("bwrap"):
        pytest.skip(f"needs the bubblewrap sandbox: {grader.isolation}")
    # inside the real sandbox, a shell that sleeps before it would exec the runner
    _extend_bwrap(monkeypatch, [], ["/bin/sh", "-c", 'sleep 3600; exec "$0" "$@"'])
    _assert_infra(grader, mbpp_tasks, "sandbox_setup_timeout", "starting the sandbox")


def test_a_slow_start_up_is_waited_for_and_not_taken_from_the_codes_time(
        mbpp_dataset, groundtruth_store, mbpp_tasks, monkeypatch):
    """A loaded machine: the sandbox starts 8 s late, past the first split's cap, grace_s and
    the budget (an infrastructure failure before the start-up had a deadline of its own). The
    code's clock starts at the start frame, so the right answer passes and a hang is still the
    code's timeout, not an infrastructure failure."""
    grader = MbppGrader(mbpp_dataset, groundtruth=groundtruth_store,
                        limits=SandboxLimits(budget_s=2.0, grace_s=1.0, startup_s=30.0))
    if not grader.isolation.startswith("bwrap"):
        pytest.skip(f"needs the bubblewrap sandbox: {grader.isolation}")
    _extend_bwrap(monkeypatch, [], ["/bin/sh", "-c", 'sleep 8; exec "$0" "$@"'])
    good = grader.grade(mbpp_tasks[TASK], mbpp_dataset.problem(TASK)["canonical_solution"])
    assert (good.passed, good.infra_failure, good.exit_status) == (True, False, "ok"), good
    hang = grader.grade(mbpp_tasks[TASK], module("while True: pass"))
    assert (hang.passed, hang.infra_failure, hang.exit_status) == (False, False, "timeout"), hang


def test_a_runner_fault_before_the_code_is_infrastructure(bwrap_grader, mbpp_tasks, monkeypatch):
    """The runner cannot load evalplus's guard (the symlinked-venv failure): nothing ran."""
    missing = f"/nonexistent-ratchet-{uuid.uuid4().hex}/utils.py"
    monkeypatch.setattr(session_module, "_evalplus_utils", lambda: missing)
    _assert_infra(bwrap_grader, mbpp_tasks, "sandbox_setup_error", "FileNotFoundError", missing)


# --- the grader's side after the start frame --------------------------------------------------

def test_an_answer_the_grader_cannot_print_is_the_codes(graded_as_the_codes):
    """A wrong int too long for repr() (over sys.get_int_max_str_digits) used to raise in the
    grader's trace, which filed the grade as a grader (infrastructure) failure."""
    code = "```python\ndef square_perimeter(a):\n    return 7 ** 20000\n```"
    result = graded_as_the_codes(code, "failed_tests")
    assert "returned <int of" in result.trace


def test_a_frame_that_arrived_in_time_is_read_after_the_deadline():
    """A slow grader still reads what the sandbox sent before the deadline (the start frame
    above all); past it, nothing more is waited for."""
    import subprocess

    from ratchet_ray.suites.mbpp.channel import FrameTimeout, SandboxProcess

    read_end, write_end = os.pipe()
    info_read, info_write = os.pipe()
    os.close(info_write)
    proc = subprocess.Popen(["sleep", "30"], stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    channel = SandboxProcess(proc, read_end, b"job", 1 << 20, "test", info_read)
    try:
        os.write(write_end, len(b'{"k":"start"}').to_bytes(4, "big") + b'{"k":"start"}')
        past = time.monotonic() - 1.0
        assert channel.next_frame(past) == b'{"k":"start"}'
        with pytest.raises(FrameTimeout):
            channel.next_frame(past)
    finally:
        os.close(write_end)
        channel.close()
