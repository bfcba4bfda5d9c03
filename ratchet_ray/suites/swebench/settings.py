"""Settings of the SWE-bench suite: dataset, instance images, containers and the patch agent.

``SwebenchSettings()`` works for the real benchmark (images pulled from the ``swebench``
namespace, cache level ``env``, the agentic solver). This module imports nothing but pydantic
and the standard library, so the registry may import it (``settings_from_config``).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_STRICT = ConfigDict(extra="forbid", validate_assignment=True)
log = logging.getLogger(__name__)

# Which images survive an instance, from least to most kept (the swebench harness's levels).
CacheLevel = Literal["none", "base", "env", "instance"]


class AgentSettings(BaseModel):
    """The patch Solver: an agentic shell loop in the task's container, or one call."""

    model_config = _STRICT
    mode: Literal["agent", "single_call"] = "agent"
    """'agent': shell actions in the container ending with ``git diff``; 'single_call': one
    completion asked for a unified diff."""
    max_steps: int = Field(default=30, ge=1)
    """LLM calls (actions) per attempt; at the limit the current ``git diff`` is the patch."""
    max_time_s: float = Field(default=900.0, gt=0)
    """Wall-clock budget of one attempt, container start included."""
    max_cost_usd: float = Field(default=0.0, ge=0)
    """Budget of one attempt summed from the replies' cost fields (0 = unlimited)."""
    max_format_errors: int = Field(default=3, ge=1)
    """Consecutive replies that are not a valid action before the attempt stops."""
    command_timeout_s: float = Field(default=60.0, gt=0)
    """Per shell command; the process group is killed at the limit and the model is told."""
    max_tokens: int = Field(default=384, gt=0)
    """Generation cap per action."""
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    """Sampling temperature of every agent call; None: the loop's ``llm.temperature`` (the
    Solver's, 1.0 in the Default, as the paper's agent sampled). Each call also gets the
    attempt's derived seed where the backend takes one, so baseline probes differ by seed."""
    max_observation_chars: int = Field(default=3000, gt=0)
    """Each command's output is clipped to this (head and tail kept) before it enters the prompt."""
    max_prompt_chars: int = Field(default=12000, gt=0)
    """The transcript keeps the newest steps that fit in this many characters (small contexts)."""
    context_files_chars: int = Field(default=6000, ge=0)
    """single_call: characters of repository files named in the issue shown to the model."""


SOLVERS = {"ratchet": "this project's shell agent",
           "mini-swe-agent": "the SWE-bench team's reference agent"}
"""The patch agents ``swebench.solver`` chooses between, each with what it is."""
Solver = Literal["ratchet", "mini-swe-agent"]


