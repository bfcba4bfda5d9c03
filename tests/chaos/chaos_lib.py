"""The chaos suite's machinery: driver processes, fault injection, invariants, the report.

Every scenario runs the scripted governance scenario of ``tests/loop`` (real Ray, actors,
evidence and bank; a scripted LLM) for ``ROUNDS`` rounds in driver processes of its own,
injects faults at points drawn from ``random.Random(seed)`` and then checks ``INVARIANTS``
against an uninterrupted run of the same config.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import ray

from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.loop.rundir import RunDir
from waiting import wait_for  # noqa: F401  (scenarios use lib.wait_for)

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).resolve().parent / "chaos_driver.py"
ROUNDS = int(os.environ.get("CHAOS_ROUNDS", "2"))  # `make chaos`: 3
PHASES = ("eval", "rollback", "train", "critic", "metasynth", "synth", "curate", "snapshot")
ACTOR_KINDS = ("SolverWorker", "GraderWorker", "CriticWorker", "SynthesizerWorker",
               "SkillBankProcess", "LLMServerActor", "RateLimiterProcess")
INVARIANTS = ("capsule exactly once", "one verdict per train failure", "skill events = bank files",
              "bank = reference bank", "every round summary", "pass@1 per round = reference",
              "no orphan processes")


def seeds() -> list[int]:
    """The seeds of ``CHAOS_SEEDS``: ``3``, ``1-20`` or ``1,5,9`` (default 1)."""
    text = os.environ.get("CHAOS_SEEDS", "1")
    out: list[int] = []
    for item in text.split(","):
        low, _, high = item.partition("-")
        out += list(range(int(low), int(high or low) + 1))
    return out



@dataclass
class Report:
    """What ``make chaos`` prints: scenarios run, faults injected, invariants, violations."""

    scenarios: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    invariants: int = 0
    violations: list[str] = field(default_factory=list)

    def fault(self, kind: str, n: int = 1) -> None:
        self.faults[kind] = self.faults.get(kind, 0) + n

    def lines(self) -> list[str]:
        total = sum(self.faults.values())
        detail = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items()))
        return [f"chaos: {self.scenarios} scenario(s) run, {total} fault(s) injected ({detail})",
                f"chaos: {self.invariants} invariant check(s), {len(self.violations)} violation(s)",
                *(f"chaos: VIOLATION {v}" for v in self.violations)]


REPORT = Report()


# ---- driver processes ----------------------------------------------------------------------
class Driver:
    """One ``chaos_driver.py`` process joined to the test's Ray cluster."""

    def __init__(self, args: list[str], logs: Path, env: dict[str, str] | None = None):
        logs.mkdir(parents=True, exist_ok=True)
        self.stderr = logs / f"driver-{time.monotonic_ns()}.log"
        full_env = {**os.environ, "RAY_ADDRESS": ray.get_runtime_context().gcs_address,
                    **(env or {})}  # ``env`` may name another cluster
        self.proc = subprocess.Popen([sys.executable, str(DRIVER), *args], cwd=ROOT, env=full_env,
                                     stdout=subprocess.PIPE, stderr=self.stderr.open("w"),
                                     text=True, start_new_session=True)
        line = self.proc.stdout.readline().strip()
        self.run_dir = Path(line) if line else None
        log = self.run_dir / "run.log" if self.run_dir else None
        self.log_offset = log.stat().st_size if log and log.is_file() else 0

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)

    def wait(self, timeout: float = 900) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise TimeoutError(f"driver ran over {timeout}s; its log: {self.stderr}") from None

    def log_tail(self) -> str:
        return self.stderr.read_text(errors="replace")[-3000:]


def phase_started(driver: "Driver", round_: int, phase: str) -> bool:
    """Whether this driver (not an earlier one of the run) has logged the start of the phase."""
    log = driver.run_dir / "run.log"
    if not log.is_file():
        return False
    with open(log, "rb") as handle:
        handle.seek(driver.log_offset)
        text = handle.read().decode(errors="replace")
    return f" round {round_}: {phase}\n" in text


def wait_for_phase(driver: Driver, round_: int, phase: str, timeout: float = 600) -> bool:
    """True once ``round_``'s ``phase`` has started; False if the driver exited first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if phase_started(driver, round_, phase):
            return True
        if driver.proc.poll() is not None:
            return False
        time.sleep(0.02)
    raise TimeoutError(f"round {round_} {phase} did not start within {timeout}s")


def bank_actor_gone(run_dir: Path) -> bool:
    from actors.skill_bank import actor_name

    try:
        ray.get_actor(actor_name(run_dir.name))
    except ValueError:
        return True
    return False


def wait_bank_gone(run_dir: Path) -> None:
    """A killed driver's SkillBank actor is reaped by Ray before anyone resumes."""
    wait_for(lambda: bank_actor_gone(run_dir), 120, "the killed driver's SkillBank actor")


def kill_points(rng: random.Random, n: int) -> list[tuple[int, str, float]]:
    """``n`` (round, phase, delay after the phase starts) points, in the order a run meets them."""
    points = [(rng.randrange(ROUNDS), rng.choice(PHASES), rng.uniform(0.0, 1.0)) for _ in range(n)]
    return sorted(points, key=lambda p: (p[0], PHASES.index(p[1]), p[2]))


_PREEXISTING: set[int] = set()
"""Actor processes alive when the current scenario began (``scenario_starts``)."""


