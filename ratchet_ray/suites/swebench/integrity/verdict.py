"""Where the verdict is read from: per-run secret markers and a JUnit report, cross-checked
(docs/grading.md, "The verdict comes from channels the tests cannot write").

``instrument`` rewrites the eval script's test block:
- swebench's markers become ``Markers.start``/``end``, 128 random bits of the host's, only in
  the root-only script and the trusted bash;
- the block runs under ``setpriv`` as the untrusted uid (where the image has it), stderr joined
  to stdout, ``PYTEST_ADDOPTS`` adding ``--junitxml`` at a random path in a root-owned folder it
  can create files in but not list; then every process of the uid is killed and the end marker
  and exit code are printed (no root step runs in the tree after the tests);
- an install step before the block (``INSTALL_STEP``) runs as the uid too, then the same kill;
- ``RunExtras``: root steps just before the tests and pytest options and a ``PYTHONPATH`` entry.

``split_log(stdout, output, markers)`` cuts stdout at the real markers and rebuilds swebench's
log; an imitated swebench marker, or secret markers missing or repeated, raise ``Forgery``.
``cross_check``: the tests the log counts as passing that the JUnit report does not.
"""

from __future__ import annotations

import re
import secrets
import shlex
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree

from ratchet_ray.suites.swebench.imports import serial_imports
from ratchet_ray.suites.swebench.integrity.harness_paths import repo_relative_file

MAX_JUNIT_BYTES = 64 * 2**20
PASSING = ("PASSED", "XFAIL")


class Forgery(ValueError):
    """The output contradicts how the trusted side ran the tests (the message says how)."""


class MarkersMissing(Forgery):
    """The secret markers are not both in the output: the test block did not run to its end."""


class ScriptShapeError(ValueError):
    """The eval script has no swebench start/end markers around its test command."""


@dataclass(frozen=True)
class Markers:
    start: str
    end: str
    junit_dir: str
    junit_path: str

    @classmethod
    def fresh(cls) -> "Markers":
        token = secrets.token_hex(16)
        folder = f"/var/tmp/ratchet-{secrets.token_hex(16)}"
        return cls(start=f"@@ratchet-tests-start-{token}@@", end=f"@@ratchet-tests-end-{token}@@",
                   junit_dir=folder, junit_path=f"{folder}/{secrets.token_hex(16)}.xml")


@dataclass(frozen=True)
class RunExtras:
    """What the grader adds around the test command: ``root_steps`` run as root just before it
    (planting the canaries), ``addopts`` go into ``PYTEST_ADDOPTS`` and ``pythonpath`` is put
    first on ``PYTHONPATH`` (the sentinel plugin's root-owned folder)."""

    root_steps: tuple[str, ...] = ()
    addopts: str = ""
    pythonpath: str | None = None


def _constants() -> tuple[str, str, str, str]:
    with serial_imports:
        from swebench.harness.constants import (
            END_TEST_OUTPUT, START_TEST_OUTPUT, TEST_EXIT_CODE, TEST_EXIT_CODE_VAR)

    return START_TEST_OUTPUT, END_TEST_OUTPUT, TEST_EXIT_CODE, TEST_EXIT_CODE_VAR


def _test_block(lines: list[str]) -> tuple[int, int]:
    """Line numbers of swebench's start and end markers around the test command."""
    start_mark, end_mark, _, _ = _constants()
    starts = [i for i, line in enumerate(lines) if start_mark in line]
    ends = [i for i, line in enumerate(lines) if end_mark in line]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise ScriptShapeError(f"eval script: expected one {start_mark!r} line before one "
                               f"{end_mark!r} line, found {len(starts)} and {len(ends)}")
    return starts[0], ends[0]


def command_words(eval_script: str) -> list[str]:
    """The shell words of the test command (between swebench's markers); empty without them."""
    lines = eval_script.split("\n")
    try:
        begin, stop = _test_block(lines)
    except ScriptShapeError:
        return []
    words: list[str] = []
    for line in lines[begin + 1:stop]:
        try:
            words.extend(shlex.split(line, comments=True))
        except ValueError:
            continue
    return words


