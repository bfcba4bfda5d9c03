"""What the generic code asks a suite for, by the suite's name, through its registration.

The loop, the roles, the jobs, the CLI and the reports never name a suite: each asks here for a
field of the suite's ``SuitePlugin`` (``contract.py``). Contracts:
- A suite that declared nothing for a field gets the generic behaviour (the defaults in
  docs/suites.md; no impossible twins: the cheat probe skips the suite; without a ``Cluster``:
  no custom resources, no locality, no check before round 0, no round report).
- The questions over every suite (``fix_hint`` without a suite, ``task_id_patterns``...) answer
  for the suites registered in this process.
- Looking up a suite not registered in this process raises ``SuiteRegistryError`` naming the
  valid suites, except ``critic_prompt``, ``sweep_report`` and ``skill_truth`` (see there);
  callers that know the run's config load its ``suite_plugins`` first, as
  ``environment_checks`` and ``before_rounds`` do themselves.
- ``"module:attr"`` hooks are imported on first use.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any, Callable, Sequence

from ratchet_ray.suites import registry


def _suite_class(suite: str) -> Any | None:
    """The object ``suite``'s factory names (its class, for the built-ins), imported now; None
    for a suite not registered in this process."""
    factory = getattr(registry.registered(suite), "factory", None)
    return None if factory is None else registry.resolve(factory)


def output_kind(suite: str) -> str | None:
    """What ``suite``'s Solver returns (``code``, ``patch``...), read from the class its factory
    names without building it; None for an unregistered suite or a factory function."""
    return getattr(_suite_class(suite), "output_kind", None)


def solver_note(suite: str, config: Any) -> str | None:
    """What ``suite``'s Solver is where results are shown, when the suite says (its class's
    ``solver_note(config)``: SWE-bench's is not the paper's agent); None otherwise."""
    note = getattr(_suite_class(suite), "solver_note", None)
    return note(config) if callable(note) else note


def setting_line(config: Any) -> str:
    """``settings.setting_label.setting_line`` with the Solver's note of the config's suite (a
    suite not registered in this process adds none)."""
    from ratchet_ray.settings.setting_label import config_value
    from ratchet_ray.settings.setting_label import setting_line as line

    suite = config_value(config, "suite")
    return line(config, solver=solver_note(suite, config) if suite else None)


def actor_resources(suite: str, role: str) -> dict[str, float]:
    """Custom Ray resources every ``role`` actor of ``suite`` requests (e.g. ``{"docker": 1}``)."""
    return dict(registry.registration(suite).cluster.resources.get(role, {}))


def critic_prompt(suite: str) -> str | Callable[..., list]:
    """The Critic's review prompt of ``suite``: a built-in flavour (``registry.CRITIC_FLAVOURS``)
    or the suite's prompt function. A suite not registered in this process (a task of a plugin
    whose module this process never loaded) gets ``"code"``, the generic review."""
    critic = getattr(registry.registered(suite), "critic", "code")
    return critic if critic in registry.CRITIC_FLAVOURS else registry.resolve(critic)


def subset_grouping(suite: str) -> tuple[str, Callable[[str], str]] | None:
    """``(label, task id -> group)`` that subset selection balances, or None (one group)."""
    own = registry.get_suite(suite)
    group = getattr(own, "subset_group", None)
    return None if group is None else (getattr(own, "subset_group_label", "groups"), group)


def sampling_overrides(suite: str, temperature: float) -> list[str]:
    """``key=value`` overrides that make ``suite``'s own Solver sample at ``temperature`` (beyond
    ``llm.temperature``): the suite's optional ``sampling_overrides`` method, none without it."""
    own = getattr(registry.get_suite(suite), "sampling_overrides", None)
    return [] if own is None else list(own(temperature))


def suite_commands() -> list[Any]:
    """The click commands the registered suites add to ``ratchet`` (in suite-name order). A
    plugin that fails to load adds none here: ``ratchet`` still starts, and the failure is
    reported by the first command that looks a suite up (discovery is retried then)."""
    with contextlib.suppress(registry.SuitePluginError):
        registry.discover()
    return [command for reg in registry.registered_so_far() if reg.commands is not None
            for command in registry.resolve(reg.commands)]


def loads_offline(suite: str) -> bool:
    """Whether ``suite``'s tasks load without a network or a large download."""
    return registry.registration(suite).offline_tasks


def sweep_report(suite: str, run_dirs: Sequence[Path]) -> tuple[str, list, tuple] | None:
    """``(title, rows, columns)`` the suite adds to a sweep report of its ``run_dirs`` (None:
    nothing, also for a suite not registered in this process: a report may read the runs of a
    plugin it never loaded). May raise: the report then shows why those columns are missing."""
    hook = getattr(registry.registered(suite), "sweep_report", None)
    if hook is None:
        return None
    title, rows, columns = registry.resolve(hook)(list(run_dirs))
    return title, rows, tuple(columns)


def environment_checks(config: Any, preflight: bool = False) -> list:
    """The run suite's ``doctor`` checks (none when it has none), for ``ratchet doctor`` and,
    with ``preflight=True`` on a node with the grader's resources, a run's preflight."""
    registry.load_plugins(getattr(config, "suite_plugins", ()))
    doctor = registry.registration(config.suite).doctor
    return [] if doctor is None else list(registry.resolve(doctor)(config, preflight))


