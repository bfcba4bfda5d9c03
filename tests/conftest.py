"""Shared fixtures: a real local Ray (loopback only) and the test doubles of ``tests/fakes.py``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Ray 2.60 turns `_node_ip_address="127.0.0.1"` into the host's routable address unless cluster
# mode is off; off, every test Ray (and each driver or worker it spawns, which inherit this
# environment) binds loopback only. Must be set before Ray is first imported.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
_MBPP = ROOT.parent / "shared" / "data" / "MbppPlus-v0.2.0.jsonl.gz"
if _MBPP.exists():
    os.environ.setdefault("MBPP_OVERRIDE_PATH", str(_MBPP))


def _ship_test_doubles_by_value() -> None:
    # Ray workers cannot import tests/ modules: the doubles travel inside the pickles instead.
    # Registered once for the session; unregistering would break every later test.
    import ray.cloudpickle

    import fakes
    import loop_helpers

    ray.cloudpickle.register_pickle_by_value(fakes)
    ray.cloudpickle.register_pickle_by_value(loop_helpers)


_ship_test_doubles_by_value()


def ci_forbids_skips() -> bool:
    """Under ``CI=true`` every test must run: a missing Docker, dataset or model fails the run."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


def _fail_skip(report) -> None:
    report.outcome = "failed"
    report.longrepr = (f"skipped under CI=true, which runs every test; fix the environment "
                       f"(.ci/run sets it up): {_skip_reason(report)}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI a skip (``pytest.skip``, ``importorskip``, a ``skipif`` marker) is a failure that
    keeps the skip's reason; an ``xfail`` stays what it is."""
    outcome = yield
    report = outcome.get_result()
    if ci_forbids_skips() and report.skipped and not hasattr(report, "wasxfail"):
        _fail_skip(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """The same for a whole module skipped while being collected."""
    outcome = yield
    report = outcome.get_result()
    if ci_forbids_skips() and report.skipped:
        _fail_skip(report)


@pytest.fixture(scope="session")
def _ray_session():
    """Shuts the shared runtime down once, at the end of the test session."""
    yield
    import ray

    if ray.is_initialized():
        ray.shutdown()


@pytest.fixture
def ray_local(_ray_session):
    """A real local Ray runtime bound to 127.0.0.1, shared by the tests that ask for it
    (``local_ray.start_local_ray``: started on first use, and again after a test's own driver
    stopped it)."""
    from local_ray import start_local_ray

    return start_local_ray()


@pytest.fixture(scope="session")
def _scenario_references(tmp_path_factory) -> dict:
    return {"root": tmp_path_factory.mktemp("scenario-references"), "runs": {}}


@pytest.fixture
def scenario_reference(ray_local, _scenario_references):
    """``scenario_reference(rounds)``: the run dir of the scripted governance scenario
    (``loop_helpers.scenario_config`` and ``scenario_models``) run uninterrupted for ``rounds``
    rounds, made once per test process and shared read-only by every test that compares a
    disturbed run with it (chaos, resume, budget, lost work). The scenario is deterministic, so
    one reference serves them all; a test must not write into it."""

    def reference(rounds: int) -> Path:
        runs = _scenario_references["runs"]
        if rounds not in runs:
            from loop_helpers import scenario_config, scenario_models
            from ratchet_ray.loop.driver import run_loop

            root = _scenario_references["root"] / f"rounds_{rounds}"
            runs[rounds] = run_loop(scenario_config(root, rounds), models=scenario_models(),
                                    show_progress=False)
        return runs[rounds]

    return reference


@pytest.fixture
def hash_embedder():
    from fakes import HashEmbedder

    return HashEmbedder()


# ---- random order (``make flake``) ------------------------------------------------------------
def pytest_addoption(parser):
    parser.addoption("--shuffle-seed", type=int, default=None,
                     help="Run the test modules, and the tests inside each, in an order drawn "
                          "from this seed (printed in the header); a test that passes only in "
                          "file order shows up. `make flake` uses it.")


def pytest_report_header(config):
    seed = config.getoption("--shuffle-seed")
    return None if seed is None else f"shuffled with --shuffle-seed={seed}"


def _join_xdist_group(item, group: str, config) -> None:
    """Put ``item`` in pytest-xdist's ``group``. xdist's loadgroup scheduler reads the group from a
    ``@group`` suffix of the node id the worker reports; xdist 3.8 writes it to ``item._nodeid``,
    which pytest >= 9.2 no longer reads (the id is ``item._id``), so the suffix is set here."""
    item.add_marker(pytest.mark.xdist_group(group))
    if not (os.environ.get("PYTEST_XDIST_WORKER") and config.getvalue("loadgroup")):
        return
    if hasattr(item, "_id") and not item.nodeid.endswith(f"@{group}"):
        from _pytest.nodeid import NodeId

        item._id = NodeId.parse(f"{item.nodeid}@{group}")


def _module_of(item) -> str:
    return item.nodeid.split("::", 1)[0]


def _xdist_group(item) -> str | None:
    """The worker group ``item`` runs in when the suite runs on several workers, or None (any
    worker). In order:

    - ``docker``: every Docker test, on one worker: they build, list and evict this project's
      images and containers on the one daemon, so they run one at a time as in a serial run;
    - ``model``: every heavy run of the local model, on one worker, one after another: each keeps
      every core busy, and two at once only take longer each;
    - the test's module, when the test uses a module-scoped fixture (a cluster, a built wheel, a
      sim sweep, a model server): its module's tests share one worker, so the fixture is set up
      once, as in a serial run, not once per worker.
    """
    if item.get_closest_marker("docker"):
        return "docker"
    if item.get_closest_marker("model"):
        return "model"
    fixtures = getattr(item, "_fixtureinfo", None)
    if fixtures is not None and any(defs and defs[-1].scope == "module"
                                    for defs in fixtures.name2fixturedefs.values()):
        return "module:" + _module_of(item)
    return None


def _worker_groups(items) -> dict:
    """Each item's worker group (``_xdist_group``), with one rule across a module: its
    module-fixture tests join the ``docker`` or ``model`` group of a test in the same module. Split
    over two workers, the module's fixture (a cluster: about a minute of CPU) is set up twice."""
    groups = {item: _xdist_group(item) for item in items}
    pinned = {_module_of(item): group for item, group in groups.items()
              if group in ("docker", "model")}
    return {item: pinned.get(_module_of(item), group)
            if group and group.startswith("module:") else group
            for item, group in groups.items()}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(session, config, items):
    """Put each test in its worker group (``_xdist_group``) for pytest-xdist's ``--dist
    loadgroup``. Then shuffle modules, and the tests of each module (module fixtures still set up
    once per module), when ``--shuffle-seed`` is given; otherwise leave pytest's order alone."""
    for item, group in _worker_groups(items).items():
        if group is not None:
            _join_xdist_group(item, group, config)
    seed = config.getoption("--shuffle-seed")
    if seed is None:
        return
    import random

    rng = random.Random(seed)
    by_module: dict[str, list] = {}
    for item in items:
        by_module.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    modules = sorted(by_module)
    rng.shuffle(modules)
    shuffled = []
    for module in modules:
        tests = by_module[module]
        rng.shuffle(tests)
        shuffled.extend(tests)
    items[:] = shuffled


def pytest_runtest_setup(item):
    """An ``exclusive`` test needs the machine to itself (it stops every Ray of the user, or binds
    Ray's default ports): beside other workers it would take their runtimes down mid-test."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if item.get_closest_marker("exclusive") and workers > 1:
        pytest.fail(f"{item.nodeid} is marked exclusive and cannot run beside {workers - 1} other "
                    f"worker(s): run it alone (`pytest -m exclusive`, no -n), as `make test` does",
                    pytrace=False)
