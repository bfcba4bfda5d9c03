"""make-instances end to end on Docker: the tiny project's bad inputs and flask's real suite.

The flask test builds flask 2.3.3's set twice from the same inputs (pip's downloads cached
under the session's folder), removing the project image in between: the records and the
image's content digest must be equal. Then the real Grader grades the instances: each gold
patch resolves, the no-op patch does not.
"""

from __future__ import annotations

import json

import pytest

from ratchet_ray.suites.swebench.realcode import RealcodeError, resolve_project
from ratchet_ray.suites.swebench.realcode.build import Request, make_instances
from ratchet_ray.suites.swebench.realcode.image import IMAGE_REPO
from tiny_project import PROJECT, write_tree

pytestmark = pytest.mark.docker


def _images(client, project: str) -> set[str]:
    return {t for image in client.images.list(name=f"{IMAGE_REPO}/{project}") for t in image.tags}


@pytest.fixture
def docker_client(docker_session):
    """The session client; fails the test if a container of a project image is left behind
    (other suites' containers on a shared daemon are theirs to check)."""
    yield docker_session
    left = [c["Id"][:12] for c in docker_session.api.containers(all=True)
            if str(c.get("Image", "")).startswith(f"{IMAGE_REPO}/tinycalc")]
    assert not left, f"containers left behind: {left}"


def test_tests_that_need_the_network_end_the_build_in_one_line(tmp_path, docker_client):
    source = write_tree(tmp_path / "tinycalc", network=True)
    before = _images(docker_client, "tinycalc")
    with pytest.raises(RealcodeError) as caught:
        make_instances(Request(project=PROJECT, out=tmp_path / "set", cache=tmp_path / "cache",
                               source=source), note=lambda _: None)
    message = str(caught.value)
    assert "\n" not in message and "0 of 1 tests pass offline" in message
    assert "1 fail reaching the network" in message
    assert not (tmp_path / "set").exists() and not list(tmp_path.glob(".set.*"))
    assert _images(docker_client, "tinycalc") == before  # the image this build made is gone


def test_a_modifier_that_breaks_no_test_ends_the_build_in_one_line(tmp_path, docker_client):
    source = write_tree(tmp_path / "tinycalc")
    before = _images(docker_client, "tinycalc")
    with pytest.raises(RealcodeError) as caught:
        make_instances(Request(project=PROJECT, out=tmp_path / "set", cache=tmp_path / "cache",
                               source=source, modifiers=["func_pm_class_shuffle_funcs"]),
                       note=lambda _: None)
    assert "func_pm_class_shuffle_funcs yielded no bug that fails a graded test" in str(caught.value)
    assert not (tmp_path / "set").exists() and not list(tmp_path.glob(".set.*"))
    assert _images(docker_client, "tinycalc") == before


def test_the_tiny_project_builds_instances_the_grader_loads(tmp_path, docker_client):
    from ratchet_ray.suites.swebench.dataset import normalize_all

    source = write_tree(tmp_path / "tinycalc")
    recipe = make_instances(Request(project=PROJECT, out=tmp_path / "set",
                                    cache=tmp_path / "cache", source=source, count=1),
                            note=lambda _: None)
    try:
        rows = [json.loads(line) for line in (tmp_path / "set" / "instances.jsonl").open()]
        assert [r["instance_id"] for r in rows] == recipe["instances"] and len(rows) == 1
        loaded = normalize_all(rows, "tinycalc")
        assert all(i["FAIL_TO_PASS"] and i["log_parser"] == "parse_log_pytest" for i in loaded)
    finally:
        docker_client.images.remove(recipe["image"]["tag"], force=True)


SLOW_TEST = "import time\n\n\ndef test_slow():\n    time.sleep(120)\n"
KILLED_BUILD = """
import sys
from pathlib import Path
sys.path.insert(0, {here!r})
from tiny_project import PROJECT
from ratchet_ray.suites.swebench.realcode.build import Request, make_instances
make_instances(Request(project=PROJECT, out=Path({out!r}), cache=Path({cache!r}),
                       source=Path({source!r})), note=lambda _: None)
"""


def test_a_sigkilled_build_leaves_a_test_run_the_next_build_removes(tmp_path, docker_client):
    """SIGTERM cleans up in the build itself; SIGKILL cannot, so each test run is labelled with
    its owner process, `ratchet doctor` names it once the owner is gone, and the next build's
    reap removes it."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from ratchet_ray.suites.swebench.docker.container import OWNER_KEY, orphaned_containers

    source = write_tree(tmp_path / "tinycalc")
    (source / "tests" / "test_slow.py").write_text(SLOW_TEST)  # the clean run outlives the kill
    script = KILLED_BUILD.format(here=str(Path(__file__).parent), out=str(tmp_path / "set"),
                                 cache=str(tmp_path / "cache"), source=str(source))
    build = subprocess.Popen([sys.executable, "-c", script])
    tag = None
    try:
        deadline = time.monotonic() + 120
        while tag is None and time.monotonic() < deadline and build.poll() is None:
            running = [c for c in docker_client.containers.list(filters={"label": OWNER_KEY})
                       if c.labels[OWNER_KEY].endswith(f"/{build.pid}")]
            tag = running[0].image.tags[0] if running else None
            time.sleep(0.5)
        assert tag, f"no labelled test run of the build appeared (exit {build.poll()})"
    finally:
        os.kill(build.pid, signal.SIGKILL)
        build.wait()
    owner = f"/{build.pid}"
    left = [c for c in docker_client.containers.list(all=True, filters={"label": OWNER_KEY})
            if c.labels[OWNER_KEY].endswith(owner)]
    try:
        assert len(left) == 1 and left[0].name in orphaned_containers(docker_client)[0]
        with pytest.raises(RealcodeError):  # the next build: reaps first, then fails fast
            make_instances(Request(project=PROJECT, out=tmp_path / "next",
                                   cache=tmp_path / "cache",
                                   source=write_tree(tmp_path / "net", network=True)),
                           note=lambda _: None)
        assert not [c for c in docker_client.containers.list(all=True) if c.id == left[0].id]
    finally:
        for container in docker_client.containers.list(all=True, filters={"label": OWNER_KEY}):
            if container.labels[OWNER_KEY].endswith(owner):
                container.remove(force=True)
        for image in {tag} | _images(docker_client, "tinycalc"):
            docker_client.images.remove(image, force=True)
