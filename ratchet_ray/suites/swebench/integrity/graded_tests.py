"""The graded tests of an instance: where they live, and their text after the test patch (what
the session's layers, ``session_layers``, and the differential's mutants, ``proof.mutants``,
start from).

Contracts:
- ``locate(instance, runner, words)`` -> ``{graded test id: (file, qualname)}`` for the tests a
  mutant can be made of: pytest's ``file::name`` / ``file::Class::name`` (not parametrised),
  django's ``name (module.Class[.name])`` (file ``tests/<module path>.py``), sympy's bare
  ``test_x`` (file: one of the ``.py`` files the command names, settled by ``settle``);
  ``qualname`` is ``name`` or ``Class::name``.
- ``settle(located, texts)``: each sympy test placed in the one file whose text defines it (one
  defined in none, or in several, is dropped).
- ``after_test_patch(texts, test_patch)``: the files' text after the test patch (host ``git
  apply``; None for a file it does not yield; bytes and line endings kept).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ratchet_ray.suites.swebench.integrity.harness_paths import repo_relative_file
from ratchet_ray.suites.swebench.integrity.log_canaries import unittest_name

_TEST_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(test\w*)\s*\(", re.M)


def locate(instance: dict[str, Any], runner: str | None,
           words: list[str]) -> dict[str, tuple[str, str]]:
    tests = [*instance.get("FAIL_TO_PASS", []), *instance.get("PASS_TO_PASS", [])]
    found: dict[str, tuple[str, str]] = {}
    if runner == "sympy":
        files = sorted({f for w in words if w.endswith(".py") and (f := repo_relative_file(w))})
        for test in tests:
            if re.fullmatch(r"test_\w+", test):
                found[test] = ("|".join(files), test)  # settled by ``settle``
        return found
    for test in tests:
        if runner == "unittest":
            parsed = unittest_name(test)
            if parsed is None:
                continue
            module, cls, method = parsed
            path = repo_relative_file("tests/" + module.replace(".", "/") + ".py")
            if path:
                found[test] = (path, f"{cls}::{method}")
        elif runner == "pytest":
            parts = test.split("::")
            path = repo_relative_file(parts[0])
            if (path and path.endswith(".py") and len(parts) in (2, 3)
                    and "[" not in parts[-1]):
                found[test] = (path, "::".join(parts[1:]))
    return found


def files_of(located: dict[str, tuple[str, str]]) -> list[str]:
    """Every file a located test may live in (a sympy test's candidates included)."""
    return sorted({f for file, _ in located.values() for f in file.split("|") if f})


def settle(located: dict[str, tuple[str, str]],
           texts: dict[str, str | None]) -> dict[str, tuple[str, str]]:
    settled = {}
    for test, (file, qual) in located.items():
        if "|" not in file and file:
            settled[test] = (file, qual)
            continue
        homes = [f for f in file.split("|") if f and texts.get(f)
                 and qual in _TEST_DEF.findall(texts[f] or "")]
        if len(homes) == 1:
            settled[test] = (homes[0], qual)
    return settled


def after_test_patch(texts: dict[str, str | None], test_patch: str) -> dict[str, str | None]:
    with tempfile.TemporaryDirectory(prefix="ratchet-tests-") as tmp:
        for rel, text in texts.items():
            if text is not None:
                (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
                (Path(tmp) / rel).write_bytes(text.encode())
        if test_patch.strip():
            applied = subprocess.run(
                ["git", "apply", "--whitespace=nowarn", *[f"--include={r}" for r in texts], "-"],
                input=test_patch, text=True, cwd=tmp, capture_output=True, timeout=60)
            if applied.returncode != 0:
                return {rel: None for rel in texts}
        return {rel: (Path(tmp) / rel).read_bytes().decode(errors="replace")
                if (Path(tmp) / rel).is_file() else None for rel in texts}
