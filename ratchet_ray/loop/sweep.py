"""An ablation sweep: every (arm, seed) is its own ``python -m jobs.skill_loop`` driver process.

Layout of a sweep folder (``jobs/ablations.py --out``)::

    sweep.json                              the shared flags (a rerun must give the same ones)
    runs/<arm>_s<seed>/<suite>/<run dir>/   each driver's results_dir: exactly one run dir
    logs/<arm>_s<seed>.log                  each driver's stdout + stderr, appended per attempt
    logs/ray_head.log                       the local Ray head, when the sweep started one
    status.json                             what the last invocation did per arm-seed
    ablations.md  ablations.json            the report (ratchet_ray/ablations.py)

Contracts:
- ``plan_jobs``: an arm-seed whose run dir has finished every round is skipped; one with
  unfinished rounds is continued with ``--resume RUN_DIR``; one without a run dir starts with
  ``[--config <arm file>] --seed S --tag <arm>_s<S>``, the shared flags and
  ``--set results_dir=runs/<arm>_s<S>``; the child resolves Default -> suite file -> arm file
  -> flags and ``--set`` (the Default arm adds no file). Each new config is validated before
  anything runs.
- ``check_sweep_file``: the first invocation records the shared flags; a later one with other
  flags is refused (the runs would not be comparable) and told how to proceed.
- ``lock_sweep``: one sweep per ``--out`` at a time (an exclusive lock on ``<out>/.lock``, held
  until the process exits); each child driver also locks its own run dir.
- ``run_jobs``: at most ``parallel`` children at once, each in its own process group. A child
  that fails is recorded (exit code, the last line of its log, the log path) and the others go
  on; ``status.json`` gives it ``ok: false`` and its ``cause`` (the root cause its driver
  recorded in ``stopped.json``: an unreachable model, a dead Docker daemon...). If the caller is
  interrupted, the running children get SIGTERM (then SIGKILL) and nothing
  else is touched; a rerun resumes them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Literal, Mapping, Sequence

from ratchet_ray.config import LoopConfig
from ratchet_ray.config_files import ConfigError, load_config
from ratchet_ray.loop.rundir import RunDir, write_json
from ratchet_ray.resources import configs_dir
from ratchet_ray.runlock import RunDirBusy, RunLock

REPO_ROOT = Path(__file__).resolve().parents[2]
ARMS = ("default", "A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8")
SWEEP_FILE = "sweep.json"
STATUS_FILE = "status.json"
# Config keys the sweep sets per child; a --set of one of them would break the layout.
RESERVED_KEYS = ("suite", "arm", "seed", "tag", "results_dir")


class SweepError(ValueError):
    """The sweep cannot run as asked; the message says the fix."""


@dataclass(frozen=True)
class SweepSpec:
    """The flags every child of a sweep shares (the arm and the seed vary)."""

    suite: str
    out_dir: Path
    rounds: int | None = None
    """None: the suite's paper value (100 MBPP+, 20 SWE-bench)."""
    n_train: int | None = None
    n_eval: int | None = None
    subset: Path | None = None
    llm: str | None = None
    dataset_path: Path | None = None
    workers: int | None = None
    sets: tuple[str, ...] = ()

    def shared_flags(self) -> list[str]:
        """The ``jobs.skill_loop`` flags of every new child, paths absolute."""
        flags: list[str] = []
        for name, value in (("--rounds", self.rounds), ("--n-train", self.n_train), ("--n-eval", self.n_eval),
                            ("--subset", self.subset and self.subset.resolve()),
                            ("--llm", self.llm),
                            ("--dataset-path", self.dataset_path and self.dataset_path.resolve()),
                            ("--workers", self.workers)):
            if value is not None:
                flags += [name, str(value)]
        for item in self.sets:
            flags += ["--set", item]
        return flags


@dataclass(frozen=True)
class Job:
    name: str
    action: Literal["new", "resume"]
    argv: list[str]
    log: Path
    results_dir: Path | None = None
    """The child's results_dir: a run that stopped leaves its cause there (``stopped.json``)."""


@dataclass(frozen=True)
class JobOutcome:
    name: str
    action: Literal["new", "resume", "skipped"]
    returncode: int | None
    wall_s: float
    log: str
    message: str = ""
    cause: str = ""
    """Why a failed child stopped: its run's ``stopped.json`` (the root cause the driver named,
    e.g. the model server was unreachable), else the last line of its log."""

    @property
    def ok(self) -> bool:
        return self.action == "skipped" or self.returncode == 0


