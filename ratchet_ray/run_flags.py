"""The ``key=value`` config overrides that the run flags stand for, shared by ``ratchet run`` /
``python -m jobs.skill_loop`` and the sweep that launches them (``sweep/spec.py``), so the sweep
validates a child's config exactly as the child will build it."""

from __future__ import annotations

import json
from pathlib import Path


def build_overrides(suite: str, *, rounds: int | None = None, n_train: int | None = None,
                    n_eval: int | None = None, subset: Path | None = None, seed: int | None = None,
                    tag: str | None = None, llm: str | None = None, no_synth: bool = False,
                    meta_every: int | None = None, dataset_path: Path | None = None,
                    workers: int | None = None) -> list[str]:
    """The ``key=value`` overrides the flags stand for (only flags that were given)."""
    values = {"suite": suite, "rounds": rounds, "n_train": n_train, "n_eval": n_eval,
              "subset": subset and str(subset.resolve()), "seed": seed, "tag": tag,
              "llm.backend": llm, "meta.refresh_every_rounds": meta_every,
              "dataset_path": dataset_path and str(dataset_path.resolve()),
              "workers.solvers": workers, "workers.graders": workers,
              "synth.enabled": False if no_synth else None}
    # JSON quoting keeps YAML from reading a tag such as "no" or "007" as a bool or a number.
    return [f"{k}={json.dumps(v) if isinstance(v, str) else v}"
            for k, v in values.items() if v is not None]
