"""Fixtures shared by the suite tests: the suite registry restored after a test (the registry,
resolve and plugin tests here; each suite's own fixtures are in ``tests/suites/<name>/conftest.py``)."""

from __future__ import annotations

import pytest


@pytest.fixture
def clean_registry(monkeypatch):
    """The suite registry as the built-in suites leave it, restored after the test: what a test
    registers, loads or imports as a plugin (``ratchet_suite_plugin_*``, ``toy_*``) is gone."""
    import sys

    from ratchet_ray.suites import registry

    saved = (dict(registry._REGISTRY), dict(registry._LOADED), registry._DISCOVERED)
    modules = set(sys.modules)
    monkeypatch.delenv(registry.ENV_VAR, raising=False)
    yield registry
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved[0])
    registry._LOADED.clear()
    registry._LOADED.update(saved[1])
    registry._DISCOVERED = saved[2]
    for name in set(sys.modules) - modules:
        if name.startswith(("ratchet_suite_plugin_", "toy_")):
            del sys.modules[name]
