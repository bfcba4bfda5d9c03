"""An ablation sweep's plan: every (arm, seed) is its own ``python -m jobs.skill_loop`` Ray job
(its folder's records: ``folder.py``).

Contracts:
- ``plan_jobs``: an arm-seed whose run dir finished every round is skipped, one with unfinished
  rounds gets ``--resume RUN_DIR``, a new one ``[--config <arm file>] --seed S --tag
  <arm>_s<S>``, the shared flags and ``--set results_dir=runs/<arm>_s<S>`` (the Default arm
  adds no file). A user's arm YAML (``is_arm_file``) names its runs by its stem (``arm_name``).
  Each new config is validated first, backend and subset file too
  (``loop.entry.startable_problems``). Every job gets the sweep's scope as ``budget.scope`` and
  the sweep's budget, a new one the scope as ``llm.limiter_scope`` too (one rate limit), and
  runs from the folder the sweep started in (``Job.cwd``).
- Budget: ``--set budget.max_tokens`` / ``budget.max_cost_usd`` bound the sum over all
  arm-seeds (``split_sets``; recorded by ``folder.check_sweep_file``).
"""

from __future__ import annotations

import hashlib
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Sequence

from ratchet_ray.settings.schema import WRITE_AS_MAPPING, LoopConfig, read_config_file
from ratchet_ray.run_config.files import ConfigError, load_config
from ratchet_ray.loop.rundir import RunDir
from ratchet_ray.settings.resources import configs_dir

ARMS = ("default", "A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8")
_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,40}$")
# Config keys the sweep sets per child; a --set of one of them would break the layout.
RESERVED_KEYS = ("suite", "arm", "seed", "tag", "results_dir", "budget.scope",
                 "llm.limiter_scope")
BUDGET_KEYS = ("budget.max_tokens", "budget.max_cost_usd")
RUN_FLAGS = ("rounds", "n_train", "n_eval", "subset", "llm", "dataset_path", "workers", "bank")
"""``SweepSpec``'s fields that are run flags, in the order ``sweep.json`` records them."""


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
    bank: Path | None = None
    """A skill pack every arm-seed's bank starts from, on probation (``bank.pack``)."""
    profiles: tuple[str, ...] = ()
    """``--profile`` names every child takes (``run_config.profiles``), in order."""
    sets: tuple[str, ...] = ()
    """``--set`` items other than the budget."""
    budget: tuple[str, ...] = ()
    """``budget.max_tokens=N`` / ``budget.max_cost_usd=X``: the sweep's budget (all arms)."""

    @property
    def scope(self) -> str:
        """The sweep's budget and rate-limit scope: fixed by its folder, so every invocation
        (and every resumed arm-seed) shares one."""
        digest = hashlib.sha1(str(self.out_dir.resolve()).encode()).hexdigest()[:10]
        return f"sweep_{digest}"

    def run_flags(self) -> dict[str, Any]:
        """The run flags every child shares, as ``run_config.flags.build_overrides`` takes them."""
        return {name: getattr(self, name) for name in RUN_FLAGS}

    def shared_flags(self) -> list[str]:
        """The ``jobs.skill_loop`` flags of every new child, paths absolute."""
        flags = [f for name, value in self.run_flags().items() if value is not None
                 for f in (f"--{name.replace('_', '-')}",
                           str(value.resolve() if isinstance(value, Path) else value))]
        return [*flags, *(f for name in self.profiles for f in ("--profile", name)),
                *(f for item in self.sets for f in ("--set", item))]


@dataclass(frozen=True)
class Job:
    name: str
    action: Literal["new", "resume"]
    argv: list[str]
    log: Path
    results_dir: Path | None = None
    """The child's results_dir: a run that stopped leaves its cause there (``stopped.json``)."""
    run_dir: Path | None = None
    """The run dir a resumed job continues (None for a new one)."""
    cwd: Path = field(default_factory=Path.cwd)
    """Where the job's driver runs: the folder the sweep was started from (relative paths of
    ``--set`` values and ``$RATCHET_*`` variables mean there what they meant to the caller)."""


@dataclass(frozen=True)
class JobOutcome:
    name: str
    action: Literal["new", "resume", "attach", "skipped"]
    returncode: int | None
    wall_s: float
    log: str
    message: str = ""
    cause: str = ""
    """Why a failed child stopped: its run's ``stopped.json`` (the root cause the driver named,
    e.g. the model server was unreachable), else the last line of its log."""
    job_id: str = ""
    """The Ray job's submission id (empty for a skipped arm-seed)."""
    budget: bool = False
    """It stopped because the sweep's budget ran out (``stopped.json`` says so)."""

    @property
    def ok(self) -> bool:
        return self.action == "skipped" or self.returncode == 0


