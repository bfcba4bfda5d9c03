"""Suites: the registry (built-in ``mbpp``, ``swebench``, ``sim``, ``mbpp_oracle`` plus user
suites), the one plugin contract and the suite protocol.

    from ratchet_ray.suites import SuitePlugin, register, suite_for
    register(SuitePlugin("records", RecordsSuite, settings=RecordsSettings))  # in a plugin module
    suite = suite_for(config)          # loads config.suite_plugins, then config.suite
    config = resolve_config(data)      # a run's LoopConfig, checked against the suites
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
