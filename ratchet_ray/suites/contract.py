"""The one contract of a suite plugin: everything a suite gives the generic code, in one object.

Its shape is Inspect's (``Task(dataset, solver, scorer)``): a core every suite fills (``name``,
``factory``, ``settings``, ``moved_keys``, ``configure``, ``metaskill``, ``critic``) and optional
extensions, each with a default giving the generic behaviour (a function field also takes a lazy
``"module:attr"`` string, imported on first use); ``cluster`` is the extension of a suite whose
actors need a node's own service. Each field's meaning: docs/suites.md, "What the plugin may
declare" (``doctor``'s checks never raise). ``registry.register(plugin)`` adds one; the generic
code asks ``suites.hooks`` for a plugin's fields, never for a suite by name.

A bad field raises ``SuiteRegistryError`` naming the suite, the field and the fix when the
plugin is built. ``origin`` says who registered it (in "name taken" errors).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Mapping

from ratchet_ray.suites.plugins import MODULE_NAME

BUILTIN_OUTPUT_KINDS = ("code",)
CRITIC_FLAVOURS = ("code", "patch")
"""The Critic's built-in review prompts (``roles.critic_prompt``): a failing function and its
test, or a repository patch and its test log."""
HOOKS = ("sweep_report", "impossible_twin", "doctor", "skill_truth")
CLUSTER_HOOKS = ("before_rounds", "placement", "round_report")
"""Fields that are functions or lazy ``"module:attr"`` strings."""
_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_SUITE_METHODS = ("load_tasks", "make_grader")
_TURN_METHODS = ("solver_messages", "parse_output")
_AGENT_METHODS = ("solve_agent", "solver_settings")


class SuiteRegistryError(ValueError):
    """A registration or lookup is invalid; the message names the suite and the fix."""


@dataclass(frozen=True)
class FixHint:
    """``hint`` for an infrastructure failure whose status or message contains a pattern."""

    patterns: tuple[str, ...]
    hint: str


@dataclass(frozen=True)
class EnvVar:
    """An environment variable a suite reads. ``config_key``: the setting whose default it gives;
    ``forward``: a sweep passes the submitting shell's value to its jobs (a data path, never a
    machine-local address such as a Docker socket, which each node has its own of)."""

    name: str
    help: str
    config_key: str | None = None
    forward: bool = False


@dataclass(frozen=True)
class Cluster:
    """The extension of a suite whose Solver and grader need more than a CPU of any node
    (Inspect's ``sandbox``, over a Ray cluster; SWE-bench: a Docker daemon with the image).
    Fields: docs/suites.md, the ``Cluster`` table. ``before_rounds``' ``grade`` grades ``(task,
    output)`` pairs on the run's Grader pool; ``round_report``'s end call gets what its start call
    returned. A hook may live in the loop layer (it may use Ray): the registration names it by
    string, so the suite's folder stays plain library."""

    resources: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    local_resources: Mapping[str, float] = field(default_factory=dict)
    node_types: Mapping[str, str] = field(default_factory=dict)
    before_rounds: Callable[..., str | None] | str | None = None
    placement: Callable[[Any, str], Any] | str | None = None
    round_report: Callable[[Any, Any], Any] | str | None = None

    def __post_init__(self) -> None:  # stored as copies of the caller's mappings
        object.__setattr__(self, "resources", {r: dict(w) for r, w in self.resources.items()}
                           if isinstance(self.resources, Mapping) else self.resources)
        for key in ("local_resources", "node_types"):
            value = getattr(self, key)
            object.__setattr__(self, key, dict(value) if isinstance(value, Mapping) else value)


def is_target(value: Any) -> bool:
    """Whether ``value`` is a lazy ``"module:attr"`` string."""
    return isinstance(value, str) and bool(
        re.fullmatch(rf"{MODULE_NAME.pattern}:[A-Za-z_]\w*", value))


