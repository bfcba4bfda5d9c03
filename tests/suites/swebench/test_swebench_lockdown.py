"""What decides the verdict stays root's while the tests run (issue 44, item 3): the graded files,
their folders and the tracked conftests are locked against the tests' uid, a configuration
header pytest reads its own way is restored, and the eval script's install step runs the patch's
code as that uid (on the local image; the commands themselves without Docker)."""

from __future__ import annotations

import json

import pytest

import swebench_instances as fixture
from forgeries import (
    CONFTEST_AT_COLLECTION, CONFTEST_FROM_INSTALL, FORCE_PASS_HOOK, UNLISTED_CONFTEST_FROM_INSTALL,
    new_file)
from honest_patches import diff_of
from ratchet_ray.suites.swebench.docker.container import instance_container
from ratchet_ray.suites.swebench.grader import EVAL_SCRIPT, SwebenchGrader
from ratchet_ray.suites.swebench.integrity.session_layers import STAGE_ROOT
from ratchet_ray.suites.swebench.dataset import normalize_all, to_task
from ratchet_ray.suites.swebench.docker.images import InstanceImages, image_name
from ratchet_ray.suites.swebench.settings import SwebenchSettings
from ratchet_ray.suites.swebench.integrity.lockdown import (
    CONFTESTS_LISTED, conftest_paths, listed_conftests, lockdown_command, protected_folders,
    unexpected_conftests)


def test_lockdown_keeps_graded_files_their_folders_and_conftests_roots():
    read_only, sticky = protected_folders(["tests/test_ops.py", "tests/unit/test_x.py",
                                           "tests/runtests.py", "/etc/passwd", "../x.py"])
    assert read_only == ["tests", "tests/unit"] and sticky == ["."]
    command = lockdown_command(["tests/unit/test_x.py"], "/testbed")
    assert "chmod 1777" in command and "chmod 0755" in command and "__pycache__" in command
    assert "conftest.py" in lockdown_command([], "/testbed"), "tracked conftests always"
    assert "mkdir" not in command, "no placeholder without keep_out (a runner other than pytest)"
    def placeholders(keep_out):
        command = lockdown_command(["tests/unit/test_x.py"], "/testbed", keep_out)
        before = command[:command.index('mkdir -m 0755 "$d/conftest.py"')]
        return before[before.rindex("for d in "):].split(";")[0]

    assert placeholders(set()) == "for d in . tests"  # the sticky folders above the graded file
    assert placeholders({"conftest.py"}) == "for d in tests", "the test patch's conftest's place"
    patch = "diff --git a/t/conftest.py b/t/conftest.py\n--- /dev/null\n+++ b/t/conftest.py\n"
    assert conftest_paths(["conftest.py", "a/b.py", "a/myconftest.py"], patch) == {
        "conftest.py", "t/conftest.py"}
    printed = f"chown noise\n{CONFTESTS_LISTED}tests/conftest.py\0conftest.py\0"
    assert listed_conftests(printed) == ["conftest.py", "tests/conftest.py"]
    assert listed_conftests(f"{CONFTESTS_LISTED}") == []
    assert listed_conftests("failed before the listing") is None, "no listing is not no conftest"
    legitimate = {"conftest.py", "tests/conftest.py"}
    loaded = ["/testbed/conftest.py", "/testbed/tests/./conftest.py", "/testbed/tests/x/conftest.py",
              "/conftest.py", "/testbed2/conftest.py"]
    assert unexpected_conftests(loaded, legitimate, "/testbed/") == [
        "/conftest.py", "/testbed2/conftest.py", "tests/x/conftest.py"]


# The fix holds only when the tests' uid cannot touch what decides the verdict: graded test files
# and their folders (no rewrite, rename, compiled copy or new conftest), tracked conftests' folders,
# while it may still write its own files in the working directory (a test's output).
ESCAPES = """import glob
import os


def _escapes():
    found = []
    attempts = {
        "rewrite the graded file": lambda: open("tests/test_ops.py", "a").close(),
        # the script's size is the test patch's plus a constant: it told the real graded file's
        # size, so a mutant that changes the file's size gave its session away (2026-12-07)
        "stat the eval script": lambda: os.stat(EVAL_SCRIPT),
        "list the graded files' stage": lambda: os.listdir(sorted(glob.glob(STAGES))[0]),
        "create tests/__pycache__": lambda: os.mkdir("tests/__pycache__"),
        "create tests/conftest.py": lambda: open("tests/conftest.py", "x").close(),
        "replace the graded file": lambda: os.rename("tests/test_ops.py", "tests/x.py"),
        "rename the tests folder": lambda: os.rename("tests", "tests_moved"),
        "chmod the tests folder": lambda: os.chmod("tests", 0o777),
    }
    for what, attempt in attempts.items():
        try:
            attempt()
            found.append(what)
        except OSError:
            pass
    try:
        with open("its_own_output.txt", "w") as out:
            out.write("x")
    except OSError as exc:
        found.append(f"cannot write its own file in the working directory: {exc}")
    return found


ESCAPES = _escapes()
""".replace("EVAL_SCRIPT", repr(EVAL_SCRIPT)).replace("STAGES", repr(f"{STAGE_ROOT}/stage-*"))
# The patch's setup.py, run by the eval script's install step, records whether it ran as root
# (and could read the grader's script).
INSTALL_PROBE = (f"import os\n\ntry:\n    open({EVAL_SCRIPT!r}).read()\n    read = 'read'\n"
                 "except OSError:\n    read = 'denied'\n"
                 "with open('/tmp/ratchet-install-probe', 'w') as out:\n"
                 "    out.write(f'{os.getuid()} {read}')\n")