def before_rounds(config: Any, grade: Callable[..., list], tasks: Any,
                  run_dir: Any) -> str | None:
    """The run suite's ``cluster.before_rounds`` hook's message: a fresh run stops on it before
    round 0; None when the suite has no such hook or nothing to say."""
    registry.load_plugins(getattr(config, "suite_plugins", ()))
    hook = registry.registration(config.suite).cluster.before_rounds
    return None if hook is None else registry.resolve(hook)(config, grade, tasks, run_dir)


def placement(config: Any, role: str) -> Any:
    """The run suite's ``Placement`` for ``role``'s pool (``actors.placement``: which node runs
    each job best), or None: no locality (the suite registered none, or none for the role)."""
    hook = registry.registration(config.suite).cluster.placement
    return None if hook is None else registry.resolve(hook)(config, role)


def round_report(config: Any, start: Any) -> Any:
    """The run suite's ``round_report`` hook's answer (``Cluster.round_report``; None without
    one); a hook that raises is logged and reported as ``{"error": ...}``, never stops a round."""
    hook = registry.registration(config.suite).cluster.round_report
    if hook is None:
        return None
    try:
        return registry.resolve(hook)(config, start)
    except Exception as exc:  # noqa: BLE001 - informative only
        logging.getLogger(__name__).warning("suite %s: round_report failed: %s", config.suite, exc)
        return {"error": f"{type(exc).__name__}: {exc}"[:500]}


def impossible_twin(suite: str, task: Any) -> Any:
    """The grading task of ``task``'s impossible twin (``suites.base.as_impossible_twin``), or
    None: the suite registered no ``impossible_twin`` hook, or cannot twin this task."""
    hook = registry.registration(suite).impossible_twin
    return None if hook is None else registry.resolve(hook)(task)


def skill_truth(suite: str) -> Callable[[Path], tuple[dict[str, str], set[str]]] | None:
    """The suite's ``skill_truth`` hook (a simulated world's knowledge of each skill's effect),
    or None: the suite knows no truth (a real benchmark) or is not registered here."""
    hook = getattr(registry.registered(suite), "skill_truth", None)
    return None if hook is None else registry.resolve(hook)


def _every_plugin() -> list[Any]:
    """Every registered suite's ``SuitePlugin``, in suite-name order (after discovery)."""
    return [registry.registration(name) for name in registry.suite_names()]


def fix_hint(message: str, suite: str | None = None) -> str | None:
    """The first suite fix hint (``SuitePlugin.fix_hints``) whose pattern ``message`` contains:
    ``suite``'s only when given and registered, else every registered suite's in name order;
    None when none matches (the caller's generic hints then apply)."""
    plugin = registry.registered(suite) if suite is not None else None
    plugins = [plugin] if plugin is not None else _every_plugin()
    return next((hint for p in plugins if (hint := p.fix_for(message)) is not None), None)


def task_id_patterns() -> list[str]:
    """Every registered suite's ``task_id_pattern`` (suite-name order)."""
    return [p.task_id_pattern for p in _every_plugin() if p.task_id_pattern is not None]


def local_resources() -> dict[str, float]:
    """The custom Ray resources a local Ray started on this machine offers: for each resource
    any registered suite declares in ``local_resources``, the largest amount declared."""
    offered: dict[str, float] = {}
    for plugin in _every_plugin():
        for key, amount in plugin.cluster.local_resources.items():
            offered[key] = max(offered.get(key, 0), amount)
    return offered


def cluster_node_types() -> dict[str, str]:
    """Custom resource -> the cluster.yaml node type offering it, as the suites declare."""
    return {k: v for p in _every_plugin() for k, v in p.cluster.node_types.items()}


def env_vars() -> list[Any]:
    """Every registered suite's ``EnvVar`` (``contract.EnvVar``), each name once, by name."""
    found: dict[str, Any] = {}
    for plugin in _every_plugin():
        for var in plugin.env_vars:
            found.setdefault(var.name, var)
    return [found[k] for k in sorted(found)]


def forwarded_env_vars() -> list[str]:
    """Names of the suites' environment variables a sweep forwards to its jobs."""
    return [v.name for v in env_vars() if v.forward]


def operational_keys(suite: str) -> dict[str, str]:
    """The keys of ``suite``'s settings section a resumed run takes edited, each with why
    (``SuitePlugin.operational_keys``); {} for a suite not registered in this process (every
    key of its section then counts as measuring)."""
    plugin = registry.registered(suite)
    return dict(plugin.operational_keys) if plugin is not None else {}


def moved_keys() -> dict[str, dict[str, str]]:
    """Old config key -> {suite: the suite-section key it moved to}, over the registered
    suites' ``SuitePlugin.moved_keys``."""
    moved: dict[str, dict[str, str]] = {}
    for plugin in _every_plugin():
        for old, new in plugin.moved_keys.items():
            moved.setdefault(old, {})[plugin.name] = new
    return moved
