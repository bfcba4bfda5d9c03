"""The chaos suite's imports and its final report. The uninterrupted run each scenario is
checked against is ``scenario_reference`` (tests/conftest.py), shared with the loop tests.

``CHAOS_SEEDS`` picks the seeds (``3`` or ``1-20`` or ``1,5,9``; default ``1``),
``CHAOS_ROUNDS`` the rounds per run (default 2; `make chaos` uses 3), ``CHAOS_SCENARIOS`` a
comma list of scenarios (default all). ``make chaos`` runs many seeds; the report is printed at
the end of the session.
"""

from __future__ import annotations

import sys
from pathlib import Path

import ray.cloudpickle

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "cluster"), str(HERE)]

import chaos_lib  # noqa: E402
import loop_helpers  # noqa: E402

ray.cloudpickle.register_pickle_by_value(loop_helpers)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if chaos_lib.REPORT.scenarios:
        terminalreporter.section("chaos report")
        for line in chaos_lib.REPORT.lines():
            terminalreporter.write_line(line)
