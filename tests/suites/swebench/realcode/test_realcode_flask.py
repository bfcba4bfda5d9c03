"""flask 2.3.3's real suite, end to end (slow, Docker): reproducible build, graded by swe validate.

Builds three instances twice from the same inputs (sdist and wheels from the cache folder pip
fills on the first build, ``RATCHET_REALCODE_CACHE`` or the session's tmp), the project image
removed in between so the second build really builds: equal records and image content digests.
Then ``ratchet swe validate`` from a shell grades them on the real Grader: every gold patch
resolves and the no-op patch does not.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ratchet_ray.suites.swebench.realcode import resolve_project
from ratchet_ray.suites.swebench.realcode.build import Request, make_instances
from swe_validate_cli import remove_instance_images, validate

pytestmark = [pytest.mark.slow, pytest.mark.docker]
COUNT = 3


def _build(out: Path, cache: Path) -> dict:
    return make_instances(Request(project=resolve_project("flask==2.3.3"), out=out, cache=cache,
                                  count=COUNT, max_candidates=15, jobs=2), note=print)


def test_flask_builds_reproducibly_and_grades_as_swebench_says(tmp_path, docker_session,
                                                                  tmp_path_factory):
    cache = Path(os.environ.get("RATCHET_REALCODE_CACHE") or tmp_path_factory.mktemp("cache"))
    first = _build(tmp_path / "a", cache)
    docker_session.images.remove(first["image"]["tag"], force=True)
    second = _build(tmp_path / "b", cache)
    try:
        assert (tmp_path / "a" / "instances.jsonl").read_bytes() == \
            (tmp_path / "b" / "instances.jsonl").read_bytes()
        assert first["image"]["content_digest"] == second["image"]["content_digest"]
        assert first == second  # inputs' digests, tests left out, every candidate's outcome
        assert len(first["instances"]) == COUNT
        rows = [json.loads(line) for line in (tmp_path / "a" / "instances.jsonl").open()]
        for row in rows:  # the FAIL_TO_PASS tests are not in the agent's tree
            for test_file in {t.split("::")[0] for t in json.loads(row["FAIL_TO_PASS"])}:
                assert f"diff --git a/{test_file} b/{test_file}\nnew file mode 100644\n" in \
                    row["test_patch"]
        code, stdout, text = validate(tmp_path / "a" / "instances.jsonl", tmp_path)
        assert code == 0, text[-4000:]
        assert f"{COUNT}/{COUNT} instances valid" in stdout, text[-4000:]
    finally:
        remove_instance_images(tmp_path / "a" / "instances.jsonl")
        docker_session.images.remove(second["image"]["tag"], force=True)
