"""sympy 1.12's own runner, end to end (``realcode_large``: never in ``make test`` or CI).

Builds three instances of sympy (``sympy.test`` as ``bin/test -C --verbose`` calls it; graded by
swebench's ``parse_log_sympy``, whose ids are bare function names), checks each FAIL_TO_PASS
test's file left the agent's tree and comes back with the test patch, that the eval script runs
that file, then grades them with ``ratchet swe validate`` from a shell: every gold patch
resolves and the no-op patch does not. Run it by hand (docs/swebench.md, "Real projects"):

    CI=true .venv/bin/python -m pytest -q -m realcode_large tests/suites/swebench/realcode
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from swe_validate_cli import assert_all_valid, built_set

pytestmark = [pytest.mark.realcode_large, pytest.mark.slow, pytest.mark.docker]
COUNT = 3


def test_sympy_instances_build_and_grade_as_swebench_says(tmp_path, docker_session,
                                                          tmp_path_factory):
    cache = Path(os.environ.get("RATCHET_REALCODE_CACHE") or tmp_path_factory.mktemp("cache"))
    with built_set("sympy==1.12", tmp_path, cache, COUNT, 15) as (project, recipe, rows):
        assert len(rows) == COUNT and recipe["graded_tests"] > 200
        assert "test_is_palindromic" in recipe["left_out"]  # in two selected files
        for row in rows:
            assert row["log_parser"] == "parse_log_sympy" and row["repo"] == "sympy/sympy"
            f2p = json.loads(row["FAIL_TO_PASS"])
            assert f2p and all(t.startswith("test_") and "." not in t for t in f2p)
            # Each test's file is back only with the test patch (git's "new file") ...
            added = re.findall(r"^diff --git a/(\S+) b/\1\nnew file mode 100644\n",
                               row["test_patch"], re.MULTILINE)
            assert added and set(added) <= set(project.test_dirs), row["instance_id"]
            assert all(f"\n+def {t}(" in row["test_patch"] for t in f2p), row["instance_id"]
            for path in added:  # ... and run
                assert f" {path}" in row["eval_script"].split("verbose=True))'")[1]
            assert "sympy.test(*sys.argv[1:], verbose=True)" in row["eval_script"]
            assert row["realcode"]["file"] in project.source_dirs
        assert_all_valid(tmp_path, COUNT)