def runner_files(eval_script: str) -> set[str]:
    """The repository files the test command names: a runner such as django's
    ``tests/runtests.py`` or sympy's ``bin/test``, and test files (words that are plain relative
    paths with a ``/`` or ending in ``.py``); empty for a script without the markers."""
    files = set()
    for word in command_words(eval_script):
        path = repo_relative_file(word)
        if path is not None and ("/" in path or path.endswith(".py")):
            files.add(path)
    return files


def printed_exit_code(stdout: str, markers: Markers) -> int | None:
    """The test command's exit code as the trusted script printed it after the end marker."""
    _, _, exit_mark, _ = _constants()
    after = stdout.split(markers.end, 1)[1] if markers.end in stdout else ""
    m = re.search(re.escape(exit_mark) + r":\s*(-?\d+)", after)
    return int(m.group(1)) if m else None


# A step before the test block that builds or installs the repository (swebench's per-repo
# ``install`` command, e.g. ``python -m pip install -e .``) runs the patch's code (its setup.py,
# its build backend, the modules they import): it runs as the untrusted uid, never root.
INSTALL_STEP = re.compile(r"\b(?:pip[\d.]*|python[\d.]*\s+-m\s+pip)\s+install\b|\bsetup\.py\b|"
                          r"\bconda\s+develop\b|\bpython[\d.]*\s+-m\s+build\b|^\s*make\b")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_UID_ENV = "HOME=/tmp/ratchet-home USER=ratchet LOGNAME=ratchet"


def _as_uid(uid: int) -> str:
    return f"setpriv --reuid={uid} --regid={uid} --clear-groups --"


def _reap(uid: int) -> str:
    """Kill every process of ``uid`` (``kill -1`` as that uid reaches only its own)."""
    return f"{_as_uid(uid)} /bin/bash -c 'kill -KILL -1' 2>/dev/null"


def _untrusted_installs(lines: list[str], uid: int) -> list[str]:
    """``lines`` (the script before its test block) with each ``INSTALL_STEP`` line run as
    ``uid`` (its HOME, its environment otherwise), then every process of that uid killed, so
    nothing it started is alive when root resets the tests and plants the graded files. Lines
    inside a here-document (the test patch) are left as they are."""
    out: list[str] = []
    ending: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if ending is not None:
            out.append(line)
            if line.strip() == ending:
                ending = None
            continue
        if m := _HEREDOC.search(line):
            ending = m.group(2)
            out.append(line)
        elif INSTALL_STEP.search(line) and not line.lstrip().startswith("#"):
            while line.endswith("\\") and i < len(lines):  # a command continued on the next line
                line = line[:-1] + " " + lines[i]
                i += 1
            out.append(f"env {_UID_ENV} {_as_uid(uid)} /bin/bash -c {shlex.quote(line)}")
            out.append(f"{_reap(uid)} || true")
        else:
            out.append(line)
    return out


