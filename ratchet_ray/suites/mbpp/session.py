"""One grade, trusted side: feed the sandbox, read its frames, and decide the verdict here
(why: docs/grading.md, "MBPP+ grading").

``grade_in_sandbox(sandbox, problem, expected, code, budget_floor_s)`` -> ``Outcome``. The
sandbox gets the code, the entry point, the inputs and evalplus's per-test limits, never the
expected outputs. Each frame (protocol: runner.py) is checked for split, index and kind. An
output whose pickle digest equals the expected output's (oracle.py; absent where a NaN makes
equal values unequal) is evalplus's exact match; otherwise ``wire.decode`` builds plain values
and ``verdict.SplitChecker`` judges them as evalplus would. Outputs over ``MAX_NODES`` values
travel as the digest alone, so they pass only when identical to the expected value. Deadlines,
on the grader's clock: the start frame within ``startup_s`` of launch (trusted start-up, no code
yet); then per test evalplus's limit plus ``io_slack_s`` after the previous frame; per split
evalplus's cap (``verdict.split_timeout``), the first split plus ``grace_s`` for loading the
code; the whole grade its budget. The first failing test ends the grade (evalplus's fast
check); the sandbox is killed whatever happened. Nothing the sandbox sends can make a test pass
unless the output it carries is the right one.

Memory: judging a frame holds at most about twice its size. A frame the runner never writes is
refused before anything is built: not ASCII, more than ``MAX_MESSAGE_VALUES`` values, an escape
beyond Latin-1 in a frame over ``WIDE_CHECK_BYTES`` (only an output's frame is that large, and
its wire text holds none), or a wire text past ``MAX_WIRE_VALUES``. So an honest verdict is
unchanged, and a forged frame cannot make the grader build tens of bytes per byte it sent.

Attribution: until the runner's start frame (runner.py) any failure (bubblewrap or the
interpreter not starting, a start-up past the deadline, a runner fault) is the infrastructure's:
``Outcome.reached_untrusted`` is False. From it on every failure is the code's, whatever the
sandbox does next, and so is any error the grader hits while judging what the sandbox sent.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import reprlib
import signal
import sysconfig
import time
from dataclasses import dataclass, field

from ratchet_ray.evidence.tampering import PROTOCOL_VIOLATION, TAMPERING_STATUSES
from ratchet_ray.suites.mbpp import wire
from ratchet_ray.suites.mbpp.channel import FrameTimeout, FrameTooLarge
from ratchet_ray.suites.mbpp.sandbox import Sandbox
from ratchet_ray.suites.mbpp.verdict import SplitChecker, split_timeout, time_limits

log = logging.getLogger(__name__)
SPLITS = ("base", "plus")
MAX_NODES = 2_000_000  # larger outputs travel as a digest only
ENCODE_BYTES_PER_S = 20e6  # slack per byte of the expected output's pickle (hash + encode)
MAX_DEPTH = 100
MAX_WIRE_VALUES = 4 * MAX_NODES + 16
"""Values an honest output's wire text can build: ``MAX_NODES`` nodes, each at most four JSON
values (``["c", real, imag]``: the list, its tag and two floats), and a few to spare."""
MAX_MESSAGE_VALUES = 64
"""Values of one frame's JSON object: the runner's messages have at most a dozen."""
WIDE_CHECK_BYTES = 1 << 20
_WIDE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u(?!00)")
"""A real ``\\uXXXX`` escape (an odd run of backslashes) beyond U+00FF: it would make the decoded
string two or four bytes per character."""


class _SafeRepr(reprlib.Repr):
    def repr_int(self, x, level):  # repr() refuses ints over sys.get_int_max_str_digits()
        try:
            return super().repr_int(x, level)
        except ValueError:
            return f"<int of {x.bit_length()} bits>"


_short = _SafeRepr()
_short.maxstring, _short.maxother, _short.maxlist, _short.maxtuple = 100, 100, 6, 6
_short.maxdict, _short.maxset, _short.maxlevel = 6, 6, 3
# An Unencodable value is too big or too deep to send: a wrong answer.
_STATUS_OF_EXCEPTION = {"TimeoutException": "timeout", "TimeoutError": "timeout",
                        "MemoryError": "memory", "Unencodable": "failed_tests"}
GRADER_STATUSES = frozenset({"ok", "failed_tests", "crashed", "timeout", "memory", "syntax_error",
                             "missing_entry_point", "no_code", "extraction_cap",
                             "sandbox_setup_error",
                             "sandbox_setup_timeout", "sandbox_unavailable", *TAMPERING_STATUSES})
"""The verdicts the grader gives itself. An exception the code raises is graded under its class
name, which the code chooses: one named like these (``protocol_violation`` would read as
tampering, ``ok`` as a pass) is ``raised_<name>`` instead."""


@dataclass
class Outcome:
    passed: bool
    exit_status: str
    trace: list[str] = field(default_factory=list)
    reached_untrusted: bool = True
    """False when the sandbox failed before its runner said it was about to run the code (an
    infrastructure failure); True from the runner's start frame on."""


