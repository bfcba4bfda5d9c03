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


@pytest.fixture(scope="session")
def ray_local():
    """A real local Ray runtime bound to 127.0.0.1, shared by the whole test session."""
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=4, _node_ip_address="127.0.0.1", include_dashboard=False,
                 configure_logging=False, runtime_env={"env_vars": {"HF_HUB_OFFLINE": "1"}},
                 log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def hash_embedder():
    from fakes import HashEmbedder

    return HashEmbedder()
