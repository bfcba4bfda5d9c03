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
                    workers: int | None = None, bank: Path | None = None) -> list[str]:
    """The ``key=value`` overrides the flags stand for (only flags that were given)."""
    values = {"suite": suite, "rounds": rounds, "n_train": n_train, "n_eval": n_eval,
              "subset": subset and str(subset.resolve()), "seed": seed, "tag": tag,
              "llm.backend": llm, "meta.refresh_every_rounds": meta_every,
              "dataset_path": dataset_path and str(dataset_path.resolve()),
              "workers.solvers": workers, "workers.graders": workers,
              "synth.enabled": False if no_synth else None,
              "bank.pack": bank and str(bank.resolve())}
    # JSON quoting keeps YAML from reading a tag such as "no" or "007" as a bool or a number.
    return [f"{k}={json.dumps(v) if isinstance(v, str) else v}"
            for k, v in values.items() if v is not None]


def loop_size_problems(config) -> list[str]:
    """What makes a new run of ``config`` (a ``LoopConfig``) measure nothing, one line each
    naming the setting, why, and the valid values: no round, no train task (nothing to learn
    from) or no eval task (an eval pass@1 over zero tasks). The sizes are the subset file's lists
    when ``subset`` is set (a file that cannot be read is ``startable_problems``' to report),
    else ``n_train`` / ``n_eval``. Empty: fine."""
    problems = []
    if config.rounds < 1:
        problems.append(f"rounds={config.rounds} runs no round, so nothing is solved, graded or "
                        "learned; fix: --rounds 1 or more (the quickstart runs 2, the paper 100)")
    if config.subset:
        from ratchet_ray.suites.base import read_subset

        try:
            train, eval_ = read_subset(config.subset)
        except ValueError:
            return problems
        sizes = {"train_ids": len(train), "eval_ids": len(eval_)}
        problems += [f"subset file {config.subset} has an empty {key} list; fix: "
                     f"{'train' if key == 'train_ids' else 'eval'} needs 1 task or more "
                     "(jobs.select_subset writes both)" for key, n in sizes.items() if n == 0]
        return problems
    if config.n_train < 1:
        problems.append(f"n_train={config.n_train}: the loop learns from train failures and "
                        "would have no train task; fix: --n-train 1 or more (the paper: 60)")
    if config.n_eval < 1:
        problems.append(f"n_eval={config.n_eval}: eval pass@1 would be measured on no task; "
                        "fix: --n-eval 1 or more (the paper: 40)")
    return problems