def _evalplus_utils() -> str:
    """evalplus's ``eval/utils.py`` by its real path: the sandbox binds real paths only, so a
    venv reached through a symlink must not be named by the link."""
    spec = importlib.util.find_spec("evalplus.eval.utils")
    return os.path.realpath(spec.origin) if spec and spec.origin else ""


def _call(entry_point: str, args) -> str:
    return f"{entry_point}({', '.join(_short.repr(a) for a in list(args)[:8])})"


class _Failure(Exception):
    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def grade_in_sandbox(sandbox: Sandbox, problem: dict, expected: dict, code: str,
                     budget_floor_s: float) -> Outcome:
    entry_point = problem["entry_point"]
    limits = {s: time_limits(expected[f"{s}_time"], sandbox.limits.min_time_limit_s,
                             sandbox.limits.gt_time_limit_factor) for s in SPLITS}
    caps = {s: split_timeout(limits[s], sandbox.limits.split_cap_s) + sandbox.limits.io_slack_s
            + sum(expected.get(f"{s}_bytes") or [0]) / ENCODE_BYTES_PER_S for s in SPLITS}
    budget = max(budget_floor_s, sum(caps.values())) + sandbox.limits.grace_s
    job = {"code": code, "entry_point": entry_point, "max_nodes": MAX_NODES,
           "max_depth": MAX_DEPTH, "evalplus_utils": _evalplus_utils(),
           "site_packages": os.path.realpath(sysconfig.get_paths()["purelib"]),  # real, as bound
           "cpu_s": budget,
           "splits": [{"name": s, "inputs": problem[f"{s}_input"], "limits": limits[s]}
                      for s in SPLITS]}
    started = time.monotonic()
    process = sandbox.start(job)
    outcome = Outcome(passed=False, exit_status="failed_tests", reached_untrusted=False)
    try:
        reader = _Reader(process, started + sandbox.limits.startup_s, sandbox.limits.io_slack_s)
        _await_start(reader, started + sandbox.limits.startup_s, outcome)
        # The code's clock starts at the start frame: a slow start-up of the machine is not the
        # code's time, and nothing of the code ran before the frame (runner.py writes it first).
        code_started = time.monotonic()
        reader.hard_deadline = code_started + budget
        first_deadline = code_started + caps[SPLITS[0]] + sandbox.limits.grace_s
        for number, split in enumerate(SPLITS):
            deadline = first_deadline if number == 0 else time.monotonic() + caps[split]
            _run_split(reader, split, problem, expected, limits[split], deadline, outcome)
            outcome.trace.append(f"{split}: pass ({len(problem[f'{split}_input'])} tests)")
        outcome.passed, outcome.exit_status = True, "ok"
    except _Failure as failure:
        outcome.exit_status = failure.status
        outcome.trace.append(failure.message)
    except Exception as exc:
        if not outcome.reached_untrusted:
            raise  # a grader fault before the code ran: MbppGrader files it as infrastructure
        # Judging what the code sent broke the grader: the code's doing (it chose what to send).
        # Logged in full so that a bug of the grader itself does not go unseen.
        log.exception("MBPP+ grader error while judging the sandbox's answers")
        outcome.exit_status = "failed_tests"
        outcome.trace.append(f"the sandbox's answer could not be judged "
                             f"({type(exc).__name__}: {str(exc)[:200]})")
    finally:
        returncode = process.close()
    if not outcome.passed and not outcome.reached_untrusted:
        outcome.trace.append(f"sandbox exited {returncode} before running the code: "
                             f"{process.stderr_tail()[-800:]}")
    return outcome


class _Reader:
    def __init__(self, process, hard_deadline: float, slack: float):
        self.process, self.hard_deadline, self.slack = process, hard_deadline, slack

    def frame(self, deadline: float, what: str) -> dict:
        try:
            raw = self.process.next_frame(min(deadline, self.hard_deadline))
        except FrameTimeout:
            raise _Failure("timeout", f"no answer within the time limit ({what})") from None
        except FrameTooLarge as exc:
            raise _Failure("failed_tests", f"output too large to check ({exc}; {what})") from None
        if raw is None:
            raise _Failure("crashed", f"the process died without an answer ({what})")
        message = _parse_frame(raw)
        del raw
        if type(message) is not dict or type(message.get("k")) is not str:
            raise _Failure(PROTOCOL_VIOLATION, f"malformed message from the sandbox ({what})")
        return message


