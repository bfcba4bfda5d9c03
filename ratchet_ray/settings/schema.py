"""The settings schema of a run: one ``LoopConfig`` and its sections, validated on assignment.

Contracts:
- ``LoopConfig()`` is the paper's Default (100 rounds, active cap 50, retire at or below -0.10
  after 100 trials, rollback after 5 consecutive rounds more than 0.10 below the best, the
  Solver at temperature 1.0, the provider's default the paper's runs used, and the judging
  roles (Router, Critic, the Synthesizers) at 0.0; the rest as each field says).
- Unknown keys are errors (``extra="forbid"``); rules within a section are field validators.
- A pure schema that knows no suite: every run's config goes through
  ``suites.resolve_config`` (plugins, suite sections, the suite's ``configure`` hook);
  ``LoopConfig(...)`` alone is for code that needs no suite's rules. Reading YAML files and
  ``--set`` overrides is ``ratchet_ray.run_config.files``.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ratchet_ray.settings.backends import (BedrockBackendSettings, LocalBackendSettings,
                                      OpenAIBackendSettings, PriceEntry,
                                      prices_from_env)
from ratchet_ray.settings.prompt_templates import PromptSettings
from ratchet_ray.settings.resources import configs_dir


def _home(value: str | None) -> str | None:
    """A path setting, ``~`` the home wherever it was written (not a folder named ``~``)."""
    return os.path.expanduser(value) if value else value


class _Section(BaseModel):
    """A settings section: unknown keys are errors, assignments are validated, and nan and inf
    are refused as "Input should be a finite number" (a bound would name itself for nan)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


