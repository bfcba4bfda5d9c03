"""The suite registry: built-in suites, suites of installed packages, and suites of user modules.

Contracts:
- ``register(name, factory, *, settings=None, metaskill=None, configure=None, doctor=None,
  replace=False)`` adds a suite. ``factory`` is a zero-argument callable returning an object of
  the ``Suite`` protocol (a class usually) or a lazy ``"module:attr"`` string naming one. ``settings`` is the
  pydantic model of the suite's config section (``suite_settings.<name>`` in a LoopConfig, or
  the top-level shorthand ``<name>:`` in YAML and ``--set <name>.key=value``), ``metaskill`` the
  Markdown file of its default authoring prior (see ``bank.metaskills``), ``configure`` a
  function ``(config, settings) -> None`` that ``resolve_config`` calls once on a config of
  this suite (cross-section rules and derived values; it raises ``ValueError`` naming the fix),
  ``doctor`` a function ``(config, preflight) -> list[llm.doctor.Check]`` (or a lazy
  ``"module:attr"`` string) of the suite's environment checks, which must not raise;
  ``before_rounds`` a function ``(config, grade, tasks, run_dir) -> str | None`` (or a lazy
  ``"module:attr"``) a fresh run calls once its Grader pool is up and before round 0: ``grade``
  grades a list of ``(task, output)`` pairs on that pool (``loop.grade_pool.grade_all``: each
  ``GradeResult``, or a string naming why the pool failed it), and a returned message stops the
  run (``PreflightFailed``) before any round. A bad name or
  object raises ``SuiteRegistryError`` at once; registering a taken name raises it too unless
  it is the same factory again (a module imported twice) or ``replace=True``.
- Discovery (``discover()``, once per process before the first lookup): every entry point of the
  group ``ratchet_ray.suites`` (entry-point name = suite name, value = ``module:Factory``) and
  every plugin named in ``$RATCHET_SUITES`` (``os.pathsep``-separated).
- ``load_plugins(specs)`` imports user modules that call ``register`` at import time; a spec is
  a ``.py`` file path or a dotted module name (``plugins.py``), each loaded once per process. A
  missing file, a failing import or a module that registers nothing raises ``SuitePluginError``
  naming the spec and the fix. ``resolve_config`` loads a config's ``suite_plugins`` through
  it, and ``suite_for(config)`` loads them again in each Ray worker, so a suite named in the
  config works on every process.
- ``get_suite(name)`` / ``suite_for(config)`` instantiate a suite and check its shape; an
  unknown name lists the registered ones and how to add one.
- ``environment_checks(config, preflight=False)``: the run suite's registered ``doctor`` checks
  (none when it registered none), for ``ratchet doctor`` and, with ``preflight=True`` on a node
  with the grader's resources, a run's preflight.
- ``before_rounds(config, grade, tasks, run_dir)``: the run suite's registered hook's message
  (None when it registered none or has nothing to say).
- Suite hooks for the generic code (``hooks.py`` reads them; each optional): ``resources``
  (role -> custom Ray resources its actors always request), ``critic`` (the Critic's review
  prompt: ``"code"``, ``"patch"`` or a function / ``"module:attr"``), ``subset_group`` (task id
  -> the group ``jobs.select_subset`` balances, e.g. a repository) with ``subset_group_label``,
  ``sampling_overrides`` (temperature -> ``key=value`` overrides that make the suite's own
  Solver sample at it, for ``jobs.baseline --temperature``), ``commands`` (``"module:attr"`` of a
  list of click commands added to ``ratchet``; a module of the CLI layer), ``offline_tasks``
  (its tasks load without a network or large download, so reports may show their statements)
  ``sweep_report`` (run dirs -> ``(title, rows, columns)``, extra columns of a sweep report)
  and ``round_report`` (``(config, start) -> value``: called with None as a round starts and
  with that call's value as it ends, whose value becomes ``RoundSummary.suite_report``) and
  ``placement`` (``(config, role) -> actors.placement.Placement | None``: where the role's pool
  runs each job best, e.g. on the node holding the job's container image) and
  ``impossible_twin`` (``task -> Task | None``: the grading task of its impossible twin, the
  cheat probe's; ``suites.base.ImpossibleTwins``).
- ``settings_for(config)`` is the run suite's ``suite_settings`` section validated by the model
  it registered (``resolve_config`` validates every section the same way); a registered
  ``metaskill`` becomes ``config.meta.default_file`` there, which the SkillBank reads.
- Registrations, loaded plugins and discovery are per process (module state); a failed
  discovery is retried, and reported, on the next lookup.
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ratchet_ray.suites.plugins import (ENTRY_POINT_GROUP, ENV_VAR, MODULE_NAME,
                                        SuitePluginError, entry_point_factory, import_plugin,
                                        plugin_key)

BUILTIN_OUTPUT_KINDS = ("code",)
_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_SUITE_METHODS = ("load_tasks", "make_grader")
_TURN_METHODS = ("solver_messages", "parse_output")
_AGENT_METHODS = ("solve_agent", "solver_settings")


class SuiteRegistryError(ValueError):
    """A registration or lookup is invalid; the message names the suite and the fix."""


@dataclass(frozen=True)
class Registration:
    name: str
    factory: Callable[[], Any] | str
    settings: type | None = None
    metaskill: Path | None = None
    origin: str = "register()"
    configure: Callable[[Any, Any], None] | None = None
    doctor: Callable[[Any, bool], list] | str | None = None
    before_rounds: Callable[..., str | None] | str | None = None
    resources: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    critic: Callable[..., list] | str = "code"
    subset_group: Callable[[str], str] | str | None = None
    subset_group_label: str = "groups"
    sampling_overrides: Callable[[float], list[str]] | str | None = None
    commands: str | None = None
    offline_tasks: bool = False
    sweep_report: Callable[[list], tuple] | str | None = None
    round_report: Callable[[Any, Any], Any] | str | None = None
    placement: Callable[[Any, str], Any] | str | None = None
    impossible_twin: Callable[[Any], Any] | str | None = None


CRITIC_FLAVOURS = ("code", "patch")
"""The Critic's built-in review prompts (``roles.prompts.critic``): a failing function and its
test, or a repository patch and its test log."""
HOOKS = ("subset_group", "sampling_overrides", "sweep_report", "round_report", "placement",
         "impossible_twin")


_REGISTRY: dict[str, Registration] = {}
_LOADED: dict[str, tuple[str, ...]] = {}  # plugin key -> suite names it registered
_DISCOVERED = False


def _target(factory: Callable[[], Any] | str) -> str:
    """``module:attr`` of a factory; an entry point's loader names the target it loads."""
    if isinstance(factory, str):
        return factory
    return getattr(factory, "suite_target", None) or (
        f"{getattr(factory, '__module__', None)}:{getattr(factory, '__qualname__', id(factory))}")


