"""flask 2.3.3's real suite, end to end (slow, Docker): reproducible build, graded by swe validate.

Builds three instances twice from the same inputs (the session's ``flask_set`` first; sdist and
wheels from the cache folder pip fills on the first build, ``RATCHET_REALCODE_CACHE`` or the
session's tmp), the project image removed in between so the second build really builds: equal
records and image content digests.
Then ``ratchet swe validate`` from a shell grades them on the real Grader: every gold patch
resolves and the no-op patch does not.
"""

from __future__ import annotations

import json

import pytest

from shared_flask import FLASK_COUNT as COUNT
from shared_flask import build_flask
from swe_validate_cli import validate

pytestmark = [pytest.mark.slow, pytest.mark.docker]


def test_flask_builds_reproducibly_and_grades_as_swebench_says(tmp_path, docker_session, flask_set):
    first = flask_set.recipe  # the session's build (conftest.py), which later tests grade on
    docker_session.images.remove(first["image"]["tag"], force=True)
    second = build_flask(tmp_path / "b", flask_set.cache)  # the same tag: conftest removes it
    assert flask_set.dataset.read_bytes() == (tmp_path / "b" / "instances.jsonl").read_bytes()
    assert first["image"]["content_digest"] == second["image"]["content_digest"]
    assert first == second  # inputs' digests, tests left out, every candidate's outcome
    assert len(first["instances"]) == COUNT
    rows = [json.loads(line) for line in flask_set.dataset.open()]
    for row in rows:  # the FAIL_TO_PASS tests are not in the agent's tree
        for test_file in {t.split("::")[0] for t in json.loads(row["FAIL_TO_PASS"])}:
            assert f"diff --git a/{test_file} b/{test_file}\nnew file mode 100644\n" in \
                row["test_patch"]
    code, stdout, text = validate(flask_set.dataset, tmp_path, gold=flask_set.gold)
    assert code == 0, text[-4000:]
    assert f"{COUNT}/{COUNT} instances valid" in stdout, text[-4000:]
