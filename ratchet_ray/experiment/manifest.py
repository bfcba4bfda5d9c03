"""The built-in evaluator's manifest (``eval-skill-loop --manifest FILE``, default
``EvaluatorManifest()``): the config keys a candidate may change, those a human must review,
the evaluator's own pinned settings and its cost budget. The file is frozen with the evaluator
and its hash reported (``manifest_sha256``), so a candidate cannot widen its own allowlist.

Contracts:
- ``flatten(data)``: an overlay's nested mapping as dotted leaf keys; an empty mapping is a leaf.
- ``check_overlay(data)`` -> ``OverlayCheck(vetoes, review)``: a key matching ``review_keys``
  goes to ``review`` (the engine's ``needs_review``); any other key matching no
  ``allowed_keys`` is a veto naming it. Patterns are ``fnmatch`` globs over the dotted key.
- ``EvaluatorManifest.load(path)`` raises ``ManifestError`` naming the file and the problem.
- ``sha256()`` hashes the content (canonical JSON), whatever file it came from.

Why these defaults: docs/experiment-loop.md (governance is tunable, the measuring stick is not;
rollback and the tampering rule need a human).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Mapping, Sequence

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


def key_matches(key: str, patterns: Sequence[str]) -> bool:
    """Whether a dotted key matches one of ``patterns`` (``synth.*`` matches ``synth.a.b``)."""
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
            if key_matches(key, self.review_keys):
                check.review.append(f"the config overlay sets {key}, a safety-critical key: a "
                                    "human reviews it before it is merged")
            elif not key_matches(key, self.allowed_keys):
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