def _same_factory(a: Callable[[], Any] | str, b: Callable[[], Any] | str) -> bool:
    # The same target again: a module imported twice, or an entry point's module that also
    # calls register() for itself when the entry point loads it.
    return a is b or _target(a) == _target(b)


def _is_target(value: Any) -> bool:
    """Whether ``value`` is a lazy ``"module:attr"`` string."""
    return isinstance(value, str) and bool(re.fullmatch(rf"{MODULE_NAME.pattern}:[A-Za-z_]\w*", value))


def register(name: str, factory: Callable[[], Any] | str, *, settings: type | None = None,
             metaskill: str | Path | None = None,
             configure: Callable[[Any, Any], None] | None = None,
             doctor: Callable[[Any, bool], list] | str | None = None, replace: bool = False,
             origin: str = "register()",
             before_rounds: Callable[..., str | None] | str | None = None,
             **hooks: Any) -> None:
    """Add the suite ``name`` (module contracts); ``hooks``: the optional suite hooks
    (``resources``, ``critic``, ``subset_group``, ``subset_group_label``,
    ``sampling_overrides``, ``commands``, ``offline_tasks``, ``sweep_report``,
    ``round_report``, ``placement``, ``impossible_twin``)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise SuiteRegistryError(f"suite name {name!r}: use 1-40 lowercase letters, digits or '_', "
                                 "starting with a letter (it names results/<suite>/ folders)")
    old = _REGISTRY.get(name)
    if old is not None and not replace and not _same_factory(old.factory, factory):
        raise SuiteRegistryError(f"suite {name!r} is already registered by {old.origin}; choose "
                                 "another name, or pass replace=True to override it on purpose")
    if isinstance(factory, str):
        if not _is_target(factory):
            raise SuiteRegistryError(f"suite {name!r}: factory {factory!r} is not 'module:attr'")
    elif not callable(factory):
        raise SuiteRegistryError(f"suite {name!r}: factory {factory!r} is not callable; pass the "
                                 "Suite class (or a zero-argument function returning a suite)")
    elif isinstance(factory, type):
        _check_shape(name, factory)
    if settings is not None and not (isinstance(settings, type) and
                                     hasattr(settings, "model_validate")):
        raise SuiteRegistryError(f"suite {name!r}: settings must be a pydantic model class, "
                                 f"got {settings!r}")
    if configure is not None and not callable(configure):
        raise SuiteRegistryError(f"suite {name!r}: configure must be a function "
                                 f"(config, settings) -> None, got {configure!r}")
    if doctor is not None and not (callable(doctor) or _is_target(doctor)):
        raise SuiteRegistryError(f"suite {name!r}: doctor must be a function (config, preflight) "
                                 f"-> list of checks, or 'module:attr' naming one; got {doctor!r}")
    if before_rounds is not None and not (callable(before_rounds) or _is_target(before_rounds)):
        raise SuiteRegistryError(f"suite {name!r}: before_rounds must be a function (config, "
                                 f"grade, tasks, run_dir) -> str | None, or 'module:attr' "
                                 f"naming one; got {before_rounds!r}")
    meta = Path(metaskill).resolve() if metaskill is not None else None
    if meta is not None and not meta.is_file():
        raise SuiteRegistryError(f"suite {name!r}: meta-skill file {meta} does not exist; pass "
                                 "the path of a Markdown authoring prior (see configs/meta_skills)")
    checked = _check_hooks(name, hooks)
    _REGISTRY[name] = Registration(name, factory, settings, meta, origin, configure, doctor,
                                   before_rounds, **checked)


def _check_hooks(name: str, hooks: dict[str, Any]) -> dict[str, Any]:
    """``hooks`` validated (``SuiteRegistryError`` naming the suite, the hook and the fix)."""
    known = {f for f in Registration.__dataclass_fields__} - {
        "name", "factory", "settings", "metaskill", "origin", "configure", "doctor",
        "before_rounds"}
    unknown = sorted(set(hooks) - known)
    if unknown:
        raise SuiteRegistryError(f"suite {name!r}: unknown register() argument(s) "
                                 f"{', '.join(unknown)}; valid hooks: {', '.join(sorted(known))}")
    for key in HOOKS:
        value = hooks.get(key)
        if value is not None and not (callable(value) or _is_target(value)):
            raise SuiteRegistryError(f"suite {name!r}: {key} must be a function or "
                                     f"'module:attr' naming one; got {value!r}")
    critic = hooks.get("critic", "code")
    if not (critic in CRITIC_FLAVOURS or callable(critic) or _is_target(critic)):
        raise SuiteRegistryError(f"suite {name!r}: critic {critic!r}: use one of "
                                 f"{', '.join(CRITIC_FLAVOURS)} or a prompt function "
                                 "(task, capsule, skill, *, prefill, templates) -> messages")
    commands = hooks.get("commands")
    if commands is not None and not _is_target(commands):
        raise SuiteRegistryError(f"suite {name!r}: commands {commands!r} must be 'module:attr' "
                                 "naming a list of click commands (a module of the CLI layer)")
    resources = hooks.get("resources") or {}
    if not (isinstance(resources, Mapping) and all(
            isinstance(role, str) and isinstance(wanted, Mapping) and all(
                isinstance(k, str) and isinstance(v, (int, float)) and v > 0
                for k, v in wanted.items()) for role, wanted in resources.items())):
        raise SuiteRegistryError(f"suite {name!r}: resources {resources!r} must map a role "
                                 "(solver, grader, ...) to custom Ray resources, e.g. "
                                 "{'grader': {'docker': 1}}")
    if "resources" in hooks:
        hooks = {**hooks, "resources": {r: dict(w) for r, w in resources.items()}}
    return hooks


def unregister(name: str) -> None:
    """Remove ``name`` (tests and interactive sessions); unknown names raise ``SuiteRegistryError``."""
    if _REGISTRY.pop(name, None) is None:
        raise SuiteRegistryError(f"suite {name!r} is not registered")


def _check_shape(name: str, obj: Any) -> None:
    missing = [a for a in ("name", "output_kind", *_SUITE_METHODS) if not hasattr(obj, a)]
    kind = getattr(obj, "output_kind", None)
    if not missing and getattr(obj, "name") != name:
        raise SuiteRegistryError(f"suite {name!r}: its name attribute is {obj.name!r}; make them "
                                 "equal (tasks, evidence and results/<suite>/ are filed under it)")
    if not missing and not (isinstance(kind, str) and kind):
        raise SuiteRegistryError(f"suite {name!r}: output_kind {kind!r} must be a non-empty "
                                 f"string ({', '.join(BUILTIN_OUTPUT_KINDS)} or the suite's own)")
    if not missing and kind not in BUILTIN_OUTPUT_KINDS:
        methods = _AGENT_METHODS if hasattr(obj, "solve_agent") else _TURN_METHODS
        missing = [a for a in methods if not callable(getattr(obj, a, None))]
        if missing:
            raise SuiteRegistryError(
                f"suite {name!r}: output kind {kind!r} is its own, so the suite must define "
                f"{', '.join(missing)} (see ratchet_ray.suites.base.SolverTurn, or AgentTurn "
                f"for an agent); or use one of {BUILTIN_OUTPUT_KINDS}")
    if missing:
        raise SuiteRegistryError(f"suite {name!r}: {obj!r} lacks {', '.join(missing)}; a suite "
                                 "follows ratchet_ray.suites.base.Suite")


def load_plugins(specs: Iterable[str], *, source: str = "suite_plugins") -> list[str]:
    """Import each plugin once; return the suite names they registered (module contracts)."""
    names: list[str] = []
    for spec in specs:
        key, path = plugin_key(spec)
        if key not in _LOADED:
            before = set(_REGISTRY)
            module_name = import_plugin(key, path, source)
            # A module imported before (by the user's own code) registered its suites then.
            added = tuple(sorted(set(_REGISTRY) - before)) or tuple(sorted(
                n for n, r in _REGISTRY.items()
                if getattr(r.factory, "__module__", None) == module_name))
            if not added:
                raise SuitePluginError(
                    f"suite plugin {key} (from {source}) registered no suite; call "
                    "ratchet_ray.suites.register('<name>', <SuiteClass>) at module level")
            _LOADED[key] = added
        names.extend(_LOADED[key])
    return names


def discover(*, force: bool = False) -> None:
    """Register entry-point suites and load ``$RATCHET_SUITES`` plugins (once per process)."""
    global _DISCOVERED
    if _DISCOVERED and not force:
        return
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(getattr(ep, "dist", None), "name", "?")
        origin = f"entry point {ep.name} = {ep.value} of package {dist}"
        try:
            register(ep.name, entry_point_factory(ep, dist), origin=origin)
        except SuiteRegistryError as exc:
            raise SuitePluginError(f"{origin} (group {ENTRY_POINT_GROUP}): {exc}") from exc
    specs = [s for s in os.environ.get(ENV_VAR, "").split(os.pathsep) if s.strip()]
    load_plugins(specs, source=f"${ENV_VAR}")
    _DISCOVERED = True  # only once everything loaded: a failure is reported on every lookup


def suite_names() -> list[str]:
    """Every registered suite name, sorted (after discovery)."""
    discover()
    return sorted(_REGISTRY)


def registered_so_far() -> list[Registration]:
    """The suites registered in this process until now, without discovery (by name)."""
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def registration(name: str) -> Registration:
    discover()
    if name not in _REGISTRY:
        raise SuiteRegistryError(
            f"unknown suite {name!r}; valid suites: {', '.join(sorted(_REGISTRY))}. Add one with "
            f"ratchet_ray.suites.register() in a module named in the config's suite_plugins, in "
            f"${ENV_VAR}, or in an entry point of group {ENTRY_POINT_GROUP}")
    return _REGISTRY[name]


def registered(name: str) -> Registration | None:
    """The registration of ``name``, or None when no suite of that name is registered."""
    discover()
    return _REGISTRY.get(name)


def resolve(target: Callable[..., Any] | str) -> Callable[..., Any]:
    """A callable, or the one a ``"module:attr"`` string names (imported now)."""
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)
    return target


def get_suite(name: str) -> Any:
    """Instantiate the suite called ``name``; unknown names list the valid ones."""
    suite = resolve(registration(name).factory)()
    _check_shape(name, suite)
    return suite


def suite_for(config: Any) -> Any:
    """The suite of a run: loads ``config.suite_plugins`` in this process, then ``get_suite``."""
    load_plugins(getattr(config, "suite_plugins", ()))
    return get_suite(config.suite)


def environment_checks(config: Any, preflight: bool = False) -> list:
    """The run suite's registered ``doctor`` checks (module contracts)."""
    load_plugins(getattr(config, "suite_plugins", ()))
    doctor = registration(config.suite).doctor
    return [] if doctor is None else list(resolve(doctor)(config, preflight))


