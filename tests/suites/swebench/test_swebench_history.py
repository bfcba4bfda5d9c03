"""No future history (issue 21, item 4): on a local image whose repository holds the upstream fix
in a later commit (a branch, tags, packed refs, a remote-tracking ref, notes, a stash, reflogs,
FETCH_HEAD/ORIG_HEAD, a commit graph, a kept pack, a dangling commit, a loose blob), what every
agent and grader container starts from shows nothing of it; base_commit stays HEAD, the work tree
stays as the image had it, and grading still resolves the gold patch."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import time

import pytest

from fakes import ScriptedLLM
from ratchet_ray.suites.swebench.agent.solver import run_agent
from ratchet_ray.suites.swebench.docker.container import instance_container
from ratchet_ray.suites.swebench.dataset import DatasetError, normalize_instance, to_task
from ratchet_ray.suites.swebench.grader import SwebenchGrader
from ratchet_ray.suites.swebench.docker.history import HISTORY_LABEL, history_dockerfile, history_mark
from ratchet_ray.suites.swebench.docker.images import InstanceImages, image_name
from ratchet_ray.suites.swebench.docker.infra import InfraFailure

pytestmark = pytest.mark.docker

INSTANCE_ID = "ratchet__calc-future"
# Run in /testbed after the base commit: the upstream fix of calc-1 lands later, and the clone
# keeps it every way a real one can (the dates are after base_commit's 2024-01-01).
FUTURE = r"""
set -euo pipefail
export GIT_AUTHOR_NAME=ratchet GIT_AUTHOR_EMAIL=ratchet@localhost
export GIT_COMMITTER_NAME=ratchet GIT_COMMITTER_EMAIL=ratchet@localhost
later() { GIT_AUTHOR_DATE=2024-06-01T00:00:00Z GIT_COMMITTER_DATE=2024-06-01T00:00:00Z "$@"; }
b=$(git symbolic-ref --short HEAD)
git tag v0.1
later git tag -a v0.1-late -m "tagged at base, half a year after it"
later git checkout -q -b fix-add
sed -i 's/return a - b/return a + b/' calc/ops.py
later git commit -q -am "Fix add: it subtracted"
later git tag v0.2
later git tag -a v0.2-annotated -m "release with the fix"
later git notes add -m "fixes add"
git remote add origin https://example.invalid/calc.git
git update-ref refs/remotes/origin/main HEAD
later git commit -q --allow-empty -m "Dangling: only in the reflog"
git reset -q --hard HEAD~1
git checkout -q "$b"
git fetch -q . fix-add
git reset -q --hard fix-add
git reset -q --hard "$b@{1}"
git commit-graph write --reachable
git pack-refs --all
git repack -a -d -q
for p in .git/objects/pack/*.pack; do touch "${p%.pack}.keep"; done
echo "secret fix notes" | git hash-object -w --stdin >/dev/null
echo "work in progress" >> README.md
later git stash -q
echo "notes" > notes.txt
mkdir -p build && echo obj > build/out.o && echo "build/" >> .git/info/exclude
echo "local change" >> README.md
test "$(git rev-parse HEAD)" = "$(git rev-parse "$b@{2}")"
"""
SECRET_BLOB = hashlib.sha1(b"blob 17\0secret fix notes\n").hexdigest()
# What an agent can run to look for the fix; none may show any object after base_commit.
PROBES = ["git log --all --format=%H", "git log --all --reflog --format=%H", "git tag",
          "git branch -a", "git reflog", "git stash list", "git notes list",
          "git remote -v", "git for-each-ref", "git fsck --lost-found",
          "git fsck --unreachable --dangling --no-reflogs",
          "git cat-file --batch-all-objects --batch-check",
          "cat .git/FETCH_HEAD .git/ORIG_HEAD .git/packed-refs 2>/dev/null; true",
          "git rev-parse --verify -q fix-add v0.2 origin/main; true"]
WORK_TREE = "git status --porcelain --ignored; git ls-files -s; cat README.md notes.txt build/out.o"


@pytest.fixture(scope="module")
def future_instance(instances) -> dict:
    """calc-1 with the fix in the image's later history (its own image name)."""
    calc1 = next(i for i in instances if i["instance_id"] == "ratchet__calc-1")
    return normalize_instance({**calc1, "instance_id": INSTANCE_ID,
                               "dockerfile": calc1["dockerfile"] + "RUN "
                               + json.dumps(["/bin/bash", "-c", FUTURE]) + "\n"})


@pytest.fixture
def raw_image(docker_client, future_instance, local_settings):
    """The image as a registry would serve it: tagged with the instance's name, history intact;
    removed (with the image stripped from it) afterwards."""
    name = image_name(INSTANCE_ID, local_settings)
    _remove(docker_client, name)
    for event in docker_client.api.build(fileobj=io.BytesIO(future_instance["dockerfile"].encode()),
                                         tag=name, rm=True, forcerm=True, decode=True,
                                         network_mode="none"):
        assert "error" not in event, event
    assert HISTORY_LABEL not in (docker_client.images.get(name).labels or {})
    yield name
    _remove(docker_client, name)


def _remove(client, name: str) -> None:
    import docker.errors

    try:
        client.images.remove(name, force=True)  # its untagged parent (the raw image) goes too
    except docker.errors.ImageNotFound:
        pass


def _run(box, command: str) -> str:
    result = box.run(command, 120)
    assert result.exit_code == 0, f"{command}: {result.output}"
    return result.stdout


def _git_dir_bytes(box) -> dict[str, bytes]:
    """Every regular file under /testbed/.git, by path."""
    stream, _ = box.container.get_archive("/testbed/.git")
    files = {}
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
        for member in tar:
            handle = tar.extractfile(member) if member.isreg() else None
            if handle is not None:
                files[member.name] = handle.read()
    return files


def _future_objects(box, base: str) -> set[str]:
    """Objects of the raw image's repository that base_commit's history does not reach."""
    every = set(_run(box, "git cat-file --batch-all-objects --batch-check='%(objectname)'").split())
    reached = {line.split()[0] for line in _run(box, f"git rev-list --objects {base}").splitlines()}
    return every - reached


def test_no_container_sees_any_object_after_base_commit(docker_client, future_instance, raw_image,
                                                        local_settings):
    base = future_instance["base_commit"]
    with instance_container(docker_client, raw_image, INSTANCE_ID, local_settings) as box:
        branch = _run(box, "git symbolic-ref HEAD").strip()
        fix, fix_blob = _run(box, "git rev-parse fix-add fix-add:calc/ops.py").split()
        future = _future_objects(box, base)
        before = _run(box, WORK_TREE)
        exposed = _run(box, "; ".join(PROBES))
    # The fixture does hold the future, every way it claims to.
    assert {fix, fix_blob, SECRET_BLOB} <= future and len(future) >= 12, future
    assert exposed.count(fix) >= 6 and "stash@{0}" in exposed and "v0.2" in exposed

    logs: list[str] = []
    images = InstanceImages(docker_client, local_settings)
    started = time.monotonic()
    assert images.ensure(future_instance, logs.append) == raw_image
    took = time.monotonic() - started
    print(f"history removal for {INSTANCE_ID}: {took:.2f}s once per image (0 per container)")
    assert any("history after base_commit removed" in line for line in logs), logs
    assert any(line.startswith("ratchet-history: /testbed at ") for line in logs), logs
    assert not any("RUN" in line for line in logs), "the log names results, not the script"
    assert images.ready(raw_image, future_instance)
    assert docker_client.images.get(raw_image).labels[HISTORY_LABEL] == history_mark(base)

    with instance_container(docker_client, raw_image, INSTANCE_ID, local_settings) as box:
        assert _run(box, "git rev-parse HEAD").strip() == base
        assert _run(box, "git symbolic-ref HEAD").strip() == branch
        assert _run(box, WORK_TREE) == before, "the work tree changed"
        assert box.become_untrusted(whole_repo=True)  # what the agent's commands run as
        seen = _run(box, "; ".join(PROBES))
        assert _run(box, "git log --all --format=%H").split() == [base]
        assert _run(box, "git tag").split() == ["v0.1"], "tags of base's history stay"
        assert _run(box, "git branch -a --format='%(refname)'").split() == [branch]
        for command in ("git reflog", "git stash list", "git notes list", "git remote",
                        "git fsck --unreachable --dangling --no-reflogs --lost-found"):
            assert _run(box, command).strip() == "", command
        left = set(_run(box, "git cat-file --batch-all-objects --batch-check='%(objectname)'")
                   .split())
        assert left == {line.split()[0] for line in
                        _run(box, f"git rev-list --objects {base}").splitlines()}
        files = _git_dir_bytes(box)
        # The eval script's reset of the test files needs base_commit's objects.
        _run(box, f"git checkout {base} -- tests/test_ops.py && git diff --quiet {base} -- tests")
    for sha in future:
        assert sha not in seen, f"{sha} visible to the agent"
        hits = [path for path, data in files.items()
                if sha.encode() in data or bytes.fromhex(sha) in data]
        assert not hits, f"object {sha} of the future is still named in {hits}"
    assert not any(name in path for path in files for name in
                   ("FETCH_HEAD", "ORIG_HEAD", "packed-refs", "logs/", ".keep", "commit-graph"))

    again: list[str] = []
    assert images.ensure(future_instance, again.append) == raw_image and again == [], again


def _run_once(client, image, settings, command: str) -> str:
    with instance_container(client, image, INSTANCE_ID, settings) as box:
        return _run(box, command)


def test_grading_and_the_agent_use_the_stripped_image(docker_client, future_instance, raw_image,
                                                      gold, local_settings, limits, tmp_path):
    fix = _run_once(docker_client, raw_image, local_settings, "git rev-parse fix-add").strip()
    task = to_task(future_instance)
    # The grader proves a resolution against the gold patch, read from the dataset it is given.
    dataset = tmp_path / "future.jsonl"
    dataset.write_text(json.dumps(future_instance) + "\n")
    settings = local_settings.model_copy(update={"dataset_name": str(dataset)})
    grader = SwebenchGrader(settings, limits, tmp_path, client=docker_client)
    resolved = grader.grade(task, gold["ratchet__calc-1"])  # strips the image on first use
    assert resolved.passed, resolved.trace
    assert InstanceImages(docker_client, local_settings).ready(raw_image, future_instance)
    wrong = grader.grade(task, gold["ratchet__calc-2"])
    assert (wrong.passed, wrong.exit_status) == (False, "unresolved"), wrong.trace

    commands = ["git log --all --oneline", "git tag; git branch -a; git stash list; git reflog",
                "git cat-file --batch-all-objects --batch-check", "git fsck --lost-found"]
    replies = [json.dumps({"thought": "look", "command": c, "done": False}) for c in commands]
    llm = ScriptedLLM(lambda messages, schema: replies.pop(0) if replies else
                      json.dumps({"thought": "done", "command": "", "done": True}))
    run = run_agent(llm, task, None, local_settings, client=docker_client)
    assert run.exit_status == "submitted" and len(run.steps) == len(commands)
    assert all(step.exit_code == 0 for step in run.steps), [s.observation for s in run.steps]
    assert fix[:7] not in "".join(step.observation for step in run.steps)
    assert future_instance["base_commit"][:7] in run.steps[0].observation


def test_an_image_not_at_base_commit_is_an_infrastructure_failure(docker_client, future_instance,
                                                                  raw_image, gold, local_settings,
                                                                  limits, tmp_path):
    fix = _run_once(docker_client, raw_image, local_settings, "git rev-parse fix-add").strip()
    moved = {**future_instance, "base_commit": fix}
    with pytest.raises(InfraFailure) as caught:
        InstanceImages(docker_client, local_settings).ensure(moved, lambda _m: None)
    assert caught.value.reason == "image_build_failed"
    assert f"not base_commit {fix}" in str(caught.value), caught.value
    result = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client).grade(
        to_task(moved), gold["ratchet__calc-1"])
    assert (result.passed, result.infra_failure, result.exit_status) == (
        False, True, "image_build_failed"), result.trace


def test_a_base_commit_that_is_not_a_commit_id_is_refused(future_instance):
    with pytest.raises(DatasetError, match="base_commit 'main' is not a hex commit id"):
        normalize_instance({**future_instance, "base_commit": "main"})


def test_an_image_with_another_user_is_stripped_as_root_and_keeps_its_user(
        docker_client, instances, local_settings):
    calc1 = next(i for i in instances if i["instance_id"] == "ratchet__calc-1")
    instance = normalize_instance({**calc1, "instance_id": "ratchet__calc-user",
                                   "dockerfile": calc1["dockerfile"] + "USER 65534\n"})
    name = image_name(instance["instance_id"], local_settings)
    _remove(docker_client, name)
    try:
        images = InstanceImages(docker_client, local_settings)
        assert images.ensure(instance, lambda _m: None) == name
        image = docker_client.images.get(name)
        assert image.attrs["Config"]["User"] == "65534"
        assert image.labels[HISTORY_LABEL] == history_mark(instance["base_commit"])
        assert _run_once(docker_client, name, local_settings, "git log --all --format=%H").split() \
            == [instance["base_commit"]]
    finally:
        _remove(docker_client, name)


def test_the_history_dockerfile_runs_as_root_and_marks_the_image():
    base = "8779d3c43ebd855ccc9cc87b3813146ac64d96ff"
    text = history_dockerfile("img:1", base, "app", "/testbed")
    lines = text.splitlines()
    assert lines[0] == "FROM img:1" and lines[1] == "USER root" and lines[3] == "USER app"
    assert json.loads(lines[2].removeprefix("RUN "))[:2] == ["/bin/bash", "-c"]
    assert lines[4] == f'LABEL {HISTORY_LABEL}="{history_mark(base)}"'
    assert "USER" not in history_dockerfile("img:1", base, "", "/testbed")
    with pytest.raises(ValueError, match="not a hex commit id"):
        history_dockerfile("img:1", "HEAD; rm -rf /", None, "/testbed")