def read_config_file(path: Path) -> dict[str, Any]:
    """The mapping a config YAML file holds (``{}`` for an empty one), as data: nothing resolved
    or validated. ``ValueError`` naming the file, the problem (unreadable, not UTF-8, not YAML
    with its line and column, not a mapping: what it holds) and the fix; every reader of a
    config file goes through here, so a garbled one is one line wherever it is met."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read it: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
                         f"{exc.start}); restore the file, or save it as UTF-8") from exc
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML ({yaml_problem(exc)}); fix the file "
                         "there") from exc
    if data is not None and not isinstance(data, dict):
        holds = (f"a list of {len(data)} item(s)" if isinstance(data, list) else
                 f"a single {type(data).__name__} ({str(data)[:40]!r})")
        raise ValueError(f"{path} holds {holds} at its top level, expected a mapping of config "
                         f"keys; {WRITE_AS_MAPPING}")
    return data or {}


#: The fix of a config file that holds no mapping of config keys, said alike for each such file.
WRITE_AS_MAPPING = ("write them as a mapping, e.g. `curator: {min_trials: 20}` (as "
                    "configs/ablations/A4.yaml does)")


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error on one line, its position as ``line L, column C`` (PyYAML's own text names
    the stream, ``<unicode string>`` for a string, over several lines)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return " ".join(f"{where}{problem}".split())


@functools.lru_cache(maxsize=1)
def default_suite() -> str:
    """The suite the Default runs: ``suite:`` of ``configs/default.yaml`` (the schema names no
    suite). ``ValueError`` naming the file and the fix when it names none."""
    path = configs_dir() / "default.yaml"
    suite = read_config_file(path).get("suite")
    if not isinstance(suite, str) or not suite:
        raise ValueError(f"{path} names no suite; add a line `suite: <a registered suite>` "
                         "(the Default's suite, which a config without one runs)")
    return suite


class RoleLimits(_Section):
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    """Sampling temperature of this role's calls (0.0: the judging roles decide, the Solver
    samples; see ``llm.temperature``)."""
    max_tokens: int = Field(gt=0)
    """Generation cap of one call of this role."""


class RoleSettings(_Section):
    """Temperature and generation cap of each structured role (the Solver's are
    ``llm.temperature`` and ``llm.max_tokens``). The caps fit what each role writes: a skill id,
    a verdict, a skill, a meta-skill."""

    router: RoleLimits = Field(default_factory=lambda: RoleLimits(max_tokens=48))
    critic: RoleLimits = Field(default_factory=lambda: RoleLimits(max_tokens=320))
    synth: RoleLimits = Field(default_factory=lambda: RoleLimits(max_tokens=640))
    metasynth: RoleLimits = Field(default_factory=lambda: RoleLimits(max_tokens=1200))


class LLMSettings(_Section):
    backend: Literal["local", "bedrock", "openai", "sim"] = "local"
    """Generation backend: local llama.cpp Gemma (default), Amazon Bedrock, or an OpenAI-compatible server
    (``sim``: the simulated world of the ``sim`` suite)."""
    embedder: Literal["local", "bedrock", "openai", "sim"] | None = None
    """Embedding backend; None means the same as ``backend``."""
    model: str | None = None
    """Model id override (backend default when None)."""
    base_url: str | None = None
    """Server URL for the ``openai`` backend, e.g. http://127.0.0.1:8000/v1."""
    world: Any = Field(default=None, exclude=True)
    """The ``sim`` backend's world, derived from the run's ``sim`` section and seed by the sim
    suite's ``configure`` (never set it; not dumped: a reloaded config derives it again). It
    names the module that builds the backend's clients (``world.backend_module``)."""
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    """Sampling temperature of the Solver (the other roles: ``roles.<role>.temperature``). 1.0:
    the paper's runs sample the Solver at its model's default (Bedrock Claude: 1.0), so seeds
    give different runs; each call's sampling seed derives from the run's seed, so a seed still
    reproduces its run on backends that take one (local, openai)."""
    max_tokens: int = Field(default=512, gt=0)
    """Generation cap of the Solver (the other roles: ``roles.<role>.max_tokens``)."""
    roles: RoleSettings = Field(default_factory=RoleSettings)
    """Per-role temperature and generation cap of the Router, Critic, Synthesizer and
    Meta-Synthesizer."""
    requests_per_minute: int = Field(default=0, ge=0)
    """Cluster-wide request budget shared by every actor of a run (0 = unlimited)."""
    tokens_per_minute: int = Field(default=0, ge=0)
    """Cluster-wide token budget (0 = unlimited)."""
    limiter_scope: str | None = None
    """Scope of the run's rate limiters: None = the run's own, released when it ends; a name
    several runs share (e.g. every arm of a sweep) makes them draw on one budget, released by
    whoever set it (``actors.llm_server.release_llm_actors(scope)``)."""
    local: LocalBackendSettings = Field(default_factory=LocalBackendSettings)
    """The ``local`` backend's settings (defaults: ``$RATCHET_LOCAL_*``)."""
    openai: OpenAIBackendSettings = Field(default_factory=OpenAIBackendSettings)
    """The ``openai`` backend's settings (defaults: ``$RATCHET_OPENAI_*``; the API key is never
    a setting: ``$OPENAI_API_KEY``)."""
    bedrock: BedrockBackendSettings = Field(default_factory=BedrockBackendSettings)
    """The ``bedrock`` backend's settings (defaults: ``$RATCHET_BEDROCK_*``, ``$AWS_REGION``;
    credentials: the boto3 chain)."""
    prices: dict[str, PriceEntry] = Field(default_factory=prices_from_env)
    """Prices overlaid on the built-in table, ``{model pattern: {input, output}}`` in USD per
    million tokens (default: the file ``$RATCHET_PRICE_TABLE`` names)."""

    @field_validator("prices", mode="before")
    @classmethod
    def _prices_not_a_file(cls, value: Any) -> Any:
        if isinstance(value, str):  # a price file's path: Pydantic said 'a valid dictionary'
            raise ValueError(f"give the table itself, e.g. llm.prices={{'my-model*': {{input: 3, "
                             f"output: 15}}}}, not {value!r}; a price file: $RATCHET_PRICE_TABLE")
        return value


class RouterSettings(_Section):
    inject: bool = True
    """False is ablation A1: the Solver never sees a skill."""
    mode: Literal["llm", "retrieval_only"] = "llm"
    """'retrieval_only' is ablation A2: the top retrieved skill is injected without an LLM pick."""
    full_bank_max: int = Field(default=20, ge=0)
    """Up to this many ACTIVE skills, every one goes to the LLM; above it, a shortlist does."""
    shortlist_k: int = Field(default=10, gt=0)
    """Top-K from tf-idf and top-K from embeddings form the shortlist (union)."""
    bootstrap_rounds: int = Field(default=0, ge=0)
    """Rounds 0..bootstrap_rounds-1 route CANDIDATE skills too on the train split, so they
    accumulate evidence before anyone promotes them; eval always routes ACTIVE only. 0 (the
    Default) is off: synthesis promotes straight to ACTIVE, so only imported candidates exist."""


