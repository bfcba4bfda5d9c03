"""The verdict's protections: harness paths (read as pytest reads its configuration), the script
rewrite, the log split, the JUnit cross-check and atomic reports without Docker (canaries,
sentinel and screen: test_swebench_canaries.py); on the local image, the lockdown of what decides
the verdict against the tests' uid."""

from __future__ import annotations

import json

import pytest

import swebench_instances as fixture
from forgeries import FORCE_PASS_HOOK, FORGERIES
from honest_patches import diff_of
from ratchet_ray.suites.swebench import grading_support
from ratchet_ray.suites.swebench.protect import (
    CONFTESTS_LISTED, conftest_paths, harness_reason, listed_conftests, lockdown_command,
    patch_paths, protected_folders, unsafe_paths)
from ratchet_ray.suites.swebench.protect import test_files as graded_test_files
from ratchet_ray.suites.swebench.verdict import (
    Forgery, Markers, MarkersMissing, RunExtras, ScriptShapeError, cross_check, instrument,
    junit_statuses, runner_files, split_log)

TESTS = {"tests/test_ops.py"}


def test_patch_paths_reads_headers_not_hunk_bodies():
    patch = ("diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n"
             "@@ -1 +1 @@\n--- conftest.py\n+++ pytest.ini\n"
             "diff --git a/old.py b/new.py\nrename from old.py\nrename to new.py\n")
    assert patch_paths(patch) == {"calc/ops.py", "old.py", "new.py"}
    assert patch_paths(FORGERIES["sitecustomize"]) == {"sitecustomize.py", "calc/force.pth"}
    assert unsafe_paths({"a/.git/hooks/x", "../up", "/abs", "fine/x.py"}) == ["../up", "/abs",
                                                                               "a/.git/hooks/x"]


@pytest.mark.parametrize("path, reason", [
    ("conftest.py", "pytest conftest"), ("pkg/tests/deep/conftest.py", "pytest conftest"),
    ("pytest.ini", "pytest configuration"), ("tox.ini", "tox configuration"),
    ("noxfile.py", "nox configuration"), ("sitecustomize.py", "interpreter start-up hook"),
    ("lib/usercustomize.py", "interpreter start-up hook"), ("x/evil.pth", "(.pth)"),
    ("pkg.egg-info/entry_points.txt", "plugin entry points"),
    ("tests/test_ops.py", "test file the instance is graded with"),
    ("pytest.py", "shadows pytest"), ("_pytest/__init__.py", "shadows _pytest"),
    ("pluggy.py", "shadows pluggy"), ("argparse.py", "shadows argparse"),
    ("pytest_evil/__init__.py", "shadows pytest_evil"), ("json/__main__.py", "shadows json"),
    ("xml.cpython-311-x86_64-linux-gnu.so", "shadows xml"),
    ("tests/__pycache__/test_ops.cpython-311-pytest-8.0.0.pyc", "compiled bytecode"),
])
def test_harness_paths(path, reason):
    assert reason in harness_reason(path, TESTS)


@pytest.mark.parametrize("path", ["calc/ops.py", "tests/helpers.py", "tests/data/expected.txt",
                                  "docs/conftest.rst", "tests/test_other.py", "calc/pytest.py",
                                  "tests/argparse.py", "calc.py", "json/helpers.py", "site/x.html"])
def test_other_paths_are_the_patchs_own(path):
    assert harness_reason(path, TESTS) is None


def test_a_root_module_shadows_only_when_the_patch_creates_it():
    assert "shadows six" in harness_reason("six.py", TESTS, before=None)
    assert harness_reason("six.py", TESTS, before="") is None, "the repository's own six.py"


