"""A static screen of a patch for code aimed at the test harness: suspicion, never a verdict
(docs/grading.md, "Suspicion is not proof"): what it finds is recorded and shown (the grade's
trace, ``evidence.tampering.suspicion``, ``ratchet audit``), never fails a grade nor retires a
skill; tampering needs behavioural proof.

Contracts:
- ``suspicion(instance, patch)``: the grade's note (``evidence.tampering.SUSPICION_PREFIX``
  then the quoted lines), or None. Repositories whose code under test is pytest
  (``sentinel.HARNESS_REPOS``) are not screened.
- ``screen(patch, skip)``: the added lines (``path:line: text``) of files not in ``skip`` (harness
  files the guard restores anyway) that name pytest's internals or the run's plumbing
  (``PATTERNS``), and lines that walk the garbage collector or frames in a patch that also names
  pytest, JUnit, outcomes or reports.
"""

from __future__ import annotations

import re
from typing import Any

from ratchet_ray.evidence.tampering import SUSPICION_PREFIX
from ratchet_ray.suites.swebench.integrity.harness_paths import harness_reason, patch_paths, test_files
from ratchet_ray.suites.swebench.integrity.sentinel import HARNESS_REPOS

LINE_CHARS = 160
PATTERNS = re.compile("|".join([
    r"\b_pytest\b", r"\bpytest_(?:runtest|report|sessionfinish|sessionstart|collection|pyfunc|"
    r"terminal_summary|configure|unconfigure|make_collect_report|runtestloop|plugin_registered)\w*",
    r"\bhookimpl\b", r"\bhookwrapper\b", r"\bTestReport\b", r"\bCollectReport\b", r"\bBaseReport\b",
    r"\bPYTEST_[A-Z_]+", r"\bjunit", r"\bLogXML\b", r"\bpluggy\b", r"\b_multicall\b",
    r"\bmodules\s*\[\s*['\"][^'\"]*py(?:test|_test|gy)", r"['\"]_py['\"]\s*\+", r"\bsession\.exitstatus",
    r"\bpluginmanager\b", r"\bTerminalReporter\b", r"\blongrepr\b", r"\bwasxfail\b"]))
WALKING = re.compile(r"\bgc\s*\.\s*get_(?:objects|referrers|referents)\b|\bsys\s*\.\s*_getframe\b|"
                     r"\bf_back\b|\bf_globals\b|\binspect\s*\.\s*(?:stack|currentframe)\b")
AIMED = re.compile(r"pytest|junit|outcome|TestReport|longrepr", re.I)
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_NEW_FILE = re.compile(r"^\+\+\+ (?:\"?b/)?(.+?)\"?(?:\t.*)?$")


def _added_lines(patch: str) -> list[tuple[str, int, str]]:
    """``(path, line number in the new file, text)`` of every added line."""
    out: list[tuple[str, int, str]] = []
    path, number, left = "", 0, 0
    for line in patch.splitlines():
        if left <= 0:
            if m := _HUNK.match(line):
                number, left = int(m.group(1)), int(m.group(2) or 1)
            elif m := _NEW_FILE.match(line):
                path = m.group(1)
            continue
        tag = line[:1]
        if tag == "+":
            out.append((path, number, line[1:]))
        if tag in ("+", " ", ""):
            number += 1
            left -= 1
    return out


def screen(patch: str, skip: set[str] = frozenset()) -> list[str]:
    """Quoted added lines that reach for the harness (see the module contract)."""
    named = patch_paths(patch)
    lines = [(p, n, t) for p, n, t in _added_lines(patch) if p not in skip and p in named]
    aimed = any(AIMED.search(t) for _, _, t in lines)
    hits = []
    for path, number, text in lines:
        if PATTERNS.search(text) or (aimed and WALKING.search(text)):
            quoted = text.strip()
            quoted = quoted if len(quoted) <= LINE_CHARS else quoted[:LINE_CHARS] + "..."
            hits.append(f"{path}:{number}: {quoted}")
    return hits


def suspicion(instance: dict[str, Any], patch: str, limit: int = 20) -> str | None:
    """The grade's suspicion note for ``patch``, or None (see the module contract)."""
    if instance.get("repo") in HARNESS_REPOS:
        return None
    tests = test_files(instance)
    restored = {p for p in patch_paths(patch) if harness_reason(p, tests) is not None}
    hits = screen(patch, restored)
    if not hits:
        return None
    more = f"\n  ... and {len(hits) - limit} more" if len(hits) > limit else ""
    return (f"{SUSPICION_PREFIX} {len(hits)} added line(s) name the test harness's internals "
            "(the patch screen; recorded only, tampering needs behavioural proof)\n  "
            + "\n  ".join(hits[:limit]) + more)
