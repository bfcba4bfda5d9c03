"""What the grader reads from the runners whose verdict is in their log alone: django's
``runtests.py`` (unittest's verbose lines) and sympy's ``bin/test``.

Neither writes a JUnit report and no pytest plugin runs in them. Their resolutions are proven
like pytest's, by canary sessions with a graded test mutated in place (``differential``,
``mutants``: django's ``self.assertEqual(x, 5)`` becomes ``self.assertEqual(x, 7)``, sympy's
``assert f() == 5`` likewise); this module names their tests and checks their log.

A unittest log name is ``name (module.Class)`` or, Python 3.11+, ``name (module.Class.name)``;
``contradictions`` reads both spellings.
"""

from __future__ import annotations

import re

from ratchet_ray.suites.swebench.integrity.verdict import PASSING

RUNNERS = ("unittest", "sympy")
# ``name (module.Class)``, or ``name (module.Class.name)`` (Python 3.11+)
_UNITTEST_NAME = re.compile(r"^(\w+) \(([\w.]+)\)$")


def unittest_name(name: str) -> tuple[str, str, str] | None:
    """``(module, class, method)`` of a unittest log name, or None (e.g. a docstring line)."""
    m = _UNITTEST_NAME.match(name.strip())
    if m is None:
        return None
    method, dotted = m.groups()
    parts = dotted.split(".")
    if parts[-1] == method and len(parts) >= 3:
        parts = parts[:-1]
    if len(parts) < 2:
        return None
    return ".".join(parts[:-1]), parts[-1], method


_FAILED_LINES = {
    # ``name ... FAIL``, and the ``FAIL: name (module.Class...)`` header of its traceback
    "unittest": re.compile(r"^\s*(.*?) \.\.\. (?:FAIL|ERROR)\s*$|^(?:FAIL|ERROR): (\w+ \([\w.]+\))", re.M),
    # ``name F``, and the ``____ path.py:name ____`` header of its traceback
    "sympy": re.compile(r"^\s*(test_\w+) [FE]\s*$|^_+ \S*\.py:(test_\w+) _+\s*$", re.M),
}


def contradictions(runner: str, log: str, statuses: dict[str, str]) -> list[str]:
    """Tests the log reports failed (a result line or a traceback's header) that swebench's
    parse counts as passed: a later line overrode the failure (django's parser ends with a pass
    over the whole log that turns ``name ... <a known message>\nok`` into a pass; sympy's takes
    a test's last line). An honest run prints a test's result once."""
    names = set()
    for m in _FAILED_LINES[runner].finditer(log):
        name = (m.group(1) or m.group(2) or "").strip()
        names.add(name)
        if parsed := unittest_name(name):
            module, cls, method = parsed
            names.update({f"{method} ({module}.{cls})", f"{method} ({module}.{cls}.{method})"})
    return sorted(n for n in names if n and statuses.get(n) in PASSING)