def instrument(script: str, markers: Markers, uid: int | None,
               extras: RunExtras = RunExtras()) -> str:
    """The eval script instrumented (module contract); ``uid`` None: no privilege drop."""
    _, _, exit_mark, exit_var = _constants()
    lines = script.split("\n")
    begin, stop = _test_block(lines)
    body = lines[begin + 1:stop]
    capture = [line for line in body if line.startswith(f"{exit_var}=")]
    tests = "\n".join(line for line in body if not line.startswith(f"{exit_var}="))
    addopts = f"{extras.addopts} --junitxml={markers.junit_path} -o junit_family=xunit1".strip()
    plant = list(extras.root_steps)
    env = f'PYTEST_ADDOPTS="${{PYTEST_ADDOPTS:-}} {addopts}"'
    if extras.pythonpath:
        env += f' PYTHONPATH="{extras.pythonpath}${{PYTHONPATH:+:$PYTHONPATH}}"'
    if uid is not None:
        env += f" {_UID_ENV} {_as_uid(uid)}"
    run = f"env {env} /bin/bash -c {shlex.quote(tests)} 2>&1"
    # Whatever the tests left running (holding the output open, or writing the report late)
    # dies before the end marker.
    reap = ":" if uid is None else _reap(uid)
    # No xtrace from here: traced lines go to stderr, which interleaves with stdout in any order,
    # so a traced marker or exit-code echo could land inside the test section.
    block = ["{ set +x; } 2>/dev/null", f"mkdir -p -m 0733 {markers.junit_dir}", *plant,
             f"echo {shlex.quote(markers.start)}", run,
             *(capture or [f"{exit_var}=$?"]), reap, f"echo {shlex.quote(markers.end)}",
             f'echo "{exit_mark}: ${exit_var}"']
    # Nothing after the tests: the script's final reset of the test files does not change the
    # verdict, and root must not run git in a tree the untrusted uid has written to.
    head = lines[:begin] if uid is None else _untrusted_installs(lines[:begin], uid)
    return "\n".join([*head, *block, ""])


def split_log(stdout: str, output: str, markers: Markers) -> tuple[str, str]:
    """``(log for swebench, test section)`` (module contract; the test block writes its stderr
    into stdout, in order); ``output`` (stdout and stderr) is only searched for imitations."""
    start_mark, end_mark, exit_mark, _ = _constants()
    lines = stdout.split("\n")
    starts = [i for i, line in enumerate(lines) if line.strip() == markers.start]
    ends = [i for i, line in enumerate(lines) if line.strip() == markers.end]
    if len(starts) > 1 or len(ends) > 1:
        raise Forgery("the run's secret test markers appear more than once in the output")
    if not starts or not ends or ends[0] < starts[0]:
        raise MarkersMissing("the run's secret test markers are missing from the output (the "
                             "test block did not run to its end)")
    head, section, tail = lines[:starts[0]], lines[starts[0] + 1:ends[0]], lines[ends[0] + 1:]
    for mark in (start_mark, end_mark):
        if mark in output:
            raise Forgery(f"the output imitates swebench's marker {mark!r}")
    if any(exit_mark in line for line in head + section):
        raise Forgery(f"the output imitates swebench's marker {exit_mark!r}")
    text = "\n".join(section)
    log = "\n".join([*head, start_mark, text, end_mark, *tail])
    return log, text


def _status(case: ElementTree.Element) -> str:
    kinds = {child.tag: child for child in case}
    if "failure" in kinds:
        return "FAILED"
    if "error" in kinds:
        return "ERROR"
    if "skipped" in kinds:
        return "XFAIL" if kinds["skipped"].get("type") == "pytest.xfail" else "SKIPPED"
    return "PASSED"


def _cases(xml: bytes) -> list[tuple[str, ElementTree.Element]]:
    """``(pytest node id, testcase element)`` of an xunit1 report, in its order (raises
    ``Forgery`` for a report that is too big or not JUnit XML)."""
    if len(xml) > MAX_JUNIT_BYTES:
        raise Forgery(f"the JUnit report is {len(xml)} bytes (limit {MAX_JUNIT_BYTES})")
    try:
        root = ElementTree.fromstring(xml)
    except ElementTree.ParseError as exc:
        raise Forgery(f"the JUnit report is not XML ({exc})") from exc
    cases = []
    for case in root.iter("testcase"):
        path, classname, name = case.get("file"), case.get("classname", ""), case.get("name", "")
        if not path or not name:
            continue
        module = path[:-3].replace("/", ".") if path.endswith(".py") else path.replace("/", ".")
        rest = classname[len(module) + 1:] if classname.startswith(module + ".") else ""
        cases.append(("::".join([path, *[p for p in rest.split(".") if p], name]), case))
    return cases


