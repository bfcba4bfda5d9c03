"""The project's own test command, run in a container of its image, parsed by swebench.

Contracts:
- ``run_suite(client, image, project, diff=None, removed=())``: one container of ``image``
  without network, ``diff`` applied to ``/testbed``, ``removed`` deleted, ``project.test_command``
  run on the test folders (deselections left out) between swebench's markers; returns a
  ``SuiteRun``: each test's status by the project's swebench log parser, the log, the seconds,
  and ``summary``: each failure's reason (pytest's ``FAILED id - why``, or the exception line
  of unittest's ``FAIL: id`` block or under sympy's ``___ path.py:test_x ___`` header). Past
  ``project.timeout_s``: ``RealcodeError``; the container is removed either way.
- ``passed(status)``: PASSED and XFAIL pass, as swebench's grader counts them.
"""

from __future__ import annotations

import base64
import re
import shlex
import time
from dataclasses import dataclass, field
from typing import Any

from ratchet_ray.suites.swebench.docker.container import LABELS, OWNER_KEY, owner_label
from ratchet_ray.suites.swebench.imports import serial_imports
from ratchet_ray.suites.swebench.integrity.verdict import PASSING
from ratchet_ray.suites.swebench.realcode.projects import Project, RealcodeError, test_label

START, END = ">>>>> Start Test Output", ">>>>> End Test Output"


@dataclass
class SuiteRun:
    statuses: dict[str, str]
    log: str
    seconds: float
    summary: dict[str, str] = field(default_factory=dict)
    """Test id -> the reason pytest's short summary gives for a failure or error."""


def passed(status: str) -> bool:
    return status in PASSING


def test_args(project: Project, paths: tuple[str, ...] | list[str] | None = None) -> str:
    """The test command's arguments: ``paths`` (default the test folders) as the runner's
    labels, deselections."""
    words = [test_label(project, p) for p in (paths or project.test_dirs)]
    for test_id, _why in project.deselected:
        words += ["--deselect", test_id]
    return " ".join(shlex.quote(w) for w in words)


def script(project: Project, diff: str | None, removed: tuple[str, ...] | list[str]) -> str:
    lines = ["set -e", "cd /testbed"]
    if diff:
        lines.append(f"echo {base64.b64encode(diff.encode()).decode()} | base64 -d | "
                     f"git apply -")
    if removed:
        lines.append("rm -f -- " + " ".join(shlex.quote(p) for p in removed))
    lines += ["set +e", f"echo '{START}'", f"{project.test_command} {test_args(project)}",
              f"echo '{END}'"]
    return "\n".join(lines) + "\n"


_UNITTEST_ID = re.compile(r"\w+ \([\w.]+\)")
_SYMPY_HEADER = re.compile(r"^_+ \S+\.py:(test_\w+) _+$")  # sympy's "___ path.py:test_x ___"
_EXCEPTION = re.compile(r"[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b")


def _summary(log: str) -> dict[str, str]:
    reasons: dict[str, str] = {}
    block: str | None = None  # unittest's "FAIL: id" block: its exception line is the reason
    for line in log.splitlines():
        for status in ("FAILED ", "ERROR "):
            if line.startswith(status) and " - " in line:
                test_id, why = line[len(status):].split(" - ", 1)
                reasons[test_id.strip()] = why.strip()
        if line.startswith(("FAIL: ", "ERROR: ")):  # a subtest's params follow the id
            head = _UNITTEST_ID.match(line.split(": ", 1)[1])
            block = head.group(0) if head else line.split(": ", 1)[1].strip()
        elif header := _SYMPY_HEADER.match(line):  # the test's traceback follows
            block = header.group(1)
        elif line.startswith("=" * 20):
            block = None
        elif block and _EXCEPTION.match(line):
            reasons[block] = line.strip()  # the latest: a chained exception's raised one
    return reasons


def run_suite(client: Any, image: str, project: Project, diff: str | None = None,
              removed: tuple[str, ...] | list[str] = ()) -> SuiteRun:
    """One full run of the test command (module contract)."""
    with serial_imports:
        from swebench.harness.log_parsers import PARSER_REGISTRY

    started = time.monotonic()
    # labelled as the grader's containers are: one a SIGKILLed build leaves running is removed by
    # the next build's (or run's) reap, and `ratchet doctor` names it meanwhile
    container = client.containers.create(image, ["bash", "-c", script(project, diff, removed)],
                                         network_disabled=True, network_mode="none",
                                         labels={**LABELS, OWNER_KEY: owner_label()})
    try:
        container.start()
        try:
            result = container.wait(timeout=project.timeout_s)
        except Exception as exc:  # requests' ReadTimeout / ConnectionError: the run hangs
            raise RealcodeError(f"the test command of {project.name} ran past "
                                f"{project.timeout_s}s in {image}; deselect the hanging tests "
                                f"in its recipe") from exc
        log = container.logs(stdout=True, stderr=True).decode(errors="replace")
    finally:
        container.remove(force=True)
    if START not in log or END not in log:
        raise RealcodeError(f"the test run in {image} stopped before its test command "
                            f"(exit {result.get('StatusCode')}): {log.strip()[-300:]}")
    body = log.split(START, 1)[1].split(END, 1)[0]
    statuses = PARSER_REGISTRY[project.log_parser](body, None)
    return SuiteRun(statuses, body, time.monotonic() - started, _summary(body))