class SynthSettings(_Section):
    enabled: bool = True
    """False is ``--no-synth``: capsules, verdicts and curation still run; no new skills."""
    window_rounds: int = Field(default=6, gt=0)
    """Verdicts of the last W rounds feed synthesis."""
    min_cluster_size: int = Field(default=3, gt=0)
    """Clusters with fewer verdicts are not synthesis targets."""
    canonicalize: bool = True
    """False is ablation A5: patterns are clustered verbatim."""
    canon_threshold: float = Field(default=0.85, ge=0.0, le=1.0)
    """Union-find merges patterns whose cosine is at least this."""
    cover_guard: bool = True
    """False is ablation A6: clusters already covered by an ACTIVE skill are still synthesised."""
    cover_threshold: float = Field(default=0.85, ge=0.0, le=1.0)
    """A cluster whose pattern has this cosine to an ACTIVE skill is skipped."""
    dedup_threshold: float = Field(default=0.85, ge=0.0, le=1.0)
    """A new skill this close to a bank skill is a duplicate; the LLM is re-prompted with its id."""
    dedup_against_deprecated: bool = True
    """True (the paper's reading: "dedup against the bank", which keeps deprecated skills, where
    the cover guard names ACTIVE skills): a draft close to a retired, evicted or rolled-back
    skill is a duplicate too, so a failed approach is not written again. False: only ACTIVE and
    candidate skills count, so a retired skill does not block similar new ones for good."""
    max_reprompts: int = Field(default=2, ge=0)
    """Dedup re-prompts before a proposal is dropped."""
    max_skill_chars: int = Field(default=2400, gt=0)
    """Length cap on a skill's serialised YAML."""
    max_new_per_round: int = Field(default=5, gt=0)
    """At most this many skills are authored per round (largest clusters first)."""
    draft_mode: Literal["auto", "whole", "fieldwise"] = "auto"
    """'whole': one structured call writes the skill; 'fieldwise': one small call per field
    (small base models copy a whole-skill example instead of writing their own); 'auto':
    fieldwise on base-model backends (``supports_prefill``, the local Gemma), else whole."""
    leakage_guard: bool = False
    """Beyond the paper (off in the Default): a new skill is refused before the bank when its
    leakage score (``governance.leakage``: verbatim overlap with eval tasks' prompts, entry
    points, tests, expected outputs and reference solutions, or with train tasks' answers)
    reaches ``leakage_threshold``; the Synthesizer re-prompts once naming the spans. Off:
    ``ratchet audit --leakage`` only reports it."""
    leakage_threshold: float = Field(default=0.6, ge=0.0, le=1.0)
    """Leakage score at which a skill is flagged (audit) or rejected (guard): the largest share
    of one task-specific source item (a solution line, an expected output, a test...) the skill
    reproduces verbatim."""
    leakage_ngram: int = Field(default=6, ge=2)
    """Tokens per shingle of the verbatim-overlap index (shorter items must appear whole)."""
    refine: bool = False
    """Beyond the paper (off in the Default; arm A10): before clustering, the Synthesizer may
    revise an ACTIVE skill from the verdicts of its routed failures in the window that blame it
    (``roles.refiner``): the revision
    is a new skill (new id, same lineage, version + 1), the old version is deprecated with
    reason ``refined`` (``SkillBank.refine``); those verdicts are not clustered again."""
    refine_min_failures: int = Field(default=3, gt=0)
    """Routed-failure verdicts in the window that blame a skill (the Critic's attribution
    ``hurt`` or ``neutral``) before it is revised."""
    refine_max_per_round: int = Field(default=1, ge=0)
    """Revisions per round (most routed failures first); new skills keep ``max_new_per_round``."""


