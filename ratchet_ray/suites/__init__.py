"""Suites: the registry (built-in ``mbpp``, ``swebench``, ``sim`` plus user suites) and the protocol.

    from ratchet_ray.suites import register, get_suite, suite_for
    register("records", RecordsSuite, settings=RecordsSettings)   # in a user's plugin module
    suite = suite_for(config)          # loads config.suite_plugins, then config.suite
    config = resolve_config(data)      # a run's LoopConfig, checked against the suites

See ``registry.py`` for discovery (entry points, ``$RATCHET_SUITES``, ``suite_plugins``) and
what a registration brings, ``plugins.py`` for how plugin modules are imported, ``resolve.py``
for how a run's config is checked against the registered suites, ``base.py`` for what a suite
object provides and ``hooks.py`` for how the generic code asks for the rest. Each built-in suite registers itself in its folder's
``registration.py`` (listed in ``registry.BUILTIN_PLUGINS``).
"""

from __future__ import annotations

from ratchet_ray.suites.base import AgentTurn, Grader, SolverTurn, Suite, split_tasks
from ratchet_ray.suites.plugins import resolve_plugin
from ratchet_ray.suites.registry import (ENTRY_POINT_GROUP, ENV_VAR, SuitePluginError,
                                         SuiteRegistryError, before_rounds,
                                         environment_checks, get_suite,
                                         load_plugins, register, settings_for, suite_for,
                                         suite_names, unregister)
from ratchet_ray.suites.resolve import ConfigResolveError, resolve_config

__all__ = ["AgentTurn", "ConfigResolveError", "ENTRY_POINT_GROUP", "ENV_VAR", "Grader",
           "SolverTurn", "Suite", "SuitePluginError", "SuiteRegistryError", "before_rounds",
           "environment_checks", "get_suite", "load_plugins", "register", "resolve_config",
           "resolve_plugin", "settings_for", "split_tasks", "suite_for", "suite_names",
           "unregister"]