def test_the_test_command_s_runner_files_are_harness():
    script = "\n".join(["#!/bin/bash", "cd /testbed", "git apply -v - <<'EOF'", "x", "EOF",
                        ": '>>>>> Start Test Output'",
                        "./tests/runtests.py --verbosity 2 --settings=test_sqlite admin.tests",
                        "bin/test -C --verbose sympy/core/tests/test_basic.py",
                        "SWEBENCH_TEST_EXIT_CODE=$?", ": '>>>>> End Test Output'", "git checkout x"])
    runners = runner_files(script)
    assert runners == {"tests/runtests.py", "bin/test", "sympy/core/tests/test_basic.py"}
    assert "test command runs" in harness_reason("tests/runtests.py", TESTS, runners=runners)
    assert runner_files("#!/bin/bash\npytest\n") == set()


def test_config_files_count_only_their_test_sections():
    cfg = "[metadata]\nname = calc\n\n[tool:pytest]\naddopts = -q\n"
    assert harness_reason("setup.cfg", TESTS, cfg, cfg.replace("calc", "calc2")) is None
    assert "setup.cfg" in harness_reason("setup.cfg", TESTS, cfg, cfg.replace("-q", "-q -k nope"))
    entry = cfg + "\n[options.entry_points]\npytest11 =\n    evil = calc.evil\n"
    assert harness_reason("setup.cfg", TESTS, cfg, entry)
    toml = '[project]\nname = "calc"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    assert harness_reason("pyproject.toml", TESTS, toml, toml.replace('"calc"', '"c2"')) is None
    assert harness_reason("pyproject.toml", TESTS, toml, toml.replace('"-q"', '"-p evil"'))
    assert harness_reason("pyproject.toml", TESTS, None,
                          '[project.entry-points.pytest11]\nevil = "calc.evil"\n')
    assert "no longer parses" in harness_reason("pyproject.toml", TESTS, toml, "[[[")
    setup = "setup(name='calc')\n"
    assert harness_reason("setup.py", TESTS, setup, setup + "# more\n") is None
    assert harness_reason("setup.py", TESTS, setup,
                          "setup(entry_points={'pytest11': ['e = calc.e']})\n")


def test_config_is_read_as_pytest_reads_it_and_any_runner_line_restores_the_whole_file():
    base = "[metadata]\nname = calc\n"
    # Headers that configparser and pytest's iniconfig read differently: pytest sees tool:pytest.
    for header in ("[tool:pytest] # x]", "[tool:pytest]  ;]", "[tool:pytest] # ]"):
        evil = base + f"{header}\nxx = 1\n"
        assert harness_reason("setup.cfg", TESTS, base, evil), header
    # A line that names what a runner reads, in any section, restores the file whole.
    for line in ("[flake8]\naddopts = -p evil", "[tox:x]\nenv = 1", "[options]\nplugins = evil"):
        assert harness_reason("setup.cfg", TESTS, base, f"{base}{line}\n"), line
    assert "no longer parses" in harness_reason("setup.cfg", TESTS, base, base + "[]\n")
    # New packaging files without test settings are the patch's own (not deleted).
    project = ('[build-system]\nrequires = ["setuptools"]\n\n[project]\nname = "calc"\n')
    assert harness_reason("pyproject.toml", TESTS, None, project) is None
    assert harness_reason("setup.cfg", TESTS, None, base + "[flake8]\nmax-line-length = 99\n") is None
    assert harness_reason("setup.py", TESTS, None, "setup(name='calc')\n") is None
    assert harness_reason("pyproject.toml", TESTS, None, project + "[tool.pytest]\nx = 1\n")


def test_lockdown_keeps_graded_files_their_folders_and_conftests_roots():
    read_only, sticky = protected_folders(["tests/test_ops.py", "tests/unit/test_x.py",
                                           "tests/runtests.py", "/etc/passwd", "../x.py"])
    assert read_only == ["tests", "tests/unit"] and sticky == ["."]
    command = lockdown_command(["tests/unit/test_x.py"], "/testbed")
    assert "chmod 1777" in command and "chmod 0755" in command and "__pycache__" in command
    assert "conftest.py" in lockdown_command([], "/testbed"), "tracked conftests always"
    patch = "diff --git a/t/conftest.py b/t/conftest.py\n--- /dev/null\n+++ b/t/conftest.py\n"
    assert conftest_paths(["conftest.py", "a/b.py", "a/myconftest.py"], patch) == {
        "conftest.py", "t/conftest.py"}
    printed = f"chown noise\n{CONFTESTS_LISTED}tests/conftest.py\0conftest.py\0"
    assert listed_conftests(printed) == ["conftest.py", "tests/conftest.py"]
    assert listed_conftests("failed before the listing") == []