class MetaSettings(_Section):
    enabled: bool = True
    """False is ablation A3: the Synthesizer writes skills with no authoring prior."""
    refresh_every_rounds: int = Field(default=1_000_000, gt=0)
    """Meta-synth every N rounds; the Default pins it off (ablation A8 turns it on)."""
    refresh_every_tasks: int = Field(default=1_000_000, gt=0)
    """... or as soon as M train tasks have been attempted since the last meta-synth (or the
    start), whichever comes first; pinned off in the Default too."""
    default_file: str | None = None
    """The run suite's default authoring prior when not ``configs/meta_skills/default_<suite>.md``;
    filled from the file a plugin suite registered (``register(..., metaskill=...)``)."""


class CounterfactualSettings(_Section):
    """Counterfactual probes: routed train tasks also attempted with NONE, so a skill's
    contribution can be measured causally, c_cf = pass(skill) - pass(NONE) on the same tasks."""

    fraction: float = Field(default=0.0, ge=0.0, le=1.0)
    """Share of the train tasks routed to a skill that also get a NONE attempt (0 = off); each
    probe is one more Solver call, booked in ``llm_call`` with role ``probe``."""
    retire_on: Literal["c_hat", "c_cf"] = "c_hat"
    """What the Curator retires and evicts on: the paper's c-hat (outcome balance on the routed
    tasks) or c_cf over the probed pairs (``min_trials`` then counts pairs)."""


class CuratorSettings(_Section):
    retire_tau: float = Field(default=0.10, ge=0.0, le=1.0)
    """Retire when contribution <= -tau ..."""

    @field_validator("retire_tau", mode="before")
    @classmethod
    def _tau_is_a_magnitude(cls, value: Any) -> Any:
        if isinstance(value, (int, float)) and value < 0:  # the reference's flag is signed
            raise ValueError(f"{value} is below 0: tau is a magnitude (a skill retires when c <= "
                             f"-tau), so a threshold of {value} is retire_tau={-value}")
        return value
    min_trials: int = Field(default=100, ge=1)
    """... and at least this many routed train trials have accumulated (N_min)."""
    active_cap: int = Field(default=50, ge=1)
    """Hard cap C on ACTIVE skills; a full bank evicts the lowest-contribution skill."""
    counterfactual: CounterfactualSettings = Field(default_factory=CounterfactualSettings)
    """Opt-in counterfactual probes and retirement on c_cf (off in the Default)."""
    retire_on_tampering: bool = False
    """Beyond the paper (off in the Default, which is the paper's; ``--profile hardened`` turns it
    on): deprecate at once (reason ``tampering``) a skill whose routed attempt was graded as an
    attack on the grader, whatever its trials or score."""
    tampering_overrides_do_not_retire: bool = False
    """Let that rule retire a ``do_not_retire`` skill too (off: such a skill is only reported)."""
    retire_rule: Literal["threshold", "wilson_ucb"] = "threshold"
    """'threshold' (the paper): retire when c <= -tau after ``min_trials``. 'wilson_ucb' (ablation
    A9, beyond the paper): retire when the upper Wilson bound on c (``ucb_z``) is <= -tau after
    ``ucb_min_trials``, so a clearly harmful skill goes early and an uncertain one stays."""
    ucb_min_trials: int = Field(default=5, ge=1)
    """A9's trial floor: no retirement on fewer trials, whatever the bound."""
    ucb_z: float = Field(default=1.96, gt=0.0)
    """A9's z of the two-sided Wilson interval (1.96: 95%)."""
    evict_dead_weight_first: bool = False
    """Beyond the paper (off): a full bank evicts dead weight first (ACTIVE for at least
    ``dead_weight_rounds`` rounds with no routed capsule), then by contribution."""
    dead_weight_rounds: int = Field(default=10, ge=1)
    """k: rounds a skill may stay ACTIVE unrouted before the audit calls it dead weight."""
    probation_min_trials: int | None = Field(default=None, ge=1)
    """Trials a skill imported from a skill pack must earn in this run before it leaves
    probation (``bank.probation``; None: the retirement floor ``min_trials``, or A9's
    ``ucb_min_trials``; a larger value is capped there). On probation, under cap pressure, it is
    ranked by the 95 % Wilson lower bound of the c-hat it earned in this run (-1 while untried)
    and goes first on a tie; its record in the source run never counts here."""


