"""The project's forgery corpus on a real project: none resolves, each refused as the corpus says.

Every forgery of ``forgeries.py`` (with ``MID_RUN``) and ``differential_forgeries.py``, written
for flask (real_forgeries.py), is graded on a real flask 2.3.3 instance of the session's set
(shared_flask.py), its bug still in place. Each must come back not resolved, not an
infrastructure failure, and refused as the corpus expects of the same attack on ``calc``: the
exit status and trace phrase of ``test_swebench_forgery.EXPECTED`` and ``MID_RUN``, or one of the
layers ``differential_forgeries.FORGERIES`` names; ``real_forgeries.REAL_ONLY`` (attacks calc's
tests and tree cannot carry) by the layer it names. Seven of them (one per layer: harness
restored, exit code, sentinel, JUnit cross-check, differential; every assert but the last
expectation's dropped, which resolved before gold records of version 6; a fake pytest in
``src``, on flask's PYTHONPATH, which replaced pytest before it was restored) run in the slow suite;
all run with ``-m realcode_large`` (docs/swebench.md, "Real projects").
"""

from __future__ import annotations

import re

import pytest

import differential_forgeries
import forgeries
from real_forgeries import INPUT_FILES, REAL_ONLY, real_forgeries
from real_grading import RealGrading, base_file
from shared_flask import ensure_project_image
from test_swebench_layers import layer_of

pytestmark = [pytest.mark.slow, pytest.mark.docker]
# Its FAIL_TO_PASS tests (nested blueprints' error handlers and callbacks) make requests and
# compare the response's data: every trigger of real_forgeries.py runs in them.
INSTANCE = "pallets__flask-2.3.3-func_pm_remove_cond-1ea1efed"
SLOW = ("root_conftest", "fake_passed_lines", "claimed_conftest_makereport",
        "saved_stdout_filtered", "liar_always_equal", *REAL_ONLY)
NAMES = sorted({*forgeries.FORGERIES, *forgeries.MID_RUN, *differential_forgeries.FORGERIES,
                *REAL_ONLY})


@pytest.fixture(scope="module")
def forging(flask_set, docker_session, tmp_path_factory):
    ensure_project_image(flask_set, docker_session, tmp_path_factory.mktemp("rebuilt"))
    grading = RealGrading(flask_set.dataset, tmp_path_factory.mktemp("forgeries"), docker_session,
                          gold_records=flask_set.gold)
    assert INSTANCE in grading.rows, (f"the flask build no longer makes {INSTANCE} "
                                      f"(it made {sorted(grading.rows)}): pick another instance")
    row = grading.rows[INSTANCE]
    return grading, real_forgeries(row, {path: base_file(row, path) for path in INPUT_FILES})


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in SLOW else pytest.mark.realcode_large)
                                  for n in NAMES])
def test_each_forgery_is_refused_on_a_real_flask_instance(forging, name):
    grading, forged = forging
    patch, expect = forged[name]
    result = grading.grade(INSTANCE, patch)
    assert (result.passed, result.infra_failure) == (False, False), result.trace
    if expect.layers:
        assert layer_of(result) in expect.layers, (layer_of(result), result.trace)
    else:
        assert result.exit_status == expect.status, result.trace
        assert re.search(expect.phrase, result.trace), (expect.phrase, result.trace)