@dataclass(frozen=True)
class SuitePlugin:
    """One suite: what it must provide and what it may (module contract)."""

    name: str  # the core
    factory: Callable[[], Any] | str
    settings: type | None = None
    metaskill: Path | None = None
    origin: str = "register()"
    configure: Callable[[Any, Any], None] | None = None
    moved_keys: Mapping[str, str] = field(default_factory=dict)
    operational_keys: Mapping[str, str] = field(default_factory=dict)  # --resume
    critic: Callable[..., list] | str = "code"
    doctor: Callable[[Any, bool], list] | str | None = None  # its environment
    fix_hints: tuple[FixHint, ...] = ()
    env_vars: tuple[EnvVar, ...] = ()
    task_id_pattern: str | None = None  # its reports and tools
    commands: str | None = None
    offline_tasks: bool = False
    sweep_report: Callable[[list], tuple] | str | None = None
    impossible_twin: Callable[[Any], Any] | str | None = None
    skill_truth: Callable[[Path], tuple[dict[str, str], set[str]]] | str | None = None
    cluster: Cluster = field(default_factory=Cluster)  # a distributed, containerised suite's

    def __post_init__(self) -> None:
        _check(self)
        # Stored normalised: a copy of the caller's mappings, the prior as an absolute path.
        set_ = object.__setattr__
        set_(self, "moved_keys", dict(self.moved_keys))
        set_(self, "operational_keys", dict(self.operational_keys))
        set_(self, "fix_hints", tuple(self.fix_hints))
        set_(self, "env_vars", tuple(self.env_vars))
        if self.metaskill is not None:
            set_(self, "metaskill", Path(self.metaskill).resolve())

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def fix_for(self, message: str) -> str | None:
        """The hint of the first ``fix_hints`` item whose pattern ``message`` contains."""
        low = message.lower()
        return next((h.hint for h in self.fix_hints if any(p in low for p in h.patterns)), None)


def _check(p: SuitePlugin) -> None:
    """``SuiteRegistryError`` naming the suite, the field and the fix for a bad field."""
    name = p.name
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise SuiteRegistryError(f"suite name {name!r}: use 1-40 lowercase letters, digits or '_', "
                                 "starting with a letter (it names results/<suite>/ folders)")
    _check_factory(name, p.factory)
    if p.settings is not None and not (isinstance(p.settings, type) and
                                       hasattr(p.settings, "model_validate")):
        raise SuiteRegistryError(f"suite {name!r}: settings must be a pydantic model class, "
                                 f"got {p.settings!r}")
    if p.configure is not None and not callable(p.configure):
        raise SuiteRegistryError(f"suite {name!r}: configure must be a function "
                                 f"(config, settings) -> None, got {p.configure!r}")
    for key in HOOKS:
        _check_hook(name, key, getattr(p, key))
    _check_cluster(name, p.cluster)
    if p.metaskill is not None and not Path(p.metaskill).resolve().is_file():
        raise SuiteRegistryError(f"suite {name!r}: meta-skill file {p.metaskill} does not exist; "
                                 "pass the path of a Markdown authoring prior (see "
                                 "configs/meta_skills)")
    if not (p.critic in CRITIC_FLAVOURS or callable(p.critic) or is_target(p.critic)):
        raise SuiteRegistryError(f"suite {name!r}: critic {p.critic!r}: use one of "
                                 f"{', '.join(CRITIC_FLAVOURS)} or a prompt function "
                                 "(task, capsule, skill, *, prefill, templates) -> messages")
    if p.commands is not None and not is_target(p.commands):
        raise SuiteRegistryError(f"suite {name!r}: commands {p.commands!r} must be 'module:attr' "
                                 "naming a list of click commands (a module of the CLI layer)")
    _check_declarations(p)


def _positive_amounts(wanted: Any) -> bool:
    return isinstance(wanted, Mapping) and all(
        isinstance(k, str) and isinstance(v, (int, float)) and v > 0 for k, v in wanted.items())


def _check_cluster(name: str, c: Cluster) -> None:
    """The ``Cluster`` extension's fields, named as ``cluster.<field>`` in the message."""
    if not isinstance(c, Cluster):
        raise SuiteRegistryError(f"suite {name!r}: cluster must be a Cluster(...) "
                                 f"(ratchet_ray.suites.contract), got {c!r}")
    if not (isinstance(c.resources, Mapping) and all(
            isinstance(role, str) and _positive_amounts(w) for role, w in c.resources.items())):
        raise SuiteRegistryError(f"suite {name!r}: cluster.resources {c.resources!r} must map a "
                                 "role (solver, grader, ...) to custom Ray resources, e.g. "
                                 "{'grader': {'docker': 1}}")
    if not _positive_amounts(c.local_resources):
        raise SuiteRegistryError(f"suite {name!r}: cluster.local_resources {c.local_resources!r} "
                                 "must map a custom Ray resource to the amount a local Ray "
                                 "offers, e.g. {'docker': 8}")
    if not (isinstance(c.node_types, Mapping) and all(
            isinstance(k, str) and isinstance(v, str) and v for k, v in c.node_types.items())):
        raise SuiteRegistryError(f"suite {name!r}: cluster.node_types {c.node_types!r} must map "
                                 "a custom Ray resource to the cluster.yaml node type offering "
                                 "it, e.g. {'docker': 'docker_worker'}")
    for key in CLUSTER_HOOKS:
        _check_hook(name, f"cluster.{key}", getattr(c, key))