def job_name(arm: str, seed: int) -> str:
    return f"{arm}_s{seed}"


def arm_config_file(arm: str) -> Path:
    """``configs/default.yaml`` for the Default, ``configs/ablations/<arm>.yaml`` otherwise."""
    configs = configs_dir()
    path = configs / ("default.yaml" if arm == "default" else f"ablations/{arm}.yaml")
    if not path.is_file():
        files = (configs / "ablations").glob("*.yaml")
        known = ["default", *sorted((p.stem for p in files), key=lambda s: (len(s), s))]
        raise SweepError(f"arm {arm!r} has no config file {path}; known arms: {', '.join(known)}")
    return path


def arm_files(arm: str) -> list[Path]:
    """The arm's layer above the suite file: none for the Default (``configs/default.yaml`` is
    ``LoopConfig()`` itself, and layering it again would undo the suite file), else its file."""
    return [] if arm == "default" else [arm_config_file(arm)]


def check_sets(sets: Sequence[str]) -> None:
    for item in sets:
        key = item.split("=", 1)[0].strip()
        if "=" not in item or key.split(".")[0] in RESERVED_KEYS:
            raise SweepError(f"--set {item!r}: give KEY=VALUE for a key other than "
                             f"{', '.join(RESERVED_KEYS)} (the sweep sets those per arm and seed)")


def child_config(spec: SweepSpec, arm: str, seed: int) -> LoopConfig:
    """The config a new child of ``arm``/``seed`` will resolve (validates the flags early)."""
    from ratchet_ray.loop.flags import build_overrides
    from ratchet_ray.config_files import layered_files

    overrides = build_overrides(spec.suite, rounds=spec.rounds, n_train=spec.n_train,
                                n_eval=spec.n_eval, subset=spec.subset, seed=seed,
                                tag=job_name(arm, seed), llm=spec.llm,
                                dataset_path=spec.dataset_path, workers=spec.workers)
    try:
        arm_config_file(arm)  # an unknown arm fails here, naming the known ones
        return load_config(layered_files(spec.suite, arm_files(arm)), [*overrides, *spec.sets])
    except ConfigError as exc:
        raise SweepError(f"arm {arm}, seed {seed}: {exc}") from exc


def check_sweep_file(spec: SweepSpec) -> None:
    """Record the shared flags on the first invocation; refuse different ones later."""
    path = spec.out_dir / SWEEP_FILE
    current = {"suite": spec.suite, "flags": spec.shared_flags()}
    if path.is_file():
        recorded = json.loads(path.read_text())
        if recorded != current:
            raise SweepError(
                f"{spec.out_dir} was started with {recorded['suite']} {' '.join(recorded['flags'])}"
                f"; rerun with those flags to resume it, or give a new --out for a new sweep")
        return
    write_json(path, current)


def find_run(results_dir: Path, suite: str) -> Path | None:
    """The one run dir a child left under its results_dir, or None."""
    found = sorted(d for d in (results_dir / suite).glob("*") if (d / "config.yaml").is_file())
    if len(found) > 1:
        raise SweepError(f"{results_dir} holds {len(found)} run dirs ({', '.join(map(str, found))})"
                         "; keep the one to continue and move the others out of the sweep")
    return found[0] if found else None


def is_finished(run_dir: Path) -> bool:
    run = RunDir.open(run_dir)
    return len(run.summaries()) >= run.config().rounds


def plan_jobs(spec: SweepSpec, arms: Sequence[str], seeds: Sequence[int],
              python: str = sys.executable) -> tuple[list[Job], list[JobOutcome]]:
    """Jobs to run and arm-seeds to skip (see module contracts)."""
    check_sets(spec.sets)
    jobs, skipped = [], []
    for arm in arms:
        for seed in seeds:
            name = job_name(arm, seed)
            results_dir = spec.out_dir / "runs" / name
            log = spec.out_dir / "logs" / f"{name}.log"
            existing = find_run(results_dir, spec.suite)
            base = [python, "-m", "jobs.skill_loop"]
            if existing is not None and is_finished(existing):
                skipped.append(JobOutcome(name, "skipped", None, 0.0, str(log),
                                          f"finished: {existing}"))
            elif existing is not None:
                jobs.append(Job(name, "resume", [*base, "--resume", str(existing), "--quiet"],
                                log, results_dir))
            else:
                child_config(spec, arm, seed)
                configs = [flag for path in arm_files(arm) for flag in ("--config", str(path))]
                argv = [*base, spec.suite, *configs, "--seed",
                        str(seed), "--tag", name, *spec.shared_flags(),
                        "--set", f"results_dir={results_dir.resolve()}", "--quiet"]
                jobs.append(Job(name, "new", argv, log, results_dir))
    return jobs, skipped


