"""An ablation sweep's folder and its records: the shared flags and budget, its one writer, what
each invocation did, and what its finished runs spent (the plan: ``spec.py``).

Layout of a sweep folder (``python -m jobs.ablations --out``)::

    sweep.json                              the shared flags (a rerun must give the same ones),
                                            the sweep's budget (the latest one given) and the
                                            command that continues it
    runs/<arm>_s<seed>/<suite>/<run dir>/   each job's results_dir: exactly one run dir
    logs/<arm>_s<seed>.log                  each job's driver log, appended per attempt
    logs/ray_head.log                       the local Ray head, when the sweep started one
    jobs.json                               the Ray job of every submitted arm-seed (``jobs.py``)
    status.json                             what the last invocation did per arm-seed
    stop_requested.json                     --stop asked the running invocation to start no more
    ablations.md  ablations.json            the report (ratchet_ray/report/ablation_report.py)
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Sequence

from ratchet_ray.storage.fsutil import atomic_write_json, cannot_write
from ratchet_ray.storage.runlock import RunDirBusy, RunLock
from ratchet_ray.sweep.spec import JobOutcome, SweepError, SweepSpec, find_run, job_name

SWEEP_FILE = "sweep.json"
STATUS_FILE = "status.json"
STOP_FILE = "stop_requested.json"
"""Written by ``--stop`` (from another shell): the sweep running there submits no further job
(``jobs.run_ray_jobs``); the next invocation removes it (``lock_sweep``)."""


SWEEP_MEANWHILE = ("stop it (--stop with this --out and the sweep's --address; a sweep on a head "
                   "it started: Ctrl-C in its shell, or kill {pid} on that host) and run this "
                   "again; --status (with --address) lists its jobs meanwhile")
"""What a second sweep on a busy ``--out`` is told: a sweep's own doors, not a run's commands."""


def read_sweep_file(out_dir: Path) -> dict[str, Any]:
    """``out_dir``'s ``sweep.json``; ``SweepError`` naming the fix when ``out_dir`` is no sweep
    folder (or its file is unreadable)."""
    path = out_dir / SWEEP_FILE
    if not path.is_file():
        raise SweepError(f"{out_dir} is not a sweep folder (no {SWEEP_FILE}); pass the --out (or "
                         "--tag) a sweep was started with")
    try:
        recorded, why = json.loads(path.read_text()), "holds no sweep record"
    except (OSError, ValueError) as exc:
        recorded, why = None, f"is unreadable ({exc})"
    if not isinstance(recorded, dict):
        raise SweepError(f"{path} {why}; move it away and rerun the sweep's command with the "
                         "flags it was started with (it is written again)")
    return recorded


def check_sweep_file(spec: SweepSpec, command: str | None = None) -> None:
    """Record the shared flags and the budget on the first invocation; refuse different flags
    later, as the runs would not be comparable (the budget may change: raised to continue, it is
    recorded again). ``command``: the invocation's ``sweep_command``, recorded as the latest way
    to continue the sweep (``--status`` / ``--stop`` name it)."""
    path = spec.out_dir / SWEEP_FILE
    current = {"suite": spec.suite, "flags": spec.shared_flags()}
    if path.is_file():
        recorded = read_sweep_file(spec.out_dir)
        if {k: recorded.get(k) for k in current} != current:
            last = f" (it last ran as `{recorded['command']}`)" if recorded.get("command") else ""
            raise SweepError(
                f"{spec.out_dir} was started with {recorded.get('suite')} "
                f"{' '.join(recorded.get('flags') or [])}; rerun with those flags to resume it"
                f"{last} (only --set budget.* may change), or give a new --out for a new sweep")
    command_entry = {"command": command} if command else {}
    atomic_write_json(path, {**current, "budget": list(spec.budget), **command_entry})


def with_recorded_budget(spec: SweepSpec) -> SweepSpec:
    """``spec`` as given when it names a budget, else with the budget ``sweep.json`` recorded."""
    if spec.budget or not (spec.out_dir / SWEEP_FILE).is_file():
        return spec
    return replace(spec, budget=tuple(read_sweep_file(spec.out_dir).get("budget") or ()))


def lock_sweep(out_dir: Path) -> RunLock:
    """The sweep folder's writer lock (held until released or this process exits): a second
    sweep with the same ``--out`` is refused with a ``SweepError`` naming the holder, and a
    folder that cannot be made or written (read-only) with one naming it. An earlier ``--stop``
    (``STOP_FILE``) is cleared: the new invocation runs."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        lock = RunLock(out_dir, "python -m jobs.ablations", SWEEP_MEANWHILE).acquire()
        (out_dir / STOP_FILE).unlink(missing_ok=True)  # an earlier --stop: this one runs on
        return lock
    except RunDirBusy as exc:
        raise SweepError(f"another sweep writes to this --out: {exc}") from exc
    except OSError as exc:
        raise SweepError(cannot_write("the sweep folder", exc, "pass an --out where you can "
                                      "write (or make that one writable)", out_dir)) from exc


def write_status(out_dir: Path, outcomes: Sequence[JobOutcome]) -> Path:
    """``status.json``: every arm-seed of this invocation with what happened to it."""
    path = out_dir / STATUS_FILE
    atomic_write_json(path, {o.name: asdict(o) | {"ok": o.ok} for o in outcomes})
    return path


def read_status(out_dir: Path) -> dict[str, dict[str, Any]]:
    """``status.json`` (``write_status``): arm-seed -> its outcome; empty when there is none or
    it is unreadable (it only adds the recorded causes to ``--status``)."""
    try:
        found = json.loads((out_dir / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in found.items() if isinstance(v, dict)} if isinstance(found, dict) \
        else {}


def recorded_spend(spec: SweepSpec, arms: Sequence[str], seeds: Sequence[int]
                   ) -> dict[str, tuple[int, float]]:
    """(tokens, USD) every existing run dir of the sweep has spent (its ``llm_call`` evidence),
    keyed like the budget ledger (the run dir, resolved): the part of the sweep's spend that
    the jobs of this invocation do not report themselves (finished arm-seeds)."""
    from ratchet_ray.evidence import named_queries as nq
    from ratchet_ray.evidence.store import EvidenceStore

    spend = {}
    for arm in arms:
        for seed in seeds:
            existing = find_run(spec.out_dir / "runs" / job_name(arm, seed), spec.suite)
            if existing is None:
                continue
            with EvidenceStore(existing).connect() as con:
                tokens, cost = nq.fetch_one(con, "llm_spend_total")
            spend[str(existing.resolve())] = (int(tokens), float(cost))
    return spend