class SwebenchSettings(BaseModel):
    """Dataset, images and containers of the SWE-bench suite."""

    model_config = _STRICT
    solver: Solver = "ratchet"
    """Which agent writes the patch: 'ratchet', this project's shell agent (``agent.mode`` picks
    its loop or one call), or 'mini-swe-agent', the SWE-bench team's bash-only reference agent
    (its own loop, prompts and submission, driving the same locked-down container through this
    project's LLM backend; ``pip install 'ratchet-ray[swebench]'``). Both take their limits from
    ``agent.*`` (steps, time, cost, format errors, per-command timeout, tokens per reply) and
    inject the routed skill's guidance; reports name the one that ran."""
    dataset_name: str = "SWE-bench/SWE-bench_Verified"
    """Hugging Face dataset id. swebench>=5 grades with the ``eval_script``/``log_parser`` columns
    that this dataset ships; an id without them fails at load with the missing columns named."""
    split: str = "test"
    namespace: str | None = "swebench"
    """Registry namespace the instance images are pulled from; None builds them locally from the
    instance's ``dockerfile`` field (swebench's ``--namespace none``)."""
    tag: str = "latest"
    arch: Literal["amd64", "arm64"] = "amd64"
    cache_level: CacheLevel = "env"
    """Images kept after an instance: 'instance' keeps everything; lower levels remove the
    instance images this process pulled or built (swebench>=5 has no separate env images, so
    'env' and 'base' keep the base images that existed before the run)."""
    docker_host: str | None = None
    """Docker daemon URL (e.g. unix:///var/run/docker.sock); None reads DOCKER_HOST/the default."""
    build_network: str = "none"
    """Network of local image builds ('none' on machines without a bridge; 'host' or 'bridge'
    when a Dockerfile must download)."""
    memory_mb: int = Field(default=4096, gt=0)
    """Memory limit of every instance container."""
    grade_command_timeout_s: float = Field(default=1800.0, gt=0)
    """The limit of each Docker command of a grade (the patch's apply, the eval script, each
    canary session's), the swebench harness's default timeout; once ``grader.timeout_s``."""
    instance_deadline_s: float = Field(default=1800.0, gt=0)
    """Whole-instance deadline of a grade (image pull or build, apply, eval script), separate
    from each Docker command's ``grade_command_timeout_s``; once ``grader.instance_deadline_s``."""
    pids_limit: int = Field(default=1024, gt=0)
    """Process limit of every instance container (fork bombs stay inside)."""
    cpus: float = Field(default=2.0, gt=0)
    """CPU quota of every instance container (CFS quota, in CPUs)."""
    disk_mb: int = Field(default=4096, gt=0)
    """Writable-layer budget of every instance container: a ``storage_opt`` size where the
    storage driver supports one (overlay2 on xfs with pquota), and always a watchdog that kills
    the running command once the container's writable layer grows past it."""
    untrusted_uid: int | None = Field(default=65534, gt=0)
    """Uid (and gid) the code under test and the agent's commands run as, where the image allows
    (``setpriv`` present); the harness's own steps run as root with few capabilities. None runs
    them as root (weaker: the code under test can then read the run's secret markers)."""
    lock_dir: str = "/tmp/ratchet-swebench-locks"
    """Folder of the per-image lock files and of the node's image-cache index
    (``image_cache.json``: recency, sizes, hits/builds/evictions, and which images the node
    holds, which places each instance's work on it) shared by every grader and agent on one
    machine (a folder on local disk, the same for all of them). A node whose environment sets
    `$RATCHET_SWEBENCH_LOCK_DIR` uses that folder instead (Ray nodes of one host, each with a
    Docker daemon of its own)."""
    image_cache_gb: float | None = Field(default=None, gt=0)
    """Disk budget of the instance images this project built or pulled on one node (full image
    sizes, shared layers counted per image): before a build or pull would cross it, the least
    recently used of them that no worker holds are removed. None: unlimited (the cache level
    alone decides what stays)."""
    build_min_free_gb: float = Field(default=5.0, ge=0)
    """Free disk under Docker's data root that a build or pull must leave (beyond the expected
    image size); short of it, least recently used project images are removed, and failing that
    the build is refused (infrastructure failure ``disk_guard``) instead of filling the disk."""
    validate_gold: bool = False
    """Before round 0, grade every gold patch (must resolve) and a no-op patch (must not) of the
    run's instances on the Grader pool (``ratchet swe validate``); any failure stops the run
    with the instances and reasons, before any LLM call."""
    canary_sessions: tuple[int, int] = (2, 3)
    """How many canary sessions prove a would-be resolution, drawn per grade from this inclusive
    range (at least 2): each a fresh container running the same eval with one graded test
    mutated in place (docs/grading.md, differential canary sessions)."""
    canary_parallel: int | None = Field(default=None, ge=1)
    """Sessions of one grade (the real one and its canary sessions, in a random order) started
    together; None: 1. Sessions that overlap can compare their graded files over a live
    channel through the host (three texts tell the real one from every mutant), so more than
    one at a time trades the proof's strength for wall time (docs/grading.md, Remains)."""
    clear_page_cache: bool = True
    """Before each grading session, evict the page cache of the image's layer files (and of
    Docker's init binary): no session leaves bits there for the next to read by timing
    (docs/grading.md, no mark survives between sessions). Needs readable layer folders on the
    grader's host (overlay2, a local daemon, a root grader); elsewhere the log says so."""
    clear_dentry_cache: bool = True
    """Before each grading session, drop the host's unused dentries and inodes
    (``/proc/sys/vm/drop_caches``, 2): names one session looked up would answer faster for the
    next (docs/grading.md). Host-wide, 0.03-0.4 s a session where it runs regularly. Needs a
    root grader outside a container; elsewhere the log says so."""
    gold_records: str | None = None
    """Folder of the gold records (each instance's statuses under its gold patch and the mutants
    that patch fails), shared by runs and filled ahead of one by ``ratchet swe validate``; None:
    ``$XDG_CACHE_HOME/ratchet/swebench-gold`` (``~/.cache/...``). A run also keeps the records it
    used in its artifacts."""
    quarantine: str | None = None
    """Quarantine file (``ratchet swe validate`` writes ``<dataset>.quarantine.json``): its
    instances (gold patch failed a repeat, or the no-op patch resolved) are left out of both
    splits of a run and out of ``select-subset``; round 0's summary says how many and why.
    None: no quarantine."""
    max_log_bytes: int = Field(default=20_000_000, gt=0)
    """Command output kept per exec; beyond it the middle is dropped (runaway output)."""
    agent: AgentSettings = Field(default_factory=AgentSettings)

    @field_validator("solver", mode="before")
    @classmethod
    def _known_solver(cls, value: Any) -> Any:
        if value not in SOLVERS:
            raise ValueError(f"unknown solver {value!r}: set swebench.solver to one of "
                             + ", ".join(f"{name!r} ({what})" for name, what in SOLVERS.items()))
        return value

    @model_validator(mode="after")
    def _solver_mode(self) -> "SwebenchSettings":
        if self.solver == "mini-swe-agent" and self.agent.mode != "agent":
            raise ValueError(f"swebench.agent.mode={self.agent.mode!r} is the in-house solver's "
                             "one-call mode; mini-swe-agent is an agent only: drop the mode or "
                             "set swebench.solver=ratchet")
        return self

    @field_validator("canary_sessions")
    @classmethod
    def _canary_bounds(cls, value: tuple[int, int]) -> tuple[int, int]:
        low, high = value
        if low < 2 or high < low:
            raise ValueError(f"canary_sessions {list(value)}: give [low, high] with 2 <= low <= high "
                             "(e.g. [2, 3]); fewer than 2 canary sessions prove too little")
        return value

    def for_run(self, config: Any) -> "SwebenchSettings":
        """These settings for a run of ``config`` (``registry.settings_for`` applies it): the
        run's ``dataset_path``, when set, wins over ``dataset_name``."""
        path = getattr(config, "dataset_path", None)
        return self.model_copy(update={"dataset_name": str(path)}) if path else self

    def parallel_canaries(self) -> int:
        """``canary_parallel``, or 1: one session at a time, whatever the cores."""
        return self.canary_parallel or 1