def job_name(arm: str, seed: int) -> str:
    return f"{arm_name(arm)}_s{seed}"


def is_arm_file(arm: str) -> bool:
    """Whether ``--arms`` names an arm file of the user's (a path, or a ``.yaml`` / ``.yml``
    name) rather than a shipped arm (``default``, ``A1`` ... under ``configs/ablations``)."""
    return arm.endswith((".yaml", ".yml")) or "/" in arm


def arm_name(arm: str) -> str:
    """The arm's name in job names, run dirs and the report: an arm file's stem (the runs get
    ``--set arm=<stem>``), else the arm as given."""
    return Path(arm).stem if is_arm_file(arm) else arm


def arm_config_file(arm: str) -> Path:
    """``configs/default.yaml`` for the Default, ``configs/ablations/<arm>.yaml`` for a shipped
    arm, the file itself (resolved) for an arm file of the user's (``is_arm_file``)."""
    if is_arm_file(arm):
        path = Path(arm).expanduser().resolve()
        if not path.is_file():
            raise SweepError(f"arm file {arm} does not exist ({path}); give the path of a YAML "
                             "config file (its keys change the Default, as "
                             "configs/ablations/A4.yaml does) or a shipped arm name")
        if not _NAME_OK.match(path.stem) or path.stem == "default":
            raise SweepError(f"arm file {arm}: its name {path.stem!r} names the arm's runs; "
                             "rename the file to letters, digits, '_', '.' or '-' (not "
                             "'default')")
        _check_arm_keys(arm, path)
        return path
    configs = configs_dir()
    path = configs / ("default.yaml" if arm == "default" else f"ablations/{arm}.yaml")
    if not path.is_file():
        files = (configs / "ablations").glob("*.yaml")
        known = ["default", *sorted((p.stem for p in files), key=lambda s: (len(s), s))]
        raise SweepError(f"arm {arm!r} has no config file {path}; known arms: {', '.join(known)}")
    return path


def _check_arm_keys(arm: str, path: Path) -> None:
    """``SweepError`` naming the arm file when it holds nothing at all (an arm that changes
    nothing would rerun the Default under another name, at the Default's cost), or cannot be
    read or is no mapping of config keys (``read_config_file``'s line)."""
    try:
        data = read_config_file(path)
    except ValueError as exc:
        raise SweepError(f"arm file {exc}") from exc
    if not data:
        raise SweepError(f"arm file {arm} holds nothing (it is empty, or comments only) at its "
                         f"top level, not the config keys the arm changes; {WRITE_AS_MAPPING}, "
                         "or give the arm 'default' to run the Default itself")


def arm_files(arm: str) -> list[Path]:
    """The arm's layer above the suite file: none for the Default (``configs/default.yaml`` is
    ``LoopConfig()`` itself, and layering it again would undo the suite file), else its file."""
    return [] if arm == "default" else [arm_config_file(arm)]


