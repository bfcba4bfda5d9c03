"""``tests/conftest.py``'s worker groups for ``make test``'s two pytest-xdist workers, read from a
real collection of the suite: a module's tests that share a module fixture (a cluster) stay on
one worker even when one of them is a Docker test (the ``docker`` group), so the fixture is set
up once, not once on each worker."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRINTER = '''
import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    for item in items:
        marks = [m.args[0] for m in item.iter_markers("xdist_group")]
        print("GROUP", item.nodeid, marks[0] if marks else "-")
'''


def collected_groups(tmp_path: Path, *paths: str) -> dict[str, str]:
    (tmp_path / "group_printer.py").write_text(PRINTER)
    # A collection of its own, not one more xdist worker's (this test may run in one).
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "group_printer", "-p", "no:cacheprovider", *paths],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return dict(line.split()[1:3] for line in proc.stdout.splitlines()
                if line.startswith("GROUP "))


def test_a_module_fixtures_tests_share_the_group_of_its_docker_test(tmp_path):
    groups = collected_groups(tmp_path, "tests/cluster")
    artifacts = {k: v for k, v in groups.items() if "test_cluster_artifacts.py" in k}
    assert len(artifacts) >= 3 and set(artifacts.values()) == {"docker"}, artifacts
    rounds = {v for k, v in groups.items() if "test_cluster_rounds.py" in k}
    assert rounds == {"module:tests/cluster/test_cluster_rounds.py"}, rounds
    assert {v for k, v in groups.items() if "test_cluster_yaml.py" in k} == {"-"}


CRASHING_SUITE = '''
import os
import signal

import pytest


@pytest.mark.xdist_group("a")
def test_a1():
    pass


@pytest.mark.xdist_group("a")
def test_a2_dies_as_a_native_fault_would():
    os.kill(os.getpid(), signal.SIGILL)


@pytest.mark.xdist_group("a")
def test_a3():
    pass


@pytest.mark.xdist_group("b")
def test_b1():
    pass


def test_c1():
    pass
'''


def makefile_parallel_flags() -> list[str]:
    """``make test``'s xdist flags, as the Makefile spells them."""
    text = (ROOT / "Makefile").read_text()
    line = next(line for line in text.splitlines() if line.startswith("PARALLEL :="))
    return line.split(":=", 1)[1].replace("$(TEST_WORKERS)", "2").split()


def test_a_crashed_worker_fails_make_tests_run_instead_of_hanging_it(tmp_path):
    # Without --max-worker-restart=0, xdist 3.8's loadgroup replaces the crashed worker and
    # leaves the crashed group's other tests to no one: the run waits forever.
    (tmp_path / "test_crashing.py").write_text(CRASHING_SUITE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    flags = makefile_parallel_flags()
    assert "--max-worker-restart=0" in flags
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-c", os.devnull, "--rootdir", str(tmp_path), *flags,
                           "test_crashing.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "crashed while running 'test_crashing.py::test_a2_dies_as_a_native_fault_would'" in out
    # The crash is the run's failure and nothing waits for the lost group. The crashed test is
    # reported once, or twice when xdist had already handed it to the other worker as well
    # (which then crashes on it too): the run ends either way, with no test left unrun.
    summary = re.search(r"^(\d) failed, (\d) passed in ", out, re.M)
    assert summary and summary.group(1) in "12", out[-3000:]
    assert int(summary.group(1)) + int(summary.group(2)) in (4, 5), out[-3000:]
