"""Fixtures of the chaos suite: the reference run, the scenario seeds and the final report.

``CHAOS_SEEDS`` picks the seeds (``3`` or ``1-20`` or ``1,5,9``; default ``1``),
``CHAOS_ROUNDS`` the rounds per run (default 2; `make chaos` uses 3), ``CHAOS_SCENARIOS`` a comma list of scenarios
(default all). ``make chaos`` runs many seeds; the report is printed at the end of the session.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import ray.cloudpickle

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "cluster"), str(HERE)]

import chaos_lib  # noqa: E402
import loop_helpers  # noqa: E402

ray.cloudpickle.register_pickle_by_value(loop_helpers)


@pytest.fixture(scope="session")
def reference_runs(tmp_path_factory):
    """The uninterrupted run every scenario is compared with (made on first use)."""
    return {"root": tmp_path_factory.mktemp("chaos-reference"), "run": None}


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if chaos_lib.REPORT.scenarios:
        terminalreporter.section("chaos report")
        for line in chaos_lib.REPORT.lines():
            terminalreporter.write_line(line)