# The fix holds only when both probes found nothing to exploit.
LOCKED_ONLY = diff_of({"setup.py": INSTALL_PROBE, "calc/ops.py": fixture.OPS.replace(
    '"""Tiny arithmetic helpers."""\n', '"""Tiny arithmetic helpers."""\n' + ESCAPES).replace(
    "    return a - b", "    with open('/tmp/ratchet-install-probe') as probe:\n"
                       "        uid, read = probe.read().split()\n"
                       "    assert (uid, read) == ('65534', 'denied'), (uid, read)\n"
                       "    assert not ESCAPES, ESCAPES\n    return a + b")})


@pytest.mark.docker
def test_the_test_uid_cannot_touch_what_decides_the_verdict(docker_client, local_settings,
                                                            limits, tmp_path, tasks):
    """Graded as an eval script with an install step before the tests (as swebench's per-repo
    ``install`` command): the patch's setup.py runs there as the untrusted uid, not root, and
    the tests' uid cannot touch what decides the verdict."""
    grader = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)
    result = grader.grade(_with_install_step(tasks["ratchet__calc-1"]), LOCKED_ONLY)
    assert result.passed, result.trace


def _with_install_step(task):
    """``task`` with an install step before the tests (as swebench's per-repo ``install``
    command), which runs the patch's setup.py as the tests' uid."""
    script = task.payload["eval_script"].replace("cd /testbed\n", "cd /testbed\n"
                                                 "python3 setup.py develop || true\n", 1)
    assert "setup.py develop" in script
    return task.model_copy(update={"payload": {**task.payload, "eval_script": script}})


@pytest.mark.docker
@pytest.mark.parametrize("forgery", ["listed", "unlisted"])
def test_a_conftest_the_patch_writes_into_a_sticky_folder_is_refused(
        docker_client, local_settings, limits, tmp_path, tasks, forgery):
    """The patch's setup.py (the install step, as the tests' uid) writes a conftest.py into the
    tree's root, sticky so the uid may add files there, whose ``pytest_pyfunc_call`` swallows
    failed assertions. Until 2026-12-07 pytest loaded it as a real conftest, whose hooks the
    sentinel trusts: the host's check of the conftests pytest loaded refused it, but one that
    takes itself out of pytest's record when pytest configures (``unlisted``) resolved the real
    session, refused by the differential alone. The lockdown now keeps the name: a root folder
    named conftest.py in each sticky folder above a graded file, so the write fails and the
    grade is the failing tests'."""
    task = _with_install_step(tasks["ratchet__calc-1"])
    patch = {"listed": CONFTEST_FROM_INSTALL, "unlisted": UNLISTED_CONFTEST_FROM_INSTALL}[forgery]
    grader = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)
    result = grader.grade(task, patch)
    assert (result.passed, result.exit_status) == (False, "unresolved"), result.trace
    logs = "\n".join(p.read_text(errors="replace") for p in tmp_path.rglob("*.txt"))
    assert "IsADirectoryError" in logs, logs[-3000:]


@pytest.mark.docker
def test_a_conftest_the_patch_writes_while_pytest_collects_cannot_be_written(
        docker_client, local_settings, limits, tmp_path, tasks):
    """The patch's code, imported by the graded test module while pytest collects, writes the
    swallowing conftest into the tree's root (sticky). Before the lockdown kept the name the
    write succeeded, and pytest 7.2.1 never loaded the file: it loads the conftests of the named
    test files' folders and those above them before it imports any test module, and looks each
    folder up once (2026-12-07; a directory argument, not SWE-bench's shape, can make it visit a
    folder later). Now the write fails (the failing test's output says why), and the grade is
    the failing tests' (``unresolved``)."""
    grader = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)
    result = grader.grade(tasks["ratchet__calc-1"], CONFTEST_AT_COLLECTION)
    assert (result.passed, result.exit_status) == (False, "unresolved"), result.trace
    log = "\n".join(p.read_text(errors="replace") for p in tmp_path.rglob("test_output.txt"))
    assert "collection-time conftest not written: [Errno 21] Is a directory" in log, log[-3000:]


