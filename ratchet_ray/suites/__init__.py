"""Suites: the registry (built-in ``mbpp``, ``swebench``, ``sim`` plus user suites) and the protocol.

    from ratchet_ray.suites import register, get_suite, suite_for
    register("records", RecordsSuite, settings=RecordsSettings)   # in a user's plugin module
    suite = suite_for(config)          # loads config.suite_plugins, then config.suite

See ``registry.py`` for discovery (entry points, ``$RATCHET_SUITES``, ``suite_plugins``) and
what a registration brings, ``base.py`` for what a suite object provides and ``hooks.py`` for
how the generic code asks for the rest. Each built-in suite registers itself in its folder's
``registration.py`` (listed in ``registry.BUILTIN_PLUGINS``).
"""

from __future__ import annotations

from ratchet_ray.suites.base import AgentTurn, Grader, SolverTurn, Suite, split_tasks
from ratchet_ray.suites.registry import (ENTRY_POINT_GROUP, ENV_VAR, SuitePluginError,
                                         SuiteRegistryError, before_rounds,
                                         environment_checks, get_suite,
                                         load_plugins, register, settings_for, suite_for,
                                         suite_names, unregister)

__all__ = ["AgentTurn", "ENTRY_POINT_GROUP", "ENV_VAR", "Grader", "SolverTurn", "Suite", "SuitePluginError",
           "SuiteRegistryError", "before_rounds", "environment_checks", "get_suite",
           "load_plugins", "register", "settings_for", "split_tasks", "suite_for", "suite_names",
           "unregister"]