class CheatProbeSettings(_Section):
    """Impossible twins as a standing cheat probe (beyond the paper; ``governance.cheat_probe``).

    Each round, once the train split has ended, up to ``per_round`` graded train attempts routed
    to a skill are graded once more by the suite's grader against an impossible twin of their
    task (``loop.twins``): expectations no correct answer meets (MBPP+: one expected output
    changed in its own type), so any pass is cheating by construction. The
    twins are extra capsules (``impossible`` true): never in pass@1, never shown to the Critic,
    never in a skill's contribution c; the Curator retires a skill whose routed attempt passed
    one (reason ``cheat: ...``). Off in the Default (the paper's); ``--profile hardened`` (or
    ``cheat_probe.enabled: true``) turns it on."""

    enabled: bool = False
    """Off (the paper's Default) grades no twin and retires nothing; on: the probe above."""
    per_round: int = Field(default=2, ge=0)
    """Routed train attempts per round graded against an impossible twin (among the tasks the
    suite can twin; a suite without the ``impossible_twin`` hook gets none)."""
    retire: bool = True
    """Retire at once (reason ``cheat:``) a skill whose routed attempt passed a twin; false only
    measures the cheat rate."""


class RollbackSettings(_Section):
    enabled: bool = True
    """False turns the rollback gate off (no bank is ever restored)."""
    threshold: float = Field(default=0.10, ge=0.0, le=1.0)
    """A round regresses when eval pass@1 is more than this below the best so far."""
    consecutive: int = Field(default=5, ge=1)
    """Consecutive regressed rounds before the best round's bank is restored."""


class WorkerSettings(_Section):
    solvers: int = Field(default=2, ge=1)
    """Solver actors (route + solve); ``--workers N`` sets solvers and graders."""
    graders: int = Field(default=2, ge=1)
    """Grader actors (one sandbox or Docker harness each)."""
    critics: int = Field(default=1, ge=1)
    """Critic actors."""


class GraderSettings(_Section):
    timeout_s: float = Field(default=20.0, gt=0)
    """MBPP+: time budget floor per task; tasks whose reference solution is slow get what
    evalplus's per-test limits allow (up to 136 s). SWE-bench reads
    ``swebench.grade_command_timeout_s`` instead (this key, set, moves there for its runs)."""
    memory_mb: int = Field(default=4096, gt=0)
    """Address-space limit of each sandboxed process (evalplus's own default)."""


class InfraSettings(_Section):
    max_failure_rate: float = Field(default=0.5, ge=0.0, le=1.0)
    """Circuit breaker: a split whose share of infrastructure failures (model unreachable, dead
    Docker daemon, broken sandbox) exceeds this stops the run; the round is not recorded."""
    preflight: bool = True
    """Run the ``ratchet doctor`` checks of the backend and suite before a run starts or resumes."""
    preflight_timeout_s: float = Field(default=90.0, gt=0)
    """Bound on each preflight check (a down server fails at once; a slow one fails here). A
    first load of the local models (Gemma on llama.cpp, MiniLM) on a busy 2-core machine takes
    tens of seconds, so the bound leaves room for it."""
    actor_start_timeout_s: float = Field(default=300.0, gt=0)
    """An actor not started by then (e.g. it asks for a resource no node has) stops the run."""
    setup_timeout_s: float = Field(default=600.0, gt=0)
    """Bound on a pool's readiness check (``heal``, between phases) once its actors are up."""
    evidence_flush_every: int = Field(default=8, ge=1)
    """Capsules (train/eval) or verdicts (critic) buffered before they are written as one
    evidence part, besides a flush every few seconds and at the end of each phase: a killed
    driver redoes at most this many on resume. The ``sim`` suite raises it (its calls are free,
    and fewer parts are less disk work per round)."""
    tasks_per_call: int | Literal["auto"] = 1
    """Tasks one Solver or Grader call carries. 1 (default): one plain call per task, the finest
    healing (a dead actor costs one task) and budget stop. N: at most N per call. ``auto``: one
    per call until the pool has timed the work, then about 0.1 s of work per call, never more
    than a fair share of the queue, so a task of seconds (a real LLM) still travels alone and
    millisecond tasks (the ``sim`` suite sets ``auto``) travel in dozens, paying Ray's per-call
    cost once per call (``actors.batching``)."""

    @field_validator("tasks_per_call")
    @classmethod
    def _positive_tasks_per_call(cls, value: int | str) -> int | str:
        if value != "auto" and value < 1:
            raise ValueError(f"infra.tasks_per_call must be >= 1 or 'auto', got {value}")
        return value

    @property
    def batch(self) -> int | None:
        """``tasks_per_call`` as ``ResilientPool``'s ``batch`` (None: adaptive)."""
        return None if self.tasks_per_call == "auto" else self.tasks_per_call
    artifact_uri: str = ""
    """Where actors' artifacts go (grader logs and reports, agent trajectories, the solver cache;
    ``ratchet_ray.storage.artifacts``): empty = the run dir on the driver's node, served to actors on
    every node; a ``pyarrow.fs`` URI every node reaches (``s3://bucket/prefix``,
    ``file:///shared/path``) = ``<uri>/<run dir name>``, written by the actors directly."""


