"""Suites: the registry (built-in ``mbpp``, ``swebench``, ``sim``, ``mbpp_oracle`` plus user
suites), the one plugin contract and the suite protocol.

    from ratchet_ray.suites import SuitePlugin, register, suite_for
    register(SuitePlugin("records", RecordsSuite, settings=RecordsSettings))  # in a plugin module
    suite = suite_for(config)          # loads config.suite_plugins, then config.suite
    config = resolve_config(data)      # a run's LoopConfig, checked against the suites

``contract.py`` is what a suite gives the generic code (``SuitePlugin``: what it must provide
and what it may, with defaults); ``base.py`` what the suite object itself provides (tasks, a
grader, a Solver turn); ``registry.py`` holds the plugins and finds them (entry points,
``$RATCHET_SUITES``, ``suite_plugins``); ``plugins.py`` imports plugin modules; ``resolve.py``
checks a run's config against the registered suites; ``hooks.py`` is how the generic code asks
for a plugin's fields. Each built-in suite registers itself in its folder's
``registration.py`` (listed in ``registry.BUILTIN_PLUGINS``).
"""

from __future__ import annotations

from ratchet_ray.suites.base import AgentTurn, Grader, SolverTurn, Suite, split_tasks
from ratchet_ray.suites.contract import Cluster, EnvVar, FixHint, SuitePlugin
from ratchet_ray.suites.plugins import resolve_plugin
from ratchet_ray.suites.registry import (ENTRY_POINT_GROUP, ENV_VAR, SuitePluginError,
                                         SuiteRegistryError, get_suite, load_plugins, register,
                                         settings_for, suite_for, suite_names, unregister)
from ratchet_ray.suites.hooks import before_rounds, environment_checks
from ratchet_ray.suites.resolve import ConfigResolveError, resolve_config

__all__ = ["AgentTurn", "Cluster", "ConfigResolveError", "ENTRY_POINT_GROUP", "ENV_VAR", "EnvVar",
           "FixHint", "Grader", "SolverTurn", "Suite", "SuitePlugin", "SuitePluginError",
           "SuiteRegistryError", "before_rounds", "environment_checks", "get_suite",
           "load_plugins", "register", "resolve_config", "resolve_plugin", "settings_for",
           "split_tasks", "suite_for", "suite_names", "unregister"]
