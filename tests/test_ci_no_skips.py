"""``tests/conftest.py`` under ``CI=true``: a skip of any kind fails the run with its reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

SAMPLE = '''
import pytest

def test_runs():
    assert True

def test_skips_at_runtime():
    pytest.skip("no Docker daemon here")

@pytest.mark.skipif(True, reason="dataset missing")
def test_skipif_marker():
    pass

def test_fixture_importorskip():
    pytest.importorskip("surely_not_an_installed_module_xyz")

@pytest.mark.xfail(reason="known bug", strict=True)
def test_expected_failure():
    assert False
'''
SKIPPED_MODULE = '''
import pytest
pytest.importorskip("another_missing_module_abc")

def test_never_collected():
    pass
'''


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("ci_samples")
    (where / "test_sample.py").write_text(SAMPLE)
    (where / "test_skipped_module.py").write_text(SKIPPED_MODULE)
    return where


def run_samples(where: Path, ci: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    # ``-p conftest`` loads the suite's conftest as a plugin; -c /dev/null keeps the repo's ini out.
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "conftest",
                           "-c", os.devnull, "--rootdir", str(where), "-p", "no:cacheprovider",
                           "--continue-on-collection-errors", str(where)],
                          capture_output=True, text=True, cwd=where, env=env, timeout=600)


def test_outside_ci_skips_stay_skips(samples):
    out = run_samples(samples, ci=None)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "1 passed, 4 skipped, 1 xfailed" in out.stdout


def test_under_ci_every_skip_fails_with_its_reason(samples):
    out = run_samples(samples, ci="true")
    assert out.returncode == 1, out.stdout[-3000:]
    summary = out.stdout.strip().splitlines()[-1]
    assert "1 passed" in summary and "1 xfailed" in summary and "skipped" not in summary
    # skips in the test body fail; a skipif marker (setup) and a skipped module (collection) error
    assert "2 failed" in summary and "2 errors" in summary
    assert out.stdout.count("skipped under CI=true") >= 4
    for reason in ("no Docker daemon here", "dataset missing", "surely_not_an_installed_module_xyz",
                   "another_missing_module_abc"):
        assert reason in out.stdout