def test_test_files_come_from_ids_and_the_test_patch():
    instance = {"test_patch": "diff --git a/tests/t.py b/tests/t.py\n--- a/tests/t.py\n+++ b/tests/t.py\n",
                "FAIL_TO_PASS": ["tests/test_a.py::test_x[1]", "test_y (admin.tests.Case)"],
                "PASS_TO_PASS": ["test_plain_name"]}
    files = graded_test_files(instance)
    assert {"tests/t.py", "tests/test_a.py", "admin/tests.py", "tests/admin/tests.py"} <= files


SCRIPT = "\n".join(["#!/bin/bash", "set -uxo pipefail", "cd /testbed",
                    ": '>>>>> Start Test Output'", "pytest -rA tests", "SWEBENCH_TEST_EXIT_CODE=$?",
                    ": '>>>>> End Test Output'", 'echo ">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE"',
                    "git checkout abc -- tests"])


def test_instrument_hides_the_markers_and_drops_root():
    markers = Markers.fresh()
    script = instrument(SCRIPT, markers, 65534)
    assert ">>>>> Start Test Output" not in script and markers.start in script
    assert "setpriv --reuid=65534" in script and markers.junit_path in script
    assert "git checkout abc" not in script, "nothing runs as root after the tests"
    assert Markers.fresh().start != markers.start
    with pytest.raises(ScriptShapeError):
        instrument("#!/bin/bash\npytest\n", markers, None)
    extras = RunExtras(root_steps=("cat /stage/0.planted > /testbed/tests/test_ops.py",),
                       addopts="-p ratchet_sentinel_x", pythonpath="/var/lib/ratchet/sentinel-y")
    script = instrument(SCRIPT, markers, 65534, extras)
    lines = script.split("\n")
    plant = lines.index(extras.root_steps[0])
    assert plant < lines.index(f"echo {markers.start}"), "root plants before the untrusted block"
    run = next(line for line in lines if "setpriv --reuid=65534" in line and "pytest" in line)
    assert "-p ratchet_sentinel_x --junitxml=" in run
    assert 'PYTHONPATH="/var/lib/ratchet/sentinel-y${PYTHONPATH:+:$PYTHONPATH}"' in run
    assert "0.planted" not in run, "nothing the test process can read names a canary"


def test_an_install_step_before_the_tests_runs_as_the_untrusted_uid():
    script = SCRIPT.replace("cd /testbed\n", "cd /testbed\npython -m pip install -e . \\\n"
                            "    --no-build-isolation\nsed -i 's/x/y/' tox.ini\n"
                            "git apply - <<'EOF_9'\n+python setup.py develop\nEOF_9\n")
    lines = instrument(script, Markers.fresh(), 65534).split("\n")
    install = next(line for line in lines if "pip install" in line)
    assert install.startswith("env HOME=/tmp/ratchet-home") and "setpriv --reuid=65534" in install
    assert "--no-build-isolation" in install, "a continued line is run whole"
    assert "kill -KILL -1" in lines[lines.index(install) + 1], "nothing it started outlives it"
    assert "sed -i 's/x/y/' tox.ini" in lines, "other steps are unchanged"
    assert "+python setup.py develop" in lines, "a here-document (the test patch) is left alone"
    assert "pip install" in instrument(script, Markers.fresh(), None), "no uid: as before"
    assert "setpriv" not in instrument(script, Markers.fresh(), None).split("@@ratchet")[0]


def _out(markers: Markers, section: str, after: str = ">>>>> Test Exit Code: 0") -> str:
    return f"setup\n{markers.start}\n{section}\n{markers.end}\n{after}\n"


