"""The verdict's protections without Docker: harness paths (read as pytest reads its
configuration), the script rewrite, the log split, the JUnit cross-check and atomic reports
(canaries, sentinel and screen: test_swebench_canaries.py; the lockdown of what decides the
verdict, on the local image: test_swebench_lockdown.py)."""

from __future__ import annotations

import json

import pytest

from forgeries import FORGERIES
from ratchet_ray.suites.swebench import grading_support
from ratchet_ray.suites.swebench.integrity.harness_paths import (
    harness_reason, import_roots, patch_paths, unsafe_paths)
from ratchet_ray.suites.swebench.integrity.harness_paths import test_files as graded_test_files
from ratchet_ray.suites.swebench.integrity.verdict import (
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


def test_a_module_on_the_image_s_python_path_shadows_as_at_the_root():
    """flask's images put ``/testbed/src`` on PYTHONPATH, ahead of pytest and the standard
    library: a new ``src/pytest.py`` ran instead of pytest. Folders outside the tree, and
    modules below the top of such a folder, are not roots."""
    roots = import_roots(["PATH=/usr/bin", "PYTHONPATH=/testbed/src:/opt/ratchet-site:/testbed"],
                         "/testbed")
    assert roots == ("src", "")
    assert "a new module on PYTHONPATH that shadows pytest" in harness_reason(
        "src/pytest.py", TESTS, roots=roots)
    assert "shadows json" in harness_reason("src/json/__init__.py", TESTS, roots=roots)
    assert harness_reason("src/pytest.py", TESTS) is None, "no PYTHONPATH: an ordinary module"
    assert harness_reason("src/flask/json/__init__.py", TESTS, roots=roots) is None
    assert harness_reason("src/json.py", TESTS, before="", roots=roots) is None, "its own"


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
    assert cross_check(report, statuses) == ["tests/test_ops.py::test_add: the log says passed, "
                                             "the JUnit report says FAILED"]
    assert len(cross_check(report, None)) == 3, "no report disagrees with every pass"
    with pytest.raises(Forgery):
        junit_statuses(b"<not xml")


def test_reports_are_written_atomically_and_broken_ones_dropped(tmp_path, monkeypatch):
    from ratchet_ray.storage import fsutil
    from ratchet_ray.storage.artifacts import ArtifactStore

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