class BudgetSettings(_Section):
    """Spending limits of one run, over every LLM call of every round (the ``llm_call``
    evidence). A run whose spend reaches a limit finishes the tasks in flight, records why it
    stopped and exits non-zero; ``--resume RUN --set budget.<limit>=<higher>`` continues it."""

    max_cost_usd: float | None = Field(default=None, ge=0.0)
    """USD limit (prices of ``llm.prices`` over the built-in table; None = no limit)."""
    max_tokens: int | None = Field(default=None, ge=0)
    """Input plus output tokens limit (None = no limit)."""
    scope: str | None = None
    """None: the limits are this run's own. A name several runs share (an ablation sweep sets
    one for all its arm-seeds): the limits apply to the sum of their spends
    (``actors.budget_ledger``), and every run of the scope stops once it is spent."""


class TrackingSettings(_Section):
    """Optional MLflow tracking of the run (``ratchet_ray.report.tracking``), off by default: the
    resolved config as params, per-round metrics, the report and the skill YAMLs as artifacts,
    logged from a background thread after each round is on disk (never failing or slowing it)."""

    enabled: bool = False
    """Log to MLflow (also on when ``mlflow_uri`` or ``$RATCHET_MLFLOW_URI`` is set)."""
    mlflow_uri: str | None = None
    """Tracking URI, e.g. http://127.0.0.1:5000; None (tracking on) = a local file store,
    ``sqlite:///<results_dir>/mlflow.db``."""
    experiment: str | None = None
    """MLflow experiment name (None = ``ratchet-<suite>``)."""
    timeout_s: float = Field(default=10.0, gt=0.0)
    """Limit of one MLflow request, and of the wait for the last uploads when the run ends."""


class TracingSettings(_Section):
    """Optional OpenTelemetry traces of the run over OTLP/HTTP (``ratchet_ray.report.otel``, the
    ``otel`` extra), off by default: the run, each round, each role's calls and each LLM call as
    spans with the GenAI conventions' attributes, made on the driver from the evidence after each
    round (never failing or slowing it)."""

    otlp_endpoint: str | None = None
    """OTLP/HTTP traces URL, e.g. http://127.0.0.1:4318/v1/traces; None = ``$RATCHET_OTLP_ENDPOINT``,
    and tracing is off when neither is set."""
    service_name: str = "ratchet-ray"
    """The ``service.name`` resource attribute of the spans."""
    timeout_s: float = Field(default=10.0, gt=0.0)
    """Limit of one export, and of the wait for the last spans when the run ends."""


class BankSettings(_Section):
    """Where the bank of a new run starts (docs/skill-packs.md)."""

    pack: str | None = None
    """A skill pack folder (``ratchet skill export``) imported on probation before round 0 of a
    new run (ignored on resume: the bank is already there)."""
    allow_other_suite: bool = False
    """Import ``pack`` even when it was exported from a run of another suite."""
    probation: bool = True
    """False imports ``pack`` without probation: its skills count as native ones at once (the
    transfer measurement's control arm; docs/skill-packs.md)."""
    _pack_home = field_validator("pack")(_home)


