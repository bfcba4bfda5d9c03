"""What every refused command of ``tests/cli`` must look like: a non-zero exit through click
(never an escaped exception), no traceback, the cause on one ``Error:`` line, and nothing
started: no run folder under the results dir, no Ray in this process."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ratchet_ray.cli import main


@pytest.fixture
def no_ray():
    """Ray is down before the test (a shared runtime of an earlier test is shut down: the
    ``ray_local`` fixture starts it again when needed) and must still be down after it."""
    import ray

    if ray.is_initialized():
        ray.shutdown()
    yield
    assert not ray.is_initialized(), "the refused command started Ray"


def ratchet(*args: str, **kwargs) -> Result:
    return CliRunner().invoke(main, list(args), prog_name="ratchet", **kwargs)


def error_line(result: Result) -> str:
    """The one ``Error:`` line of a refusal (asserting the refusal's shape on the way)."""
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)  # click's exit
    assert "Traceback" not in result.output, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    return errors[0]


def refused(result: Result, *words: str) -> str:
    """``error_line`` holding every one of ``words``; the whole message is that one line."""
    line = error_line(result)
    for word in words:
        assert word in line, f"{word!r} not in {line!r}"
    after = result.output.split(line, 1)[1]
    assert not after.strip(), f"more after the error line: {after!r}"
    return line


def no_run_folder(results: Path) -> None:
    """Nothing under ``results`` (the run's results_dir): no run dir was created."""
    made = sorted(p for p in results.rglob("*")) if results.exists() else []
    assert not made, f"created {made}"