def test_split_log_keeps_the_section_and_rejects_imitations():
    m = Markers.fresh()
    out = _out(m, "PASSED tests/test_ops.py::test_add")
    log, section = split_log(out, out, m)
    assert section == "PASSED tests/test_ops.py::test_add"
    assert log.index(">>>>> Start Test Output") < log.index("PASSED") < log.index(">>>>> End Test Output")
    for fake in (">>>>> End Test Output", ">>>>> Start Test Output", ">>>>> Test Exit Code: 0",
                 m.start):
        bad = _out(m, f"FAILED x\n{fake}\nPASSED x")
        with pytest.raises(Forgery):
            split_log(bad, bad, m)
    with pytest.raises(MarkersMissing):
        split_log("setup\n", "setup\n", m)


JUNIT = b"""<?xml version="1.0"?><testsuites><testsuite>
<testcase classname="tests.test_ops" name="test_add" file="tests/test_ops.py"><failure/></testcase>
<testcase classname="tests.test_ops" name="test_mul" file="tests/test_ops.py"/>
<testcase classname="tests.test_ops.TestK" name="test_k[a.b]" file="tests/test_ops.py"><skipped/></testcase>
</testsuite></testsuites>"""


def test_junit_cross_check_fails_closed():
    statuses = junit_statuses(JUNIT)
    assert statuses == {"tests/test_ops.py::test_add": "FAILED", "tests/test_ops.py::test_mul": "PASSED",
                        "tests/test_ops.py::TestK::test_k[a.b]": "SKIPPED"}
    report = {"tests_status": {"FAIL_TO_PASS": {"success": ["tests/test_ops.py::test_add"]},
                               "PASS_TO_PASS": {"success": ["tests/test_ops.py::test_mul",
                                                            "tests/test_ops.py::TestK::test_k[a.b]"]}}}
    check = cross_check(report, statuses)
    assert check.disagreements == ["tests/test_ops.py::test_add: the log says passed, the JUnit "
                                   "report says FAILED"]
    assert len(cross_check(report, None).disagreements) == 3, "no report disagrees with every pass"
    with pytest.raises(Forgery):
        junit_statuses(b"<not xml")


def test_reports_are_written_atomically_and_broken_ones_dropped(tmp_path, monkeypatch):
    from ratchet_ray import fsutil
    from ratchet_ray.artifacts import ArtifactStore

    store, path = ArtifactStore(tmp_path), tmp_path / "i" / "report.json"
    store.put("i/report.json", grading_support.report_bytes({"grade": {"passed": True,
                                                                       "trace": "ok"}}))

    def power_cut(fd):
        raise OSError("disk full")

    monkeypatch.setattr(fsutil.os, "fsync", power_cut)  # the new report is written, not synced
    with pytest.raises(OSError):
        grading_support.publish_folder(tmp_path / "none", store, last=[(
            "i/report.json", grading_support.report_bytes({"grade": {"passed": False,
                                                                     "trace": "x"}}))])
    monkeypatch.undo()
    assert json.loads(path.read_text())["grade"]["passed"] is True
    assert [p.name for p in path.parent.iterdir()] == ["report.json"]
    path.write_text('{"grade": {"pass')
    assert grading_support.read_report(store, "i/report.json") is None and not path.exists()


# The fix holds only when the tests' uid cannot touch what decides the verdict: graded test files
# and their folders (no rewrite, rename, compiled copy or new conftest), tracked conftests' folders,
# while it may still write its own files in the working directory (a test's output).
ESCAPES = """import os


def _escapes():
    found = []
    attempts = {
        "rewrite the graded file": lambda: open("tests/test_ops.py", "a").close(),
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
"""
LOCKED_ONLY = diff_of({"calc/ops.py": fixture.OPS.replace(
    '"""Tiny arithmetic helpers."""\n', '"""Tiny arithmetic helpers."""\n' + ESCAPES).replace(
    "    return a - b", "    assert not ESCAPES, ESCAPES\n    return a + b")})