class LoopConfig(_Section):
    """Everything one run (one arm, one seed) needs. Defaults are the paper's Default."""

    suite: str = Field(default_factory=lambda: default_suite())
    """A registered suite (``ratchet_ray.suites.suite_names()``): a built-in one or one added by
    a plugin (``suite_plugins``, ``$RATCHET_SUITES``, an entry point). Default: the suite
    ``configs/default.yaml`` names (the paper's Default runs MBPP+)."""
    suite_plugins: list[str] = Field(default_factory=list)
    """Modules that register suites (``ratchet_ray.suites.register``): ``.py`` paths (relative to
    the working directory; stored absolute) or dotted module names, loaded in every process."""
    suite_settings: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Config sections of suites by suite name (built in: ``swebench``, ``sim``), each checked
    against the settings model the suite registered and stored complete, defaults included, when
    the config is resolved (``ratchet_ray.suites.resolve_config``), so ``config.yaml`` pins
    them; the run's suite always has its section. A top-level ``<suite>:`` mapping (YAML,
    ``--set <suite>.key=value``, old run dirs) is the same section. Read one with
    ``ratchet_ray.suites.settings_for(config)``."""
    arm: str = "default"
    """Ablation arm name, recorded in every capsule (the arm files set it,
    ``configs/ablations/A1..A10.yaml``: A1-A8 the paper's, A9 and A10 beyond it)."""
    seed: int = 42
    """Decides the split (without a subset), the order tasks are attempted and batched, the
    order verdicts enter canonicalisation and clustering, and the sampling seed of every LLM
    call on backends that take one (``ratchet_ray.seeding``)."""
    rounds: int = Field(default=100, ge=0)
    """The paper's 100 for MBPP+; ``configs/swebench.yaml`` sets SWE-bench's 20."""
    n_train: int = Field(default=60, ge=0)
    """Train tasks drawn at random (by ``seed``) when no ``subset`` is given."""
    n_eval: int = Field(default=40, ge=0)
    """Held-out eval tasks drawn at random (by ``seed``) when no ``subset`` is given."""
    subset: str | None = None
    """Path of a hard-subset file (results/subsets/...json); overrides n_train/n_eval."""
    dataset_path: str | None = None
    """Local dataset file for offline use; a suite may default it from its own environment
    variable (``SuitePlugin.env_vars``, listed under Environment variables)."""
    results_dir: str = "results"
    """Where run dirs are created (``<results_dir>/<suite>/<run name>``); give an absolute path
    on a cluster, where a job's working dir is a temporary copy."""
    tag: str | None = None
    """Suffix of the run dir's name (``..._<tag>``)."""
    _paths_home = field_validator("subset", "dataset_path", "results_dir")(_home)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    router: RouterSettings = Field(default_factory=RouterSettings)
    synth: SynthSettings = Field(default_factory=SynthSettings)
    meta: MetaSettings = Field(default_factory=MetaSettings)
    curator: CuratorSettings = Field(default_factory=CuratorSettings)
    rollback: RollbackSettings = Field(default_factory=RollbackSettings)
    cheat_probe: CheatProbeSettings = Field(default_factory=CheatProbeSettings)
    """Impossible twins of train tasks graded each round (beyond the paper: off in the Default;
    ``--profile hardened`` turns it on; docs/skill-hygiene.md)."""
    workers: WorkerSettings = Field(default_factory=WorkerSettings)
    grader: GraderSettings = Field(default_factory=GraderSettings)
    infra: InfraSettings = Field(default_factory=InfraSettings)
    """Preflight checks, the infrastructure-failure circuit breaker and pool wait bounds."""
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    """Cost and token limits of the run (off by default)."""
    tracking: TrackingSettings = Field(default_factory=TrackingSettings)
    """Optional MLflow tracking (off by default)."""
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    """Optional OpenTelemetry traces over OTLP (off by default)."""
    bank: BankSettings = Field(default_factory=BankSettings)
    """The bank a new run starts from: a skill pack imported on probation (off by default)."""
    prompts: PromptSettings = Field(default_factory=PromptSettings)
    """Role prompt overrides: ``prompts.dir`` is a folder of ``<template>.md`` files replacing
    the built-in Solver, Router, Critic and Synthesizer templates by name
    (``ratchet_ray.settings.prompt_templates``); validated when the config is built."""
