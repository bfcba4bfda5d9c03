"""pytest 7.4.4 graded by its own test suite, end to end (``realcode_large``: never in ``make test``
or CI).

Builds three instances of pytest itself (its ``testing/`` modules of the recipe, run by the
pytest under test from ``/testbed/src``; graded by swebench's ``parse_log_pytest``), checks each
FAIL_TO_PASS module left the agent's tree and comes back with the test patch, that the eval
script runs it with the recipe's deselections, then grades them with ``ratchet swe validate``
from a shell: every gold patch resolves and the no-op patch does not. Run it by hand
(docs/swebench.md, "Real projects"):

    CI=true .venv/bin/python -m pytest -q -m realcode_large tests/suites/swebench/realcode/test_realcode_pytest.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ratchet_ray.suites.swebench.realcode.projects import test_file as file_of
from swe_validate_cli import assert_all_valid, built_set

pytestmark = [pytest.mark.realcode_large, pytest.mark.slow, pytest.mark.docker]
COUNT = 3


def test_pytest_instances_build_and_grade_as_swebench_says(tmp_path, docker_session,
                                                           tmp_path_factory):
    cache = Path(os.environ.get("RATCHET_REALCODE_CACHE") or tmp_path_factory.mktemp("cache"))
    with built_set("pytest==7.4.4", tmp_path, cache, COUNT, 16) as (project, recipe, rows):
        assert len(rows) == COUNT and recipe["graded_tests"] > 300
        assert not any(t.startswith(d) for t in recipe["left_out"]
                       for d, _why in project.deselected)  # deselected: never run, never graded
        for row in rows:
            assert row["log_parser"] == "parse_log_pytest" and row["repo"] == "pytest-dev/pytest"
            files = {file_of(project, t) for t in json.loads(row["FAIL_TO_PASS"])}
            command = row["eval_script"].split("python3 -m pytest -rA -p no:cacheprovider ")[1]
            for path in files:  # the module is back only with the test patch ...
                assert f"diff --git a/{path} b/{path}\nnew file mode 100644\n" in row["test_patch"]
                assert path in command.split()  # ... and run
            assert command.count("--deselect") == len(project.deselected)
            assert row["realcode"]["file"] in project.source_dirs
        assert_all_valid(tmp_path, COUNT)