def junit_failures(xml: bytes) -> dict[str, str]:
    """``{pytest node id: the failure's text}`` (pytest's traceback, which names each frame's
    ``file:line``) for every test the xunit1 report says failed (``Forgery`` as
    ``junit_statuses``)."""
    failures: dict[str, str] = {}
    for node, case in _cases(xml):
        for child in case:
            if child.tag == "failure":
                failures[node] = failures.get(node, "") + (child.text or "")
    return failures


def junit_statuses(xml: bytes) -> dict[str, str]:
    """``{pytest node id: PASSED | FAILED | ERROR | SKIPPED | XFAIL}`` from an xunit1 report
    (raises ``Forgery`` for a report that is too big or not JUnit XML)."""
    statuses: dict[str, str] = {}
    for node, case in _cases(xml):
        status = _status(case)
        # A test reported twice (call and teardown errors) keeps its worst outcome.
        if statuses.get(node) in (None, "PASSED", "XFAIL", "SKIPPED"):
            statuses[node] = status
    return statuses


_OPTION = re.compile(r"(.*?)\[(.*)\]")


def _options_form(node: str) -> str:
    """swebench's ``parse_log_pytest_options`` spelling of a node id (path parameters shortened)."""
    m = _OPTION.search(node)
    if not m:
        return node
    main, option = m.groups()
    if option.startswith("/") and not option.startswith("//") and "*" not in option:
        option = "/" + option.split("/")[-1]
    return f"{main}[{option}]"


def resolve(test: str, statuses: dict[str, str], options_form: bool = False) -> str | None:
    """The report's status of test id ``test`` (node ids relative to another folder match by
    suffix; a truncated parametrised id by prefix, as swebench does), or None."""
    table = {(_options_form(k) if options_form else k): v for k, v in statuses.items()}
    if test in table:
        return table[test]
    hits = [v for k, v in table.items() if k.endswith("/" + test) or test.endswith("/" + k)]
    if not hits and test.count("[") > test.count("]"):
        hits = [v for k, v in table.items() if k.startswith(test)]
    if len(set(hits)) == 1:
        return hits[0]
    return None


def cross_check(report: dict[str, Any], statuses: dict[str, str] | None,
                options_form: bool = False) -> list[str]:
    """The disagreements (empty when they agree): every F2P/P2P test the log counts as a success
    must pass in the JUnit report too (a P2P test may also be skipped); a missing report
    disagrees with every success."""
    disagreements = []
    tests_status = report.get("tests_status", {})
    for kind, allowed in (("FAIL_TO_PASS", PASSING), ("PASS_TO_PASS", (*PASSING, "SKIPPED"))):
        for test in tests_status.get(kind, {}).get("success", []):
            status = None if statuses is None else resolve(test, statuses, options_form)
            if status not in allowed:
                disagreements.append(
                    f"{test}: the log says passed, the JUnit report says "
                    f"{'nothing (no report)' if statuses is None else status or 'nothing'}")
    return disagreements


def test_runner(name: str) -> tuple[str | None, bool]:
    """``(runner, uses the options spelling)`` for a swebench log parser name: the runner is
    ``"pytest"`` (its family of parsers), ``"unittest"`` (django's ``runtests.py``, whose verbose
    lines are unittest's), ``"sympy"`` (its ``bin/test``) or None (another runner: no layer reads
    its log)."""
    with serial_imports:
        from swebench.harness.log_parsers import PARSER_REGISTRY
        from swebench.harness.log_parsers import python as py

    fn = PARSER_REGISTRY.get(name)
    pytest_family = {py.parse_log_pytest, py.parse_log_pytest_options, py.parse_log_pytest_v2,
                     py.parse_log_matplotlib, py.parse_log_seaborn}
    runner = ("pytest" if fn in pytest_family else "unittest" if fn is py.parse_log_django
              else "sympy" if fn is py.parse_log_sympy else None)
    return runner, fn is py.parse_log_pytest_options
