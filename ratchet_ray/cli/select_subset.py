"""Deterministic hard-subset selection from a direct-LLM baseline (``python -m
jobs.select_subset --source BASELINE.jsonl --suite SUITE ...``): writes
``results/subsets/<suite>_hard<N>_t<T>_e<E>_seed<S>.json`` with ``train_ids`` / ``eval_ids``.

Contracts:
- Sizes and seed not given as flags come from the config, layered as every job's (SWE-bench's
  file: 90 / 60); ``--n-hard`` defaults to ``n_train + n_eval``. ``--dry-run`` writes nothing.
- A task is *hard* when not solved on every one of its ``probes`` calls; it qualifies when
  solved on at least ``min_solved`` (0: every hard task).
- Selection is stratified by difficulty (probes solved), each stratum and each stratum of the
  train/eval split getting its share by largest remainder. A suite with a ``subset_group``
  (``suites.hooks.subset_grouping``; SWE-bench: the repository) has each pick take its
  least-picked group in the stratum, and the document counts picks per group under the
  suite's label.
- Tasks the suite excludes (``suites.base.excluded_tasks``; SWE-bench's quarantine file) are
  never picked; the document lists the baseline's as ``excluded_ids``.
- Same baseline content, suite, sizes, probes and seed -> a byte-identical file (no timestamps
  or paths; the source is its SHA-256).
- Selection functions raise ``SubsetError`` (a ``ValueError``) naming the problem and the fix;
  only ``main`` turns it into a click error.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable, Iterable

import click

from ratchet_ray.cli.options import one_line, suite_config
from ratchet_ray.run_config.options import (config_option, n_eval_option, n_train_option,
                                            profile_option, seed_option, set_option)
from ratchet_ray.loop.entry import DRY_RUN, SUITE, version_option
from ratchet_ray.storage.fsutil import atomic_write_json


class SubsetError(ValueError):
    """The baseline cannot give the requested subset; the message says what to change."""


def _rows(source: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(source.read_bytes().splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))  # bytes: not UTF-8 is a UnicodeDecodeError
            except ValueError as err:
                raise SubsetError(f"{source}:{n}: not JSON ({err}); the baseline file is "
                                  "written by `python -m jobs.baseline`") from err
    return rows


def solve_counts(rows: Iterable[dict[str, Any]], probes: int) -> dict[str, int]:
    """task id -> probes passed, over the first ``probes`` probes of every task."""
    seen: dict[str, dict[int, bool]] = defaultdict(dict)
    for row in rows:
        seen[row["task_id"]].setdefault(int(row["probe"]), bool(row["passed"]))
    short = sorted(t for t, p in seen.items() if len([i for i in p if i < probes]) < probes)
    if short:
        raise SubsetError(
            f"{len(short)} task(s) have fewer than {probes} baseline probes (e.g. {short[:3]}); "
            "finish the baseline (rerun `python -m jobs.baseline`, it resumes) or lower --probes")
    return {t: sum(ok for i, ok in p.items() if i < probes) for t, p in seen.items()}


def _largest_remainder(total: int, sizes: dict[int, int]) -> dict[int, int]:
    """Split ``total`` over strata proportionally to ``sizes`` (ties: lower stratum first)."""
    whole = sum(sizes.values())
    quotas = {k: total * v / whole for k, v in sizes.items()}
    shares = {k: min(sizes[k], int(q)) for k, q in quotas.items()}
    for k in sorted(quotas, key=lambda k: (-(quotas[k] - int(quotas[k])), k)):
        if sum(shares.values()) >= total:
            break
        if shares[k] < sizes[k]:
            shares[k] += 1
    while sum(shares.values()) < total:  # a stratum ran dry: top up from the others in order
        k = next(k for k in sorted(sizes) if shares[k] < sizes[k])
        shares[k] += 1
    return shares


Grouping = Callable[[str], str]
"""Task id -> the group subset selection balances."""


def _seeded(ids: list[str], rng: random.Random) -> list[str]:
    ids = sorted(ids)
    rng.shuffle(ids)
    return ids


def _balanced_pick(strata: dict[int, list[str]], quotas: dict[int, int], grouping: Grouping,
                   seed: int, label: str) -> dict[int, list[str]]:
    """Fill every stratum's quota. Each pick serves the least-picked group that an unfilled
    stratum still offers, from the stratum with the most picks left, taking that stratum's first
    such task in its seeded order."""
    pools = {k: _seeded(v, random.Random(f"{seed}:{label}:{k}")) for k, v in strata.items()}
    chosen: dict[int, list[str]] = {k: [] for k in sorted(strata) if quotas.get(k)}
    per_group: dict[str, int] = defaultdict(int)
    group_order = {g: i for i, g in enumerate(_seeded(
        sorted({grouping(t) for v in strata.values() for t in v}),
        random.Random(f"{seed}:{label}:groups")))}
    while True:
        open_strata = [k for k in chosen if len(chosen[k]) < quotas[k]]
        if not open_strata:
            return chosen
        offered = {grouping(t) for k in open_strata for t in pools[k]}
        group = min(offered, key=lambda g: (per_group[g], group_order[g]))
        k = max((k for k in open_strata if any(grouping(t) == group for t in pools[k])),
                key=lambda k: (quotas[k] - len(chosen[k]), -k))
        task_id = next(t for t in pools[k] if grouping(t) == group)
        pools[k].remove(task_id)
        chosen[k].append(task_id)
        per_group[group] += 1


def select_subset(rows: list[dict[str, Any]], *, suite: str, n_hard: int, n_train: int,
                  n_eval: int, seed: int, probes: int, min_solved: int = 0,
                  excluded: Iterable[str] = ()) -> dict[str, Any]:
    """The subset document (see module docstring); raises SubsetError when it cannot be met.
    ``suite`` must be registered in this process (its plugin loaded), for its grouping;
    ``excluded`` tasks (the suite's ``excluded_tasks``: a quarantine) are never picked."""
    excluded = set(excluded)
    left_out = sorted({str(r["task_id"]) for r in rows if r.get("task_id") in excluded})
    rows = [r for r in rows if r.get("task_id") not in excluded]
    if n_train + n_eval != n_hard:
        raise SubsetError(f"--n-train {n_train} + --n-eval {n_eval} must equal --n-hard {n_hard}")
    counts = solve_counts(rows, probes)
    if not counts:
        raise SubsetError(f"the baseline holds no {suite} tasks; fix: run `python -m "
                          f"jobs.baseline {suite} --out FILE` first and pass FILE as --source")
    hard = {t: c for t, c in counts.items() if min_solved <= c < probes}
    if not hard:
        raise SubsetError(f"none of the {len(counts)} baseline tasks is hard (not solved on all "
                          f"{probes} probes, solved on at least {min_solved}); fix: lower "
                          "--min-solved, or take a baseline of a weaker model or a harder suite")
    if len(hard) < n_hard:
        raise SubsetError(f"only {len(hard)} of {len(counts)} tasks are hard (not solved "
                          f"on all {probes} probes, solved on at least {min_solved}); "
                          f"lower --n-hard to <= {len(hard)}")
    strata: dict[int, list[str]] = defaultdict(list)
    for task_id, solved in hard.items():
        strata[solved].append(task_id)
    from ratchet_ray.suites.hooks import subset_grouping

    labelled = subset_grouping(suite)
    grouping = labelled[1] if labelled else (lambda _task_id: "")  # no grouping: one group
    picks = _largest_remainder(n_hard, {k: len(v) for k, v in strata.items()})
    chosen = _balanced_pick(strata, picks, grouping, seed, "pick")
    eval_share = _largest_remainder(n_eval, {k: len(v) for k, v in chosen.items()})
    evals = _balanced_pick(chosen, eval_share, grouping, seed, "split")
    eval_ids = [t for ids in evals.values() for t in ids]
    train_ids = [t for ids in chosen.values() for t in ids if t not in set(eval_ids)]
    doc: dict[str, Any] = {
        "suite": suite, "seed": seed, "probes": probes, "min_solved": min_solved,
        "n_hard": n_hard, "n_train": n_train, "n_eval": n_eval, "hard_available": len(hard),
        "strata": {f"solved_{k}_of_{probes}": len(v) for k, v in chosen.items()},
        "train_ids": sorted(train_ids), "eval_ids": sorted(eval_ids),
    }
    if left_out:
        doc["excluded_ids"] = left_out
    if labelled is not None:
        doc[labelled[0]] = dict(sorted(Counter(map(labelled[1], train_ids + eval_ids)).items()))
    return doc


def subset_path(out_dir: Path, suite: str, n_hard: int, n_train: int, n_eval: int,
                seed: int) -> Path:
    return out_dir / f"{suite}_hard{n_hard}_t{n_train}_e{n_eval}_seed{seed}.json"


@click.command("select-subset", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--source", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              required=True, help="Baseline JSONL written by `python -m jobs.baseline`.")
@click.option("--suite", type=SUITE, required=True,
              help="Suite whose rows of --source are used: a registered suite, a plugin's "
                   "too (--set suite_plugins=[path.py] or $RATCHET_SUITES).")
@click.option("--n-hard", type=click.IntRange(min=1), help="Default: n_train + n_eval.")
@n_train_option("Default: the config's n_train.")
@n_eval_option("Default: the config's n_eval.")
@seed_option("Default: the config's seed (42).")
@click.option("--probes", type=click.IntRange(min=1), default=5, show_default=True,
              help="Baseline calls per task that count.")
@click.option("--min-solved", type=click.IntRange(min=0), default=0, show_default=True,
              help="Keep only tasks solved on at least this many probes.")
@profile_option("Named settings giving the defaults of --n-train/--n-eval/--seed (paper: "
                "the paper's hard subset's sizes).")
@config_option("YAML config file(s) giving the defaults of --n-train/--n-eval/--seed.")
@set_option("Config override, e.g. --set n_train=30 (repeatable).")
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("results/subsets"), show_default=True,
              help="Folder of the subset file (named after the suite, sizes and seed).")
@DRY_RUN
@version_option()
def main(source: Path, suite: str, n_hard: int | None, n_train: int | None, n_eval: int | None,
         seed: int | None, probes: int, min_solved: int, profiles: tuple, config_files: tuple,
         sets: tuple, out_dir: Path, dry_run: bool) -> None:
    """Pick a deterministic hard subset and split it into train and eval ids."""
    config = suite_config(suite, config_files, [f"suite={suite}", *sets], profiles)
    n_train = config.n_train if n_train is None else n_train
    n_eval = config.n_eval if n_eval is None else n_eval
    n_hard = n_train + n_eval if n_hard is None else n_hard
    seed = config.seed if seed is None else seed
    if dry_run:  # the file it would write: the subset a profile's runs name
        click.echo(subset_path(out_dir, suite, n_hard, n_train, n_eval, seed))
        return
    from ratchet_ray.suites.base import excluded_tasks

    data = source.read_bytes()
    # ValueError: a SubsetError, or the tasks the suite excludes cannot be read (e.g. a missing
    # quarantine file), named with the fix.
    with one_line(ValueError):
        every = _rows(source)
        rows = [r for r in every if r.get("suite", suite) == suite]
        if every and not rows:  # a baseline of another suite
            others = sorted({str(r.get("suite")) for r in every})
            raise SubsetError(f"{source} holds baseline rows of {', '.join(others)}, none of "
                              f"{suite}; fix: pass --suite {others[0]}, or run `python -m "
                              f"jobs.baseline {suite} --out FILE` and pass FILE as --source")
        if not rows:
            raise SubsetError(f"{source} is empty (no baseline rows); fix: run `python -m "
                              f"jobs.baseline {suite} --out {source}` first (it resumes)")
        doc = select_subset(rows, suite=suite, n_hard=n_hard, n_train=n_train, n_eval=n_eval,
                            seed=seed, probes=probes, min_solved=min_solved,
                            excluded=excluded_tasks(config))
    doc["source_sha256"] = hashlib.sha256(data).hexdigest()
    out = subset_path(out_dir, suite, n_hard, n_train, n_eval, seed)
    atomic_write_json(out, doc)  # a subset file is whole or absent
    click.echo(f"{out}: {len(doc['train_ids'])} train / {len(doc['eval_ids'])} eval "
               f"from {doc['hard_available']} hard tasks; strata {doc['strata']}")


COMMANDS = [main]