def split_sets(sets: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``--set`` items as (the shared overrides, the sweep's budget); a reserved key is
    refused (``SweepError``)."""
    shared, budget = [], []
    for item in sets:
        key = item.split("=", 1)[0].strip()
        if "=" not in item or key.split(".")[0] in RESERVED_KEYS or key in RESERVED_KEYS:
            raise SweepError(f"--set {item!r}: give KEY=VALUE for a key other than "
                             f"{', '.join(RESERVED_KEYS)} (the sweep sets those per arm and seed)")
        (budget if key in BUDGET_KEYS else shared).append(item.strip())
    return tuple(shared), tuple(budget)


def budget_flags(spec: SweepSpec) -> list[str]:
    """What every job (new or resumed) gets: the sweep's scope and budget."""
    return [f for item in (f"budget.scope={spec.scope}", *spec.budget) for f in ("--set", item)]


def child_config(spec: SweepSpec, arm: str, seed: int) -> LoopConfig:
    """The config a new child of ``arm``/``seed`` will resolve (validates the flags early)."""
    from ratchet_ray.run_config.files import layered_files
    from ratchet_ray.run_config.profiles import profile_files
    from ratchet_ray.loop.entry import startable_problems
    from ratchet_ray.run_config.flags import build_overrides

    named = [f"arm={arm_name(arm)}"] if is_arm_file(arm) else []  # the file's runs, by name
    overrides = named + build_overrides(spec.suite, seed=seed, tag=job_name(arm, seed),
                                        **spec.run_flags())
    try:
        arm_config_file(arm)  # an unknown arm fails here, naming the known ones
        files = [*profile_files(spec.profiles, spec.suite), *arm_files(arm)]
        config = load_config(layered_files(spec.suite, files),
                             [*overrides, *spec.sets, *spec.budget])
    except ConfigError as exc:
        raise SweepError(f"arm {arm}, seed {seed}: {exc}") from exc
    problems = startable_problems(config)  # the jobs' drivers run here, on the head
    if problems:
        raise SweepError("\n".join(problems))
    return config


def sweep_command(prog: str, spec: SweepSpec, arms: Sequence[str], seeds: Sequence[int],
                  parallel: int = 1, address: str | None = None, cwd: Path | None = None) -> str:
    """The command that continues the sweep ``spec`` of ``arms`` x ``seeds``, from any folder:
    ``cd`` to ``cwd`` (default: this process's; the sweep's folder, where relative paths meant
    what they meant), then ``prog`` as it was started (``python -m jobs.ablations``, ``ratchet
    ablations``) with its arms, seeds, shared flags, ``--parallel``, ``--address`` and ``--out``
    (absolute, as an arm file's path). Rerunning it skips the finished arm-seeds and resumes the
    others under the budget ``sweep.json`` recorded."""
    arm_list = ",".join(str(Path(arm).expanduser().resolve()) if is_arm_file(arm) else arm
                        for arm in arms)
    argv = [*shlex.split(prog), spec.suite, "--arms", arm_list,
            "--seeds", ",".join(map(str, seeds)), *spec.shared_flags()]
    argv += ["--parallel", str(parallel)] if parallel != 1 else []
    argv += ["--address", address] if address else []
    where = shlex.quote(str(cwd or Path.cwd()))
    return f"cd {where} && {shlex.join([*argv, '--out', str(spec.out_dir)])}"


def find_run(results_dir: Path, suite: str) -> Path | None:
    """The one run dir a child left under its results_dir, or None."""
    found = sorted(d for d in (results_dir / suite).glob("*") if (d / "config.yaml").is_file())
    if len(found) > 1:
        raise SweepError(f"{results_dir} holds {len(found)} run dirs ({', '.join(map(str, found))})"
                         "; keep the one to continue and move the others out of the sweep")
    return found[0] if found else None


def plan_jobs(spec: SweepSpec, arms: Sequence[str], seeds: Sequence[int],
              python: str = sys.executable) -> tuple[list[Job], list[JobOutcome]]:
    """Jobs to run and arm-seeds to skip (see module contracts)."""
    split_sets([*spec.sets, *spec.budget])  # refuses a reserved key before anything runs
    names: dict[str, str] = {}
    for arm in arms:  # two arms of one name would share (and fight over) every run folder
        other = names.setdefault(arm_name(arm), arm)
        if other != arm:
            raise SweepError(f"--arms {other} and {arm} both name their runs {arm_name(arm)!r}; "
                             "rename the arm file (its name names its runs) or drop one")
    jobs, skipped = [], []
    base = [python, "-m", "jobs.skill_loop"]
    for arm in arms:
        for seed in seeds:
            name = job_name(arm, seed)
            results_dir = spec.out_dir / "runs" / name
            log = spec.out_dir / "logs" / f"{name}.log"
            existing = find_run(results_dir, spec.suite)
            run = RunDir.open(existing) if existing is not None else None
            if run is not None and len(run.summaries()) >= run.config().rounds:  # finished
                skipped.append(JobOutcome(name, "skipped", None, 0.0, str(log),
                                          f"finished: {existing}"))
            elif existing is not None:
                jobs.append(Job(name, "resume", [*base, "--resume", str(existing),
                                                 *budget_flags(spec), "--quiet"],
                                log, results_dir, existing))
            else:
                child_config(spec, arm, seed)
                configs = [flag for path in arm_files(arm) for flag in ("--config", str(path))]
                if is_arm_file(arm):
                    configs += ["--set", f"arm={arm_name(arm)}"]
                argv = [*base, spec.suite, *configs, "--seed",
                        str(seed), "--tag", name, *spec.shared_flags(), *budget_flags(spec),
                        "--set", f"llm.limiter_scope={spec.scope}",
                        "--set", f"results_dir={results_dir.resolve()}", "--quiet"]
                jobs.append(Job(name, "new", argv, log, results_dir))
    return jobs, skipped


def cpus_per_run(config: LoopConfig) -> float:
    """Ray CPUs one driver's actors ask for (``runtime.ROLE_RESOURCES`` x ``config.workers``)."""
    from ratchet_ray.loop.runtime import ROLE_RESOURCES

    w = config.workers
    actors = {"bank": 1, "synthesizer": 1, "solver": w.solvers, "grader": w.graders,
              "critic": w.critics}
    return sum(n * float(ROLE_RESOURCES[role].get("num_cpus", 1)) for role, n in actors.items())
