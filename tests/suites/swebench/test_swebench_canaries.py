"""The graded files after the test patch, the static screen and the sentinel's judgement, without
Docker (the layers run for real in test_swebench_layers.py and, on the images,
test_swebench_forgery.py / test_swebench_differential.py)."""

from __future__ import annotations

import ast

import pytest

import swebench_instances as fixture
from forgeries import FORGERIES, IN_PROCESS, new_file
from ratchet_ray.evidence.tampering import SUSPICION_PREFIX
from ratchet_ray.suites.swebench.integrity import graded_tests
from ratchet_ray.suites.swebench.integrity.screen import screen, suspicion
from ratchet_ray.suites.swebench.integrity.sentinel import Sentinel, judge

F2P, P2P = fixture.TESTS["ratchet__calc-1"]
INSTANCE = {"repo": fixture.REPO, "FAIL_TO_PASS": F2P, "PASS_TO_PASS": P2P,
            "test_patch": fixture.TEST_PATCH["ratchet__calc-1"]}
AFTER = graded_tests.after_test_patch({"tests/test_ops.py": fixture.BASE_FILES["tests/test_ops.py"]},
                                  fixture.TEST_PATCH["ratchet__calc-1"])["tests/test_ops.py"]


def test_the_test_patch_is_applied_on_the_host():
    assert "def test_add():\n    assert add(2, 3) == 5" in AFTER
    assert graded_tests.after_test_patch({"a.py": "x = 1\n"}, "not a patch at all\n") == {"a.py": None}
    crlf = "x = 1\r\ny = 2\r\n"
    assert graded_tests.after_test_patch({"a.py": crlf}, "") == {"a.py": crlf}, "bytes kept as they are"


def test_the_screen_quotes_lines_that_reach_for_the_harness():
    hits = screen(FORGERIES["report_rewrite_in_source"])
    assert any("from _pytest.reports import TestReport" in h and h.startswith("calc/ops.py:")
               for h in hits), hits
    assert screen(FORGERIES["spare_env_canary"]) and screen(FORGERIES["junit_and_summary_rewrite"])
    assert screen(fixture.GOLD["ratchet__calc-1"]) == []
    walk = ("diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n"
            "@@ -1,1 +1,3 @@\n x = 1\n+import sys\n+frame = sys._getframe(2)  # find the pytest caller\n")
    assert screen(walk) == ["calc/ops.py:3: frame = sys._getframe(2)  # find the pytest caller"]
    assert screen(walk.replace("  # find the pytest caller", "")) == [], "frames alone are code"


def test_the_screen_skips_restored_harness_and_pytest_itself():
    conftest = new_file("conftest.py", "+import _pytest\n")
    assert suspicion(INSTANCE, conftest) is None, "the guard restores it: nothing reaches the run"
    note = suspicion(INSTANCE, FORGERIES["report_rewrite_in_source"])
    assert note.startswith(SUSPICION_PREFIX) and "test_tampering" not in note, note
    assert suspicion({**INSTANCE, "repo": "pytest-dev/pytest"},
                     FORGERIES["report_rewrite_in_source"]) is None


def test_some_forgeries_evade_the_screen():
    """Why the screen is never the only layer: these reach pytest's machinery all the same."""
    evading = sorted(n for n in IN_PROCESS if not screen(FORGERIES[n]))
    assert {"forge_only_graded", "spare_untracked_canary"} <= set(evading)
    assert all("_pytest" not in FORGERIES[n] for n in evading)
    # spelled in pieces, still screened: the assembled module name, gc and sys.modules walks
    for name in ("spare_hex_canary", "hook_wrapper_from_gc"):
        assert "_pytest" not in FORGERIES[name] and screen(FORGERIES[name]), name


def test_the_sentinel_module_is_filled_in_per_grade():
    one, two = Sentinel.fresh("/var/tmp/j", "/testbed"), Sentinel.fresh("/var/tmp/j", "/testbed")
    assert one.module != two.module and one.result_stem != two.result_stem
    assert f"RESULT_STEM = {one.result_stem!r}" in one.source and "TREE = '/testbed'" in one.source
    assert one.addopts == f"-p {one.module}" and one.path.startswith("/var/lib/ratchet/sentinel-")
    ast.parse(one.source, feature_version=(3, 5))  # it runs under old instance interpreters too



def test_the_sentinels_results_are_picked_from_the_report_folder():
    """Only this grade's result files count; one past the limit or not an object is garbled
    (a finding, so tampering), never skipped."""
    sentinel = Sentinel.fresh("/var/tmp/j", "/testbed")
    stem = sentinel.result_stem.rsplit("/", 1)[1]
    assert sentinel.files() == {sentinel.path: (sentinel.source, 0o644)}
    files = {f"{stem}.1.json": b'{"pid": 1}', f"{stem}.2.json": b"[1]", "other.json": b"{}",
             f"{stem}.txt": b"{}", "report.xml": b"<x/>"}
    assert [n for n in files if sentinel.result_name(n)] == [f"{stem}.1.json", f"{stem}.2.json"]
    results = sentinel.parse_results(files, {f"{stem}.3.json": 2**30, "report.xml": 2**30})
    assert results[:2] == [{"pid": 1}, {"garbled": "not an object"}]
    assert "1073741824 bytes" in results[2]["garbled"] and len(results) == 3
    assert judge(results, {}, 1).findings[0].startswith("a result file is garbled")

def _result(**kw):
    return {"pid": 7, "nested": False, "findings": [], "notes": [], "raised": {}, "failed": [],
            "exitstatus": 1, "finished": True, **kw}


def test_the_sentinel_judgement():
    junit = {"tests/test_ops.py::test_add": "PASSED", "tests/test_ops.py::test_mul": "FAILED"}
    clean = judge([_result(raised={"tests/test_ops.py::test_mul": "AssertionError"})], junit, 1)
    assert clean.findings == [] and clean.incomplete is None
    lied = judge([_result(raised={"tests/test_ops.py::test_add": "AssertionError"})], junit, 1)
    assert "test_add raised AssertionError in pytest's process, but the JUnit report says PASSED" \
        in lied.findings[0]
    assert "exit code was rewritten" in judge([_result()], junit, 0).findings[0]
    assert judge([_result(exitstatus=0)], junit, 0).findings == []
    assert judge([_result(findings=["x replaced"])], junit, 1).findings == ["x replaced"]
    assert judge([], junit, 1).incomplete and judge([_result(finished=False)], junit, 1).incomplete
    assert judge([_result(), {"garbled": "a.json: bad"}], junit, 1).findings
    nested = judge([_result(), _result(nested=True, findings=["inner"], exitstatus=2)], junit, 1)
    assert nested.findings == [] and nested.notes