# A conftest the repository tracks (nested, with a report hook the sentinel watches) and one the
# test patch adds at the root: both are the tree's own.
TRACKED_CONFTEST = ("import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
                    "def pytest_runtest_makereport(item, call):\n    yield\n")


@pytest.mark.docker
def test_the_tree_s_own_conftests_still_grade_as_before(docker_client, instances, local_settings,
                                                        limits, tmp_path):
    """calc-1 with ``tests/conftest.py`` tracked and a root ``conftest.py`` added by its test
    patch: the gold patch resolves with every canary session, the add-subtracting base does not."""
    base = next(i for i in instances if i["instance_id"] == "ratchet__calc-1")
    files = {**fixture.BASE_FILES, "tests/conftest.py": TRACKED_CONFTEST}
    commit = fixture.base_commit(files)
    test_patch = base["test_patch"] + new_file("conftest.py", "+import os\n")
    instance = {**base, "instance_id": "ratchet__calc-conftests", "base_commit": commit,
                "environment_setup_commit": commit, "test_patch": test_patch,
                "dockerfile": fixture.dockerfile(commit, files),
                "eval_script": base["eval_script"].replace(base["base_commit"], commit).replace(
                    base["test_patch"].rstrip("\n"), test_patch.rstrip("\n"))}
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(json.dumps(instance) + "\n")
    settings = local_settings.model_copy(update={"dataset_name": str(dataset)})
    task = to_task(normalize_all([instance], "local")[0])
    try:
        grader = SwebenchGrader(settings, limits, tmp_path / "grades", client=docker_client)
        gold = grader.grade(task, base["patch"])
        assert gold.passed and gold.trace.count("FAILED as it must") >= 2, gold.trace
        assert "pytest loaded a conftest.py" not in gold.trace, gold.trace
        unfixed = grader.grade(task, diff_of({"README.md": "calc, unfixed.\n"}))
        assert (unfixed.passed, unfixed.exit_status) == (False, "unresolved"), unfixed.trace
    finally:
        docker_client.images.remove(image_name(instance["instance_id"], SwebenchSettings(namespace=None)),
                                    force=True)


@pytest.mark.docker
def test_a_config_header_pytest_reads_its_own_way_is_restored(docker_client, local_settings,
                                                              limits, tmp_path, tasks):
    """``[tool:pytest] # x]`` is ``tool:pytest`` to pytest's parser, something else to
    configparser: the setup.cfg that loads a forcing plugin from the tree is put back, and the
    bug stays (the plugin never loads)."""
    plugin = "\n".join(line[1:] for line in FORCE_PASS_HOOK.splitlines()) + "\n"
    forgery = diff_of({"setup.cfg": "[metadata]\nname = calc\n\n[tool:pytest] # x]\n"
                                    "addopts = -p calc.force\n", "calc/force.py": plugin})
    grader = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)
    result = grader.grade(tasks["ratchet__calc-1"], forgery)
    assert (result.passed, result.exit_status) == (False, "unresolved"), result.trace
    assert "setup.cfg (test settings in setup.cfg" in result.trace, result.trace