# ---- running ----------------------------------------------------------------------------------
def _last_line(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(empty log)"


def stop_cause(job: Job, since: float = 0.0) -> str:
    """The root cause a failed child's run recorded (``stopped.json`` written after ``since``,
    epoch seconds), else its log's last line."""
    if job.results_dir is not None:
        for stopped in sorted(Path(job.results_dir).glob("*/*/stopped.json")):
            if stopped.stat().st_mtime < since:
                continue  # left by an earlier attempt
            try:
                return str(json.loads(stopped.read_text())["cause"])
            except (OSError, ValueError, KeyError) as exc:
                return f"{stopped} is unreadable ({exc}); see {job.log}"
    return _last_line(job.log) if job.log.is_file() else f"no log at {job.log}"


def _terminate(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)  # its own group (start_new_session): only this child
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def run_jobs(jobs: Sequence[Job], parallel: int, env: Mapping[str, str],
             on_done: Callable[[JobOutcome], None] | None = None,
             poll_s: float = 0.5) -> list[JobOutcome]:
    """Run ``jobs`` with at most ``parallel`` at once; one outcome per job, in finishing order."""
    if parallel < 1:
        raise SweepError(f"parallel must be >= 1, got {parallel}")
    pending, running, outcomes = list(jobs), {}, []

    def finish(outcome: JobOutcome) -> None:
        outcomes.append(outcome)
        if on_done is not None:
            on_done(outcome)

    try:
        while pending or running:
            while pending and len(running) < parallel:
                job = pending.pop(0)
                job.log.parent.mkdir(parents=True, exist_ok=True)
                with open(job.log, "a") as handle:
                    handle.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {job.action}: "
                                 f"{' '.join(job.argv)}\n")
                    handle.flush()
                    try:
                        proc = subprocess.Popen(job.argv, cwd=REPO_ROOT, env=dict(env),
                                                stdout=handle, stderr=subprocess.STDOUT,
                                                start_new_session=True)
                    except OSError as exc:
                        finish(JobOutcome(job.name, job.action, None, 0.0, str(job.log),
                                          f"cannot start: {type(exc).__name__}: {exc}"))
                        continue
                running[proc] = (job, time.monotonic(), time.time())
            time.sleep(poll_s)
            for proc in [p for p in running if p.poll() is not None]:
                job, started, started_at = running.pop(proc)
                message = "" if proc.returncode == 0 else (
                    f"exit {proc.returncode}: {_last_line(job.log)} (log: {job.log})")
                cause = "" if proc.returncode == 0 else stop_cause(job, started_at)
                finish(JobOutcome(job.name, job.action, proc.returncode,
                                  time.monotonic() - started, str(job.log), message, cause))
    finally:
        for proc in running:
            _terminate(proc)
    return outcomes


def lock_sweep(out_dir: Path) -> RunLock:
    """The sweep folder's writer lock (held until released or this process exits): a second
    sweep with the same ``--out`` is refused with a ``SweepError`` naming the holder."""
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        return RunLock(out_dir, "python -m jobs.ablations").acquire()
    except RunDirBusy as exc:
        raise SweepError(f"another sweep writes to this --out: {exc}") from exc


def write_status(out_dir: Path, outcomes: Sequence[JobOutcome]) -> Path:
    """``status.json``: every arm-seed of this invocation with what happened to it."""
    path = out_dir / STATUS_FILE
    write_json(path, {o.name: asdict(o) | {"ok": o.ok} for o in outcomes})
    return path


def cpus_per_run(config: LoopConfig) -> float:
    """Ray CPUs one driver's actors ask for (``runtime.ROLE_RESOURCES`` x ``config.workers``)."""
    from ratchet_ray.loop.runtime import ROLE_RESOURCES

    def cpus(role: str) -> float:
        return float(ROLE_RESOURCES[role].get("num_cpus", 1))

    w = config.workers
    return (cpus("bank") + cpus("synthesizer") + w.solvers * cpus("solver")
            + w.graders * cpus("grader") + w.critics * cpus("critic"))
