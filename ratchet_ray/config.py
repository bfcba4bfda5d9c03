"""One ``LoopConfig`` for a run: the paper's Default, YAML files on top, ``key.sub=value`` last.

Contracts:
- ``LoopConfig()`` is the paper's Default (DESIGN.md section 1).
- ``load_config(files, overrides)`` merges the files in order, then the overrides, and validates;
  any problem raises ``ConfigError`` naming the file or override, the key, and the valid keys or
  values.
- ``dump_config`` writes the resolved config (``config.yaml`` in the run dir) so that
  ``load_config([that file])`` reproduces it exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ratchet_ray.suites.swebench.settings import SwebenchSettings

_STRICT = ConfigDict(extra="forbid", validate_assignment=True)


class LLMSettings(BaseModel):
    model_config = _STRICT
    backend: Literal["local", "bedrock", "openai"] = "local"
    """Generation backend: local llama.cpp Gemma (default), Amazon Bedrock, or an OpenAI-compatible server."""
    embedder: Literal["local", "bedrock", "openai"] | None = None
    """Embedding backend; None means the same as ``backend``."""
    model: str | None = None
    """Model id override (backend default when None)."""
    base_url: str | None = None
    """Server URL for the ``openai`` backend, e.g. http://127.0.0.1:8000/v1."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    """Sampling temperature for every role."""
    max_tokens: int = Field(default=512, gt=0)
    """Generation cap for the Solver; structured roles use their own smaller caps."""
    requests_per_minute: int = Field(default=0, ge=0)
    """Cluster-wide request budget shared by every actor of a run (0 = unlimited)."""
    tokens_per_minute: int = Field(default=0, ge=0)
    """Cluster-wide token budget (0 = unlimited)."""


class RouterSettings(BaseModel):
    model_config = _STRICT
    inject: bool = True
    """False is ablation A1: the Solver never sees a skill."""
    mode: Literal["llm", "retrieval_only"] = "llm"
    """'retrieval_only' is ablation A2: the top retrieved skill is injected without an LLM pick."""
    full_bank_max: int = Field(default=20, ge=0)
    """Up to this many ACTIVE skills, every one goes to the LLM; above it, a shortlist does."""
    shortlist_k: int = Field(default=10, gt=0)
    """Top-K from tf-idf and top-K from embeddings form the shortlist (union)."""


class SynthSettings(BaseModel):
    model_config = _STRICT
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
    max_reprompts: int = Field(default=2, ge=0)
    """Dedup re-prompts before a proposal is dropped."""
    max_skill_chars: int = Field(default=2400, gt=0)
    """Length cap on a skill's serialised YAML."""
    max_new_per_round: int = Field(default=5, gt=0)
    """At most this many skills are authored per round (largest clusters first)."""


class MetaSettings(BaseModel):
    model_config = _STRICT
    enabled: bool = True
    """False is ablation A3: the Synthesizer writes skills with no authoring prior."""
    refresh_every_rounds: int = Field(default=1_000_000, gt=0)
    """Meta-synth cadence; the Default pins it off (ablation A8 turns it on)."""


class CuratorSettings(BaseModel):
    model_config = _STRICT
    retire_tau: float = Field(default=0.10, ge=0.0, le=1.0)
    """Retire when contribution <= -tau ..."""
    min_trials: int = Field(default=100, ge=1)
    """... and at least this many routed train trials have accumulated (N_min)."""
    active_cap: int = Field(default=50, ge=1)
    """Hard cap C on ACTIVE skills; a full bank evicts the lowest-contribution skill."""


class RollbackSettings(BaseModel):
    model_config = _STRICT
    enabled: bool = True
    threshold: float = Field(default=0.10, ge=0.0, le=1.0)
    """A round regresses when eval pass@1 is more than this below the best so far."""
    consecutive: int = Field(default=5, ge=1)
    """Consecutive regressed rounds before the best round's bank is restored."""


class WorkerSettings(BaseModel):
    model_config = _STRICT
    solvers: int = Field(default=2, ge=1)
    graders: int = Field(default=2, ge=1)
    critics: int = Field(default=1, ge=1)