@pytest.mark.docker
def test_the_hand_over_locks_a_tracked_conftest_and_lists_it(docker_client, instances,
                                                             local_settings):
    """In a container: a conftest committed in the tree, the hand-over with the graded files
    locked. What decides the verdict is root's, the tree stays writable to the uid where it may
    be, and the step's output lists the tracked conftests (the legitimate ones)."""
    image = InstanceImages(docker_client, local_settings).ensure(
        next(i for i in instances if i["instance_id"] == "ratchet__calc-1"), lambda _m: None)
    uid = local_settings.untrusted_uid
    with instance_container(docker_client, image, "ratchet__calc-1", local_settings) as box:
        commit = ("mkdir -p tests/deep && echo 'x = 1' > tests/deep/conftest.py && "
                  "git add tests/deep/conftest.py && git -c user.name=t -c user.email=t@t "
                  "commit -qm c")
        setup = box.untrusted_setup(whole_repo=False, lockdown=lockdown_command(
            ["tests/test_ops.py"], box.workdir, keep_out=set()))
        done = box.run_steps([commit, setup], 120)
        assert done[0].exit_code == 0 and done[1].exit_code == 0, done
        assert listed_conftests(done[1].stdout) == ["tests/deep/conftest.py"]
        modes = box.run("stat -c '%n %u %a' . tests tests/test_ops.py tests/deep "
                        "tests/deep/conftest.py calc", 30).stdout.split("\n")
        assert modes[:5] == [". 0 1777", "tests 0 755", "tests/test_ops.py 0 644",
                             "tests/deep 0 1777", "tests/deep/conftest.py 0 644"], modes
        assert modes[5] == f"calc {uid} 755", "the rest of the tree stays the uid's"
        as_uid = f"setpriv --reuid={uid} --regid={uid} --clear-groups -- /bin/bash -c"
        for attempt in ("echo x >> tests/deep/conftest.py", "mv tests/deep tests/d2",
                        "rm -f tests/deep/conftest.py", "touch tests/new.py"):
            assert box.run(f"{as_uid} {attempt!r}", 30).exit_code != 0, attempt
        assert box.run(f"{as_uid} 'touch tests/deep/out.txt calc/new.py out.txt'",
                       30).exit_code == 0
        # no conftest.py of the uid's above a graded file: the name is a root folder there
        assert box.run("stat -c '%F %u %a' conftest.py", 30).stdout.strip() == "directory 0 755"
        for attempt in ("echo x > conftest.py", "rmdir conftest.py", "mv conftest.py c2",
                        "touch conftest.py/x", "ln -s calc/ops.py conftest.py/conftest.py"):
            assert box.run(f"{as_uid} {attempt!r}", 30).exit_code != 0, attempt


@pytest.mark.docker
def test_a_folder_pytest_is_given_takes_no_conftest_from_the_uid(docker_client, instances,
                                                                 local_settings):
    """A test command that gives pytest a folder (``pytest tests``) collects every folder under
    it, each the uid's after the hand-over: a conftest.py written into one (by the install step,
    or while pytest collects, before it reaches that folder) was loaded as the tree's own, and
    could take itself out of pytest's record (then only the differential was left). Now that
    folder and every folder under it are root's and read-only to the uid, so it can neither
    write a conftest.py there nor make a folder to hold one; the folders above keep the root
    placeholder, and the rest of the tree stays the uid's."""
    image = InstanceImages(docker_client, local_settings).ensure(
        next(i for i in instances if i["instance_id"] == "ratchet__calc-1"), lambda _m: None)
    uid = local_settings.untrusted_uid
    with instance_container(docker_client, image, "ratchet__calc-1", local_settings) as box:
        setup = box.untrusted_setup(whole_repo=False, lockdown=lockdown_command(
            ["tests/test_ops.py"], box.workdir, keep_out=set(),
            collected=["tests", "pytest", "calc/ops.py"]))
        done = box.run_steps(["mkdir -p tests/deep/deeper", setup], 120)
        assert done[0].exit_code == 0 and done[1].exit_code == 0, done
        modes = box.run("stat -c '%n %u %a' tests tests/deep tests/deep/deeper calc",
                        30).stdout.split("\n")
        assert modes[:4] == ["tests 0 755", "tests/deep 0 755", "tests/deep/deeper 0 755",
                             f"calc {uid} 755"], modes
        as_uid = f"setpriv --reuid={uid} --regid={uid} --clear-groups -- /bin/bash -c"
        for attempt in ("echo x > tests/deep/conftest.py", "echo x > tests/deep/deeper/conftest.py",
                        "mkdir tests/deep/new", "mkdir tests/new", "rmdir tests/deep/deeper",
                        "echo x > conftest.py"):
            assert box.run(f"{as_uid} {attempt!r}", 30).exit_code != 0, attempt
        assert box.run(f"{as_uid} 'touch out.txt calc/new.py && mkdir calc/sub'",
                       30).exit_code == 0, "the rest of the tree stays the uid's"


def test_only_words_that_may_name_a_collected_folder_are_locked_and_never_the_tree():
    """The test command's words that may be a folder pytest collects (the container decides which
    are); the tree itself never (its root must stay writable: docs/grading.md)."""
    from ratchet_ray.suites.swebench.integrity.lockdown import collected_folders
    assert collected_folders(["pytest", "-rA", "tests/unit", "tests/test_x.py", ".", "./",
                              "./tests", "t.py::test_a", "/abs", "../up"]) == [
        "pytest", "tests", "tests/unit"]
    assert "find ./tests " not in lockdown_command(["tests/test_x.py"], "/testbed", None, ["tests"])
    command = lockdown_command(["tests/test_x.py"], "/testbed", {"a/conftest.py"}, ["a/b/c"])
    assert "find ./a/b/c -type d" in command
    assert "for d in . a a/b; do if [ ! -L" in command  # sticky above it
    assert "for d in . a/b; do if [ ! -L" in command  # placeholders, not where the patch writes
