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
_MBPP = ROOT.parent / "shared" / "data" / "MbppPlus-v0.2.0.jsonl.gz"
if _MBPP.exists():
    os.environ.setdefault("MBPP_OVERRIDE_PATH", str(_MBPP))


def _ship_test_doubles_by_value() -> None:
    # Ray workers cannot import tests/ modules: the doubles travel inside the pickles instead.
    # Registered once for the session; unregistering would break every later test.
    import ray.cloudpickle

    import fakes

    ray.cloudpickle.register_pickle_by_value(fakes)


_ship_test_doubles_by_value()


@pytest.fixture(scope="session")
def _ray_session():
    """Shuts the shared runtime down once, at the end of the test session."""
    yield
    import ray

    if ray.is_initialized():
        ray.shutdown()


@pytest.fixture
def ray_local(_ray_session):
    """A real local Ray runtime bound to 127.0.0.1, shared by the tests that ask for it.

    Started on first use, and again when an earlier test's own driver (``run_loop`` without this
    fixture starts and stops its own Ray) shut it down: a stale handle would let Ray auto-start
    a runtime with none of these settings."""
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=4, _node_ip_address="127.0.0.1", include_dashboard=False,
                 configure_logging=False, runtime_env={"env_vars": {"HF_HUB_OFFLINE": "1"}},
                 log_to_driver=False)
    return ray


@pytest.fixture
def hash_embedder():
    from fakes import HashEmbedder

    return HashEmbedder()