def scenario_starts() -> None:
    """Mark the actor processes alive now as not the scenario's: the session's shared Ray may
    hold actors of earlier tests (seen in a shuffled order), which the scenario must neither
    kill as its fault nor count as its orphans."""
    _PREEXISTING.clear()
    _PREEXISTING.update(p.pid for p in ray_actor_processes())


def ray_actor_processes(kind: str | None = None) -> list[psutil.Process]:
    """Actor worker processes of this test's Ray (children of this process), by class name,
    except those alive before the current scenario began."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        if proc.pid in _PREEXISTING:
            continue
        try:
            title = " ".join(proc.cmdline())
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if title.startswith("ray::") and not title.startswith("ray::IDLE"):
            name = title[5:].split(".", 1)[0].split(" ", 1)[0]
            if name in ACTOR_KINDS and (kind is None or name == kind):
                found.append(proc)
    return found


# ---- invariants ----------------------------------------------------------------------------
def _facts(run_dir: Path) -> dict:
    run = RunDir(run_dir)
    with EvidenceStore(run_dir).connect() as con:
        capsules = con.execute("SELECT round, split, task_id, count(*) FROM capsule "
                               "GROUP BY ALL").fetchall()
        failures = set(con.execute(
            "SELECT round, task_id FROM capsule WHERE split = 'train' AND NOT passed").fetchall())
        verdicts = {(r, t): n for r, t, n in con.execute(
            "SELECT round, task_id, count(*) FROM verdict GROUP BY ALL").fetchall()}
        events = con.execute(
            "SELECT skill_id, arg_max(status_after, created_at), "
            "count_if(event IN ('added', 'loaded')) "
            "FROM skill_event WHERE event <> 'rejected' AND status_after <> '' "
            "AND event NOT LIKE 'meta_%' GROUP BY skill_id").fetchall()
        pass_by_round = con.execute(
            "SELECT round, split, count_if(passed), count(*) FROM capsule GROUP BY ALL "
            "ORDER BY ALL").fetchall()
    bank = {}
    for path in sorted((run_dir / "skills").glob("*.yaml")):
        status = next(line.split(":", 1)[1].strip() for line in path.read_text().splitlines()
                      if line.startswith("status:"))
        bank[path.stem] = status
    summaries = {}
    for r in range(ROUNDS):
        path = run.round_file(r, "summary.json")
        try:
            data = json.loads(path.read_text())
            summaries[r] = (data["eval"]["resolved"] if data.get("eval") else None,
                            data["train"]["resolved"] if data.get("train") else None)
        except (OSError, ValueError, KeyError, TypeError):
            summaries[r] = None
    return {"capsules": capsules, "failures": failures, "verdicts": verdicts, "events": events,
            "bank": bank, "summaries": summaries, "pass": pass_by_round,
            "train_ids": run.train_ids(), "eval_ids": run.eval_ids()}


def check_invariants(run_dir: Path, reference: Path, label: str) -> list[str]:
    """Every invariant but the process one; returns the violations (also added to REPORT)."""
    got, ref = _facts(run_dir), _facts(reference)
    bad: list[str] = []
    expected = {(r, "train", t) for r in range(ROUNDS) for t in got["train_ids"]}
    expected |= {(r, "eval", t) for r in range(ROUNDS) for t in got["eval_ids"]}
    seen = {(r, s, t): n for r, s, t, n in got["capsules"]}
    twice = sorted(k for k, n in seen.items() if n != 1)
    missing = sorted(expected - set(seen))
    if twice or missing or set(seen) != expected:
        bad.append(f"capsule exactly once: twice {twice[:3]}, missing {missing[:3]}")
    twice = sorted(k for k, n in got["verdicts"].items() if n != 1)
    extra = sorted(k for k in got["verdicts"] if k not in got["failures"])
    if twice or extra or set(got["verdicts"]) != set(ref["verdicts"]):
        bad.append(f"one verdict per train failure: twice {twice[:3]}, without a failure "
                   f"{extra[:3]}, missing {sorted(set(ref['verdicts']) - set(got['verdicts']))[:3]}")
    logged = {s: (status, added) for s, status, added in got["events"]}
    mismatch = sorted(s for s, status in got["bank"].items()
                      if s not in logged or logged[s][0] != status or logged[s][1] != 1)
    if mismatch or set(logged) - set(got["bank"]):
        bad.append(f"skill events = bank files: {mismatch[:3]} "
                   f"{sorted(set(logged) - set(got['bank']))[:3]}")
    if got["bank"] != ref["bank"]:
        bad.append(f"bank = reference bank: {got['bank']} vs {ref['bank']}")
    if any(v is None for v in got["summaries"].values()):
        bad.append(f"every round summary: missing {[r for r, v in got['summaries'].items() if v is None]}")
    if got["summaries"] != ref["summaries"] or got["pass"] != ref["pass"]:
        bad.append(f"pass@1 per round = reference: {got['pass']} vs {ref['pass']}")
    REPORT.invariants += len(INVARIANTS) - 1
    REPORT.violations += [f"{label}: {b}" for b in bad]
    return bad


def check_no_orphans(drivers: list[Driver], label: str, timeout: float = 60) -> list[str]:
    """Every driver exited and no actor process of theirs is left once Ray has reaped them."""
    bad = [f"driver {d.proc.pid} still running" for d in drivers if d.proc.poll() is None]
    deadline = time.monotonic() + timeout
    left = ray_actor_processes()
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = ray_actor_processes()
    if left:
        bad.append(f"orphan actor processes: {[' '.join(p.cmdline())[:60] for p in left]}")
    REPORT.invariants += 1
    REPORT.violations += [f"{label}: no orphan processes: {b}" for b in bad]
    return bad