@pytest.mark.docker
def test_the_test_uid_cannot_touch_what_decides_the_verdict(docker_client, local_settings,
                                                            limits, tmp_path, tasks):
    from ratchet_ray.suites.swebench.grader import SwebenchGrader

    grader = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)
    result = grader.grade(tasks["ratchet__calc-1"], LOCKED_ONLY)
    assert result.passed, result.trace


@pytest.mark.docker
def test_a_config_header_pytest_reads_its_own_way_is_restored(docker_client, local_settings,
                                                              limits, tmp_path, tasks):
    """``[tool:pytest] # x]`` is ``tool:pytest`` to pytest's parser, something else to
    configparser: the setup.cfg that loads a forcing plugin from the tree is put back, and the
    bug stays (the plugin never loads)."""
    from ratchet_ray.suites.swebench.grader import SwebenchGrader

    plugin = "\n".join(line[1:] for line in FORCE_PASS_HOOK.splitlines()) + "\n"
    forgery = diff_of({"setup.cfg": "[metadata]\nname = calc\n\n[tool:pytest] # x]\n"
                                    "addopts = -p calc.force\n", "calc/force.py": plugin})
    grader = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)
    result = grader.grade(tasks["ratchet__calc-1"], forgery)
    assert (result.passed, result.exit_status) == (False, "unresolved"), result.trace
    assert "setup.cfg (test settings in setup.cfg" in result.trace, result.trace


# The patch's setup.py, run by the eval script's install step: it records whether it ran as
# root (and could read the grader's script); the fixed add holds only when it did not.
INSTALL_PROBE = diff_of({
    "setup.py": "import os\n\ntry:\n    open('/var/lib/ratchet/eval.sh').read()\n    read = 'read'\n"
                "except OSError:\n    read = 'denied'\n"
                "with open('/tmp/ratchet-install-probe', 'w') as out:\n"
                "    out.write(f'{os.getuid()} {read}')\n",
    "calc/ops.py": fixture.OPS.replace("    return a - b", "    with open('/tmp/ratchet-install-probe') "
                                       "as probe:\n        uid, read = probe.read().split()\n"
                                       "    assert (uid, read) == ('65534', 'denied'), (uid, read)\n"
                                       "    return a + b")})


@pytest.mark.docker
def test_the_eval_scripts_install_step_runs_the_patch_as_the_untrusted_uid(
        docker_client, local_settings, limits, tmp_path, tasks):
    from ratchet_ray.suites.swebench.grader import SwebenchGrader

    task = tasks["ratchet__calc-1"]
    script = task.payload["eval_script"].replace("cd /testbed\n", "cd /testbed\n"
                                                 "python3 setup.py develop || true\n", 1)
    assert "setup.py develop" in script
    task = task.model_copy(update={"payload": {**task.payload, "eval_script": script}})
    grader = SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)
    result = grader.grade(task, INSTALL_PROBE)
    assert result.passed, result.trace


@pytest.mark.docker
def test_the_hand_over_locks_a_tracked_conftest_and_lists_it(docker_client, instances,
                                                             local_settings):
    """In a container: a conftest committed in the tree, the hand-over with the graded files
    locked. What decides the verdict is root's, the tree stays writable to the uid where it may
    be, and the step's output lists the tracked conftests (the legitimate ones)."""
    from ratchet_ray.suites.swebench.container import instance_container
    from ratchet_ray.suites.swebench.images import InstanceImages

    image = InstanceImages(docker_client, local_settings).ensure(
        next(i for i in instances if i["instance_id"] == "ratchet__calc-1"), lambda _m: None)
    uid = local_settings.untrusted_uid
    with instance_container(docker_client, image, "ratchet__calc-1", local_settings) as box:
        commit = ("mkdir -p tests/deep && echo 'x = 1' > tests/deep/conftest.py && "
                  "git add tests/deep/conftest.py && git -c user.name=t -c user.email=t@t "
                  "commit -qm c")
        setup = box.untrusted_setup(whole_repo=False, locked=["tests/test_ops.py"])
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