def _check_hook(name: str, key: str, value: Any) -> None:
    if value is not None and not (callable(value) or is_target(value)):
        raise SuiteRegistryError(f"suite {name!r}: {key} must be a function or "
                                 f"'module:attr' naming one; got {value!r}")


def _check_declarations(p: SuitePlugin) -> None:
    """The declarative fields: hints, environment variables, patterns, moved keys."""
    name = p.name
    if not all(isinstance(h, FixHint) and h.patterns and isinstance(h.hint, str) and all(
            isinstance(s, str) and s and s == s.lower() for s in h.patterns)
               for h in p.fix_hints):
        raise SuiteRegistryError(f"suite {name!r}: fix_hints must be FixHint(patterns, hint) items "
                                 "with non-empty lower-case patterns; got "
                                 f"{p.fix_hints!r}")
    if not all(isinstance(v, EnvVar) and _ENV_NAME.fullmatch(v.name) for v in p.env_vars):
        raise SuiteRegistryError(f"suite {name!r}: env_vars must be EnvVar(NAME, help) items "
                                 f"with upper-case names; got {p.env_vars!r}")
    if p.task_id_pattern is not None:
        try:
            re.compile(p.task_id_pattern)
        except (re.error, TypeError) as exc:
            raise SuiteRegistryError(f"suite {name!r}: task_id_pattern {p.task_id_pattern!r} is "
                                     f"not a regular expression ({exc})") from None
    dotted = re.compile(r"(?!\d)\w+\.(?!\d)\w+")  # section.key
    if not (isinstance(p.moved_keys, Mapping) and all(
            isinstance(k, str) and dotted.fullmatch(k) and isinstance(v, str) and
            dotted.fullmatch(v) for k, v in p.moved_keys.items())):
        raise SuiteRegistryError(f"suite {name!r}: moved_keys must map an old config key "
                                 "(section.key, e.g. grader.x) to the suite-section key it moved "
                                 f"to (suite.key, e.g. {name}.x); got {p.moved_keys!r}")
    _check_operational(p)


def _check_operational(p: SuitePlugin) -> None:
    """``operational_keys``: each a field path of the suite's settings, with a reason."""
    name, keys = p.name, p.operational_keys
    if not (isinstance(keys, Mapping) and all(
            isinstance(k, str) and k and isinstance(v, str) and v.strip()
            for k, v in keys.items())):
        raise SuiteRegistryError(f"suite {name!r}: operational_keys must map a key of its "
                                 "settings (e.g. 'memory_mb', 'agent.max_time_s') to why an edit "
                                 f"of it changes how a run runs, not what it measures; got {keys!r}")
    for key in keys:
        model = p.settings
        for part in key.split("."):
            fields = getattr(model, "model_fields", {})
            if part not in fields:
                raise SuiteRegistryError(f"suite {name!r}: operational_keys names {key!r}, which "
                                         f"is not a key of its settings ({name}.*); name one of "
                                         f"{', '.join(sorted(fields)) or 'its settings (none)'}")
            model = fields[part].annotation


def _check_factory(name: str, factory: Any) -> None:
    if isinstance(factory, str):
        if not is_target(factory):
            raise SuiteRegistryError(f"suite {name!r}: factory {factory!r} is not 'module:attr'")
    elif not callable(factory):
        raise SuiteRegistryError(f"suite {name!r}: factory {factory!r} is not callable; pass the "
                                 "Suite class (or a zero-argument function returning a suite)")
    elif isinstance(factory, type):
        check_shape(name, factory)


def check_shape(name: str, obj: Any) -> None:
    """``SuiteRegistryError`` unless ``obj`` (a suite class or object) follows ``base.Suite``."""
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
