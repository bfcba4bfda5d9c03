"""The graded test files as the test patch leaves them, computed on the host.

The canaries of earlier versions (tests planted *beside* the graded ones) are gone: a simple
rule told them from the tests they copied, and they rarely copied the lone FAIL_TO_PASS test.
A resolution is now proven by canary *sessions* (``differential``), each with one graded test
mutated in place (``mutants``); this module only gives them the text they start from.

Contracts:
- ``after_test_patch(texts, test_patch)`` the files' text after the test patch (host ``git
  apply``; None for a file it does not yield; bytes and line endings kept as they are).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path


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