def before_rounds(config: Any, grade: Callable[..., list], tasks: Any,
                  run_dir: Any) -> str | None:
    """The run suite's registered ``before_rounds`` hook's message, if any (module contracts)."""
    load_plugins(getattr(config, "suite_plugins", ()))
    hook = registration(config.suite).before_rounds
    return None if hook is None else resolve(hook)(config, grade, tasks, run_dir)


def validate_settings(name: str, section: Any) -> Any:
    """The suite's settings model validated from ``section`` (a dict, or None for defaults)."""
    reg = registration(name)
    if reg.settings is None:
        raise SuiteRegistryError(f"suite_settings.{name}: suite {name!r} registered no settings "
                                 "model; remove the section or pass settings= to register()")
    try:
        return reg.settings.model_validate(section or {})
    except ValueError as exc:  # pydantic's ValidationError: name the section and its keys
        errors = exc.errors() if hasattr(exc, "errors") else [{"loc": (), "msg": str(exc)}]
        problems = "; ".join(f"{'.'.join((name, *map(str, e['loc'])))}: {e['msg']}"
                             for e in errors)
        raise SuiteRegistryError(f"{problems} (valid keys of the {name} section: "
                                 f"{', '.join(sorted(reg.settings.model_fields))})") from None


def settings_for(config: Any, name: str | None = None) -> Any:
    """The validated ``suite_settings.<name>`` section of ``config`` (``name``: the run's suite);
    the registered model's defaults when the config has no such section."""
    load_plugins(getattr(config, "suite_plugins", ()))
    name = name or config.suite
    return validate_settings(name, config.suite_settings.get(name))


def settings_sections() -> list[str]:
    """Names of the registered suites that have a settings model (their config sections)."""
    discover()
    return sorted(n for n, r in _REGISTRY.items() if r.settings is not None)


BUILTIN_ORIGIN = "ratchet_ray (built in)"
BUILTIN_PLUGINS = (
    "ratchet_ray.suites.mbpp.registration",
    "ratchet_ray.suites.swebench.registration",
    "ratchet_ray.suites.sim.registration",
    "ratchet_ray.suites.mbpp_oracle.registration",
)
"""The built-in suites: each registers itself in its own folder, the way a plugin does (the one
place outside the suites' folders that names them); config and the generic code know none."""


def _register_builtins() -> None:
    for module in BUILTIN_PLUGINS:
        importlib.import_module(module)


_register_builtins()