def _parse_frame(raw: bytearray) -> object:
    """The frame's JSON value, or None when it is not one the runner could have written
    (module docstring: not ASCII, too many values, a wide escape in a large frame)."""
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        return None
    raw.clear()  # the caller's buffer: from here on only the text is held
    if wire.too_many_values(text, MAX_MESSAGE_VALUES):
        return None
    if len(text) > WIDE_CHECK_BYTES and "\\u" in text and _WIDE_ESCAPE.search(text):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _await_start(reader: _Reader, deadline: float, outcome: Outcome) -> None:
    """Wait for the runner's start frame; from it on, every failure is the code's."""
    first = reader.frame(deadline, "starting the sandbox")
    if first.get("k") != "start":  # only trusted code writes before it: a runner fault
        raise _Failure("failed_tests", f"protocol violation: the runner began with "
                                       f"{str(first.get('k'))[:20]!r}, not its start frame")
    outcome.reached_untrusted = True


def _exception(message: dict, entry_point: str, call: str) -> _Failure:
    name = str(message.get("name", "BaseException"))[:80]
    text = str(message.get("msg", ""))[:200]
    stage = message.get("stage")
    if stage == "lookup" and name == "KeyError":
        status = "missing_entry_point"
    else:
        status = _STATUS_OF_EXCEPTION.get(name) or (
            f"raised_{name}" if name in GRADER_STATUSES else name)
    where = {"exec": "defining the module", "lookup": f"looking up {entry_point}"}.get(stage, call)
    return _Failure(status, f"{where} raised {name}: {text}")


def _died(message: dict, where: str) -> _Failure:
    """The split's process ended without an answer: ``crashed`` (``timeout`` for SIGXCPU)."""
    number, name = message.get("signal"), ""
    if type(number) is int and number > 0:
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
    status = "timeout" if name == "SIGXCPU" else "crashed"
    return _Failure(status, f"the process died without an answer ({where})"
                            + (f", killed by {name}" if name else ""))


def _run_split(reader: _Reader, split: str, problem: dict, expected: dict, limits: list[float],
               split_deadline: float, outcome: Outcome) -> None:
    entry_point = problem["entry_point"]
    inputs, outputs = problem[f"{split}_input"], expected[split]
    first = reader.frame(split_deadline, f"{split}: loading the module")
    while first.get("k") == "exit" and first.get("split") != split:  # the previous split's end
        first = reader.frame(split_deadline, f"{split}: loading the module")
    if first.get("k") == "exit":
        raise _died(first, f"{split}: loading the module")
    kind = first.get("k")
    if kind == "syntax":
        raise _Failure("syntax_error", f"{first.get('name')}: {str(first.get('msg'))[:300]}")
    if kind == "exc" and first.get("split") == split:
        raise _exception(first, entry_point, entry_point)
    if kind != "ready" or first.get("split") != split:
        raise _Failure(PROTOCOL_VIOLATION, f"protocol violation before {split} tests")
    checker = SplitChecker(entry_point, problem["atol"])
    digests = expected.get(f"{split}_digest") or [None] * len(outputs)
    sizes = expected.get(f"{split}_bytes") or [0] * len(outputs)
    last = time.monotonic()
    for index, (args, exp, limit) in enumerate(zip(inputs, outputs, limits)):
        call = _call(entry_point, args)
        where = f"{split} test {index + 1}/{len(inputs)}"
        # hashing/encoding a big output takes time outside evalplus's limit on the call
        slack = reader.slack + sizes[index] / ENCODE_BYTES_PER_S
        message = reader.frame(min(split_deadline, last + limit + slack), where)
        last = time.monotonic()
        if message.get("k") == "exit" and message.get("split") == split:
            outcome.trace.append(f"{split}: fail at test {index + 1}/{len(inputs)}")
            raise _died(message, call)
        if message.get("split") != split or message.get("i") != index:
            raise _Failure(PROTOCOL_VIOLATION, f"protocol violation at {where}")
        if message["k"] == "exc":
            outcome.trace.append(f"{split}: fail at test {index + 1}/{len(inputs)}")
            raise _exception(message, entry_point, call)
        text, digest = message.get("v"), message.get("h")
        if message["k"] != "out" or type(text) not in (str, type(None)):
            raise _Failure(PROTOCOL_VIOLATION, f"protocol violation at {where}")
        if digests[index] is not None and digest == digests[index]:
            checker.matched_exactly(exp)  # byte-identical pickle: evalplus's exact match
            continue
        if text is None:  # too big for the wire and not identical: no rule of evalplus can pass
            outcome.trace.append(f"{split}: fail at test {index + 1}/{len(inputs)}")
            raise _Failure("failed_tests", f"{call} returned a value too big to compare (over "
                                           f"{MAX_NODES} values) that is not the expected one")
        try:
            out = wire.decode(text, MAX_DEPTH, MAX_WIRE_VALUES)
        except wire.WireError as exc:
            raise _Failure("failed_tests",
                           f"{call} returned an undecodable value ({exc})") from None
        if not checker.check(args, out, exp):
            outcome.trace.append(f"{split}: fail at test {index + 1}/{len(inputs)}")
            raise _Failure("failed_tests",
                           f"{call} returned {_short.repr(out)}, expected {_short.repr(exp)}")
