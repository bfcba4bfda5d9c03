"""django 4.2.16's own runner, end to end (``realcode_large``: never in ``make test`` or CI).

Builds three instances of django (``tests/runtests.py``, sqlite, one process; graded by
swebench's ``parse_log_django``), checks each FAIL_TO_PASS test's module left the agent's tree and
comes back with the test patch, that the eval script runs django's dotted labels, then grades
them with ``ratchet swe validate`` from a shell: every gold patch resolves and the no-op patch
does not. Run it by hand (docs/swebench.md, "Real projects"):

    CI=true .venv/bin/python -m pytest -q -m realcode_large tests/suites/swebench/realcode
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


def test_django_instances_build_and_grade_as_swebench_says(tmp_path, docker_session,
                                                           tmp_path_factory):
    cache = Path(os.environ.get("RATCHET_REALCODE_CACHE") or tmp_path_factory.mktemp("cache"))
    with built_set("django==4.2.16", tmp_path, cache, COUNT, 15) as (project, recipe, rows):
        assert len(rows) == COUNT and recipe["graded_tests"] > 100
        for row in rows:
            assert row["log_parser"] == "parse_log_django" and row["repo"] == "django/django"
            files = {file_of(project, t) for t in json.loads(row["FAIL_TO_PASS"])}
            for path in files:  # the module is back only with the test patch ...
                assert f"diff --git a/{path} b/{path}\nnew file mode 100644\n" in row["test_patch"]
                label = path[len("tests/"):-len(".py")].replace("/", ".")
                assert label in row["eval_script"].split(" --parallel 1 ")[1]  # ... and run
            assert "--settings=test_sqlite --parallel 1" in row["eval_script"]
        assert_all_valid(tmp_path, COUNT)
