"""The built-in evaluator's manifest: which config keys a candidate may change, which of them a
human must review, the evaluator's own pinned settings and its per-experiment cost budget.

``ratchet experiment eval-skill-loop --manifest FILE`` reads it (default: ``EvaluatorManifest()``,
the values below). The file is frozen with the evaluator: the engine hashes every file the
evaluator command names that is not editable, and the contract line reports
``manifest_sha256``, so a candidate can neither widen its own allowlist nor hide that it did.

Contracts:
- ``flatten(data)`` turns a config overlay's nested mapping into dotted leaf keys
  (``{"synth": {"dedup_threshold": 0.9}}`` -> ``synth.dedup_threshold``); an empty mapping is
  a leaf too (it would replace a section).
- ``check_overlay(data)`` -> ``OverlayCheck(vetoes, review)``: every leaf key matching a
  ``review_keys`` pattern goes to ``review`` (the candidate is evaluated, and kept only by a
  human: the engine's ``needs_review``); every other key that matches no ``allowed_keys``
  pattern is a veto naming the key. Patterns are ``fnmatch`` globs over the dotted key
  (``synth.*`` matches ``synth.a.b``).
- ``EvaluatorManifest.load(path)`` raises ``ManifestError`` naming the file and the problem for
  an unknown field, a pattern that is not a string, or settings that are not a mapping.
- ``sha256()`` hashes the manifest's content (canonical JSON), whatever file it came from.

Why these defaults (docs/experiment-loop.md): a candidate tunes the governance the paper
ablates (``router.*``, ``synth.*``, ``curator.*``, the meta-skill cadence) and nothing that
moves the measuring stick: the model and its backend, sampling temperatures and token caps
(``llm.*``), the data and split (``dataset_path``, ``subset``, ``n_train``, ``n_eval``,
``seed``, ``rounds``), the grader and its sandbox (``grader.*``), budgets, infrastructure and
workers. Rollback and the tampering rule are the ratchet's safety net: a candidate may change
them, but only a human merges that.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Mapping

import yaml

DEFAULT_ALLOWED_KEYS = ("router.*", "synth.*", "curator.*", "rollback.*", "meta.enabled",
                        "meta.refresh_every_rounds", "meta.refresh_every_tasks")
DEFAULT_REVIEW_KEYS = ("rollback.*", "curator.retire_on_tampering",
                       "curator.tampering_overrides_do_not_retire")
DEFAULT_COST_BUDGET_USD = 10.0
"""Per experiment (one evaluation, all its seeds): the runs stop and the candidate is vetoed."""


class ManifestError(ValueError):
    """The manifest file is invalid; the message names the file, the field and the fix."""


@dataclass(frozen=True)
class OverlayCheck:
    vetoes: list[str] = field(default_factory=list)
    review: list[str] = field(default_factory=list)


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted leaf keys of a nested mapping (module contract)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _matches(key: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatchcase(key, p) for p in patterns)


@dataclass(frozen=True)
class EvaluatorManifest:
    allowed_keys: tuple[str, ...] = DEFAULT_ALLOWED_KEYS
    """Config keys (dotted globs) a candidate's overlay may set."""
    review_keys: tuple[str, ...] = DEFAULT_REVIEW_KEYS
    """Safety-critical keys: a candidate that sets one is evaluated but never merged by the
    engine (``needs_review``)."""
    settings: dict[str, Any] = field(default_factory=dict)
    """The evaluator's own settings (dotted key -> value), applied over the candidate's overlay
    on every seed's run (e.g. the backend, model and workers the yardstick uses)."""
    cost_budget_usd: float | None = DEFAULT_COST_BUDGET_USD
    """Per experiment; None = no cost limit."""
    source: str = "built-in"

    @classmethod
    def load(cls, path: str | Path) -> "EvaluatorManifest":
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ManifestError(f"{path}: cannot read the evaluator manifest: {exc}") from exc
        if not isinstance(data, dict):
            raise ManifestError(f"{path}: the evaluator manifest must be a mapping with "
                                "allowed_keys, review_keys, settings, cost_budget_usd")
        known = {"allowed_keys", "review_keys", "settings", "cost_budget_usd"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ManifestError(f"{path}: unknown field(s) {', '.join(unknown)}; valid: "
                                f"{', '.join(sorted(known))}")
        kwargs: dict[str, Any] = {"source": str(path)}
        for name in ("allowed_keys", "review_keys"):
            if name in data:
                value = data[name]
                if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
                    raise ManifestError(f"{path}: {name} must be a list of dotted key globs, "
                                        f"e.g. [synth.*, curator.min_trials]; got {value!r}")
                kwargs[name] = tuple(value)
        if "settings" in data:
            if not isinstance(data["settings"], dict):
                raise ManifestError(f"{path}: settings must be a mapping of config keys, e.g. "
                                    "{workers: {solvers: 1}}")
            kwargs["settings"] = flatten(data["settings"])
        if "cost_budget_usd" in data:
            budget = data["cost_budget_usd"]
            if budget is not None and (isinstance(budget, bool)
                                       or not isinstance(budget, (int, float)) or budget < 0):
                raise ManifestError(f"{path}: cost_budget_usd must be a number >= 0 or null, "
                                    f"got {budget!r}")
            kwargs["cost_budget_usd"] = None if budget is None else float(budget)
        return cls(**kwargs)

    def check_overlay(self, data: Mapping[str, Any]) -> OverlayCheck:
        """Vetoes and review reasons of a candidate's overlay (module contract)."""
        check = OverlayCheck()
        for key in sorted(flatten(data)):
            if _matches(key, self.review_keys):
                check.review.append(f"the config overlay sets {key}, a safety-critical key: a "
                                    "human reviews it before it is merged")
            elif not _matches(key, self.allowed_keys):
                check.vetoes.append(f"the config overlay sets {key}, which the evaluator does not "
                                    "let a candidate change (allowed: "
                                    f"{', '.join(self.allowed_keys)})")
        return check

    def overrides(self) -> list[str]:
        """The pinned settings as ``key=value`` overrides (JSON values parse as YAML)."""
        return [f"{key}={json.dumps(value)}" for key, value in sorted(self.settings.items())]

    def sha256(self) -> str:
        content = {k: v for k, v in asdict(self).items() if k != "source"}
        return hashlib.sha256(json.dumps(content, sort_keys=True, default=list).encode()
                              ).hexdigest()