@dataclass(frozen=True)
class GradingLimits:
    """The time limits a SWE-bench grader works under: each Docker command's (``timeout_s``,
    ``swebench.grade_command_timeout_s``) and the whole instance's (``instance_deadline_s``)."""

    timeout_s: float = 20.0
    instance_deadline_s: float = 1800.0

    @classmethod
    def of_run(cls, config: Any, settings: SwebenchSettings) -> "GradingLimits":
        """The limits ``settings`` set for a run (``config``: the run's; since
        ``grade_command_timeout_s`` both live in the suite's section)."""
        return cls(settings.grade_command_timeout_s, settings.instance_deadline_s)


MOVED_KEYS = {"grader.instance_deadline_s": "swebench.instance_deadline_s"}
"""Config keys that moved into this section (``SuitePlugin.moved_keys``); ``grader.timeout_s``,
which MBPP+ still reads, is ``adopt_old_keys``'s."""


def _default(model: type[BaseModel], field: str) -> Any:
    return model.model_fields[field].get_default(call_default_factory=True)


def adopt_old_keys(config: Any, settings: SwebenchSettings) -> None:
    """The ``configure`` hook: a SWE-bench run's ``grader.timeout_s`` (MBPP+'s) moves to
    ``grade_command_timeout_s`` unless that is set too, with a warning naming the new key. A
    value equal to a key's default counts as unset (the default config file and a run dir's
    config.yaml write every default); the old key is reset once read, so the stored config
    resolves to itself."""
    old, old_default = config.grader.timeout_s, _default(type(config.grader), "timeout_s")
    if old == old_default:
        return
    config.grader.timeout_s = old_default
    new, new_default = settings.grade_command_timeout_s, _default(SwebenchSettings,
                                                                  "grade_command_timeout_s")
    if new != new_default:
        log.warning("grader.timeout_s=%g ignored: a SWE-bench grade's Docker commands are "
                    "limited by swebench.grade_command_timeout_s (%g here)", old, new)
        return
    if old != new_default:  # an old run dir's dumped 1800 is the new default: nothing to say
        log.warning("grader.timeout_s no longer limits a SWE-bench grade's Docker commands: it is "
                    "swebench.grade_command_timeout_s now (%g used); set that key instead", old)
    section = {**config.suite_settings.get("swebench", {}), "grade_command_timeout_s": old}
    config.suite_settings = {**config.suite_settings, "swebench": section}


def settings_from_config(config: Any) -> SwebenchSettings:
    """What ``registry.settings_for(config, "swebench")`` returns (the section validated, then
    ``for_run``), without importing the registry."""
    section = (getattr(config, "suite_settings", None) or {}).get("swebench")
    return SwebenchSettings.model_validate(section or {}).for_run(config)


LOCK_DIR_ENV = "RATCHET_SWEBENCH_LOCK_DIR"


def on_this_node(settings: SwebenchSettings) -> SwebenchSettings:
    """``settings`` with ``$RATCHET_SWEBENCH_LOCK_DIR`` as ``lock_dir`` where this node's
    environment sets it (Ray nodes of one host, each with its own Docker daemon), else the
    same object."""
    override = os.environ.get(LOCK_DIR_ENV)
    if not override or override == settings.lock_dir:
        return settings
    return settings.model_copy(update={"lock_dir": override})
