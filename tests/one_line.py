"""A refusal seen from outside the process that made it (a job, a command under bubblewrap): a
non-zero exit, no traceback, and the cause on ONE ``Error:`` line holding the words the test
names. ``tests/cli/refusals.py`` is the same check for a command run in-process."""

from __future__ import annotations

import subprocess


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
