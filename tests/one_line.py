"""A refusal seen from outside the process that made it (a job, a command under bubblewrap): a
non-zero exit, no traceback, and the cause on ONE ``Error:`` line holding the words the test
names. ``tests/cli/refusals.py`` is the same check for a command run in-process.
``ratchet_denied`` runs ``ratchet`` where the mode bits bind: root reads whatever they say, so
as root it runs without the capabilities that let it (``AS_OWNER_ONLY``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AS_OWNER_ONLY = (["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
                 if os.geteuid() == 0 else [])


def ratchet_denied(*args: str) -> subprocess.CompletedProcess:
    """``ratchet ARGS`` in a process the mode bits bind, from the repository root."""
    return subprocess.run([*AS_OWNER_ONLY, sys.executable, "-m", "ratchet_ray.cli", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def process_error_line(done: subprocess.CompletedProcess, *words: str) -> str:
    """The one ``Error:`` line of the finished process ``done`` (asserting the refusal's shape
    and that it holds every one of ``words``)."""
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in output, output[-3000:]
    errors = [line for line in output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, output[-3000:]
    for word in words:
        assert word in errors[0], f"{word!r} not in {errors[0]!r}"
    return errors[0]