class GraderSettings(BaseModel):
    model_config = _STRICT
    timeout_s: float = Field(default=20.0, gt=0)
    """MBPP+: time budget floor per task; tasks whose reference solution is slow get what
    evalplus's per-test limits allow (up to 136 s). SWE-bench: the limit of each Docker command."""
    memory_mb: int = Field(default=4096, gt=0)
    """Address-space limit of the sandboxed process (evalplus's own default)."""
    instance_deadline_s: float = Field(default=1800.0, gt=0)
    """SWE-bench: whole-instance deadline, separate from per-command timeouts."""


class LoopConfig(BaseModel):
    """Everything one run (one arm, one seed) needs. Defaults are the paper's Default."""

    model_config = _STRICT
    suite: Literal["mbpp", "swebench"] = "mbpp"
    arm: str = "default"
    seed: int = 42
    rounds: int = Field(default=10, ge=0)
    n_train: int = Field(default=60, ge=0)
    n_eval: int = Field(default=40, ge=0)
    subset: str | None = None
    """Path of a hard-subset file (results/subsets/...json); overrides n_train/n_eval."""
    dataset_path: str | None = None
    """Local dataset file for offline use."""
    results_dir: str = "results"
    tag: str | None = None
    llm: LLMSettings = Field(default_factory=LLMSettings)
    router: RouterSettings = Field(default_factory=RouterSettings)
    synth: SynthSettings = Field(default_factory=SynthSettings)
    meta: MetaSettings = Field(default_factory=MetaSettings)
    curator: CuratorSettings = Field(default_factory=CuratorSettings)
    rollback: RollbackSettings = Field(default_factory=RollbackSettings)
    workers: WorkerSettings = Field(default_factory=WorkerSettings)
    grader: GraderSettings = Field(default_factory=GraderSettings)
    swebench: SwebenchSettings = Field(default_factory=SwebenchSettings)
    """Dataset, instance images, containers and the patch agent of the SWE-bench suite."""


class ConfigError(ValueError):
    """A config file or override is invalid; the message names where, what and the valid choices."""


def _parse_override(text: str) -> tuple[list[str], Any]:
    if "=" not in text:
        raise ConfigError(f"override {text!r}: expected key.sub=value, e.g. curator.active_cap=100")
    key, raw = text.split("=", 1)
    return key.strip().split("."), yaml.safe_load(raw) if raw.strip() else None


def _set_path(tree: dict, path: list[str], value: Any, origin: str) -> None:
    model: type[BaseModel] | None = LoopConfig
    for i, part in enumerate(path):
        fields = model.model_fields if model else {}
        if part not in fields:
            where = ".".join(path[:i]) or "top level"
            raise ConfigError(
                f"{origin}: unknown key {'.'.join(path[: i + 1])!r} at {where}; "
                f"valid keys: {', '.join(sorted(fields))}"
            )
        annotation = fields[part].annotation
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
        if i == len(path) - 1:
            tree[part] = value
        else:
            tree = tree.setdefault(part, {})
            if not isinstance(tree, dict):
                raise ConfigError(f"{origin}: {'.'.join(path[: i + 1])} is not a section")


def _flatten(data: dict, prefix: tuple[str, ...] = ()) -> Iterable[tuple[list[str], Any]]:
    for key, value in data.items():
        path = (*prefix, str(key))
        if isinstance(value, dict) and value:
            yield from _flatten(value, path)
        else:
            yield list(path), value


def _explain(err: ValidationError, origin: str) -> ConfigError:
    lines = []
    for item in err.errors():
        loc = ".".join(str(p) for p in item["loc"])
        expected = item.get("ctx", {}).get("expected")
        hint = f" (valid: {expected})" if expected else ""
        lines.append(f"{origin}: {loc}: {item['msg']}{hint}")
    return ConfigError("\n".join(lines))


def load_config(files: Iterable[str | Path] = (), overrides: Iterable[str] = ()) -> LoopConfig:
    """Merge YAML ``files`` in order, then ``overrides`` (``key.sub=value``); validate once."""
    tree: dict[str, Any] = {}
    for file in files:
        path = Path(file)
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"{path}: cannot read YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of config keys at the top level")
        for key_path, value in _flatten(data):
            _set_path(tree, key_path, value, str(path))
    for text in overrides:
        key_path, value = _parse_override(text)
        _set_path(tree, key_path, value, f"override {text!r}")
    try:
        return LoopConfig.model_validate(tree)
    except ValidationError as exc:
        raise _explain(exc, "config") from exc


def dump_config(config: LoopConfig, path: str | Path) -> None:
    """Write the resolved config; ``load_config([path])`` gives back an equal config."""
    Path(path).write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))
