"""The frozen evaluator: which files it is made of, their hash, and one bounded run of it.

Contracts (the user-facing rules: docs/experiment-loop.md):
- ``FrozenEvaluator(repo, command, paths, inputs)`` freezes ``paths`` (globs in the repo or
  absolute files outside) and the repo files the command names (``--flag=FILE`` too). A file
  right after an option flag is the candidate's input when it matches an ``inputs`` glob, except
  after ``OWN_FLAGS``, whose file is always frozen; any other named file is always frozen.
- The built-in evaluator (token ``eval-skill-loop``) is frozen down to ``BUILTIN_CODE`` as this
  interpreter imports it (in the repo: frozen paths; outside: hashed files), plus the repo's own
  copies in a ratchet-ray checkout.
- The evaluation path's import closure (``experiment.closure``: the built-in's yardstick and
  suite package whatever is editable; a custom evaluator's scripts up to the editable modules
  they import), the data it reads and its config layers are frozen too: in the repo as
  ``closure`` (protected, so editing one is a ``policy_violation`` even under a broad editable
  glob), outside in ``outside``.
- ``digest()`` hashes every file's path and bytes; a file's name: repo-relative or absolute.
- ``run_evaluator`` runs ``command`` through the shell in its own process group, output to
  ``log_path`` (never memory), kills the group after ``timeout_s`` and parses the contract line
  from the log's last ``TAIL_BYTES``. ``ok`` needs status 0 and a valid line; else ``crash`` or
  ``timeout`` with ``problem`` saying why. ``on_start(pgid)`` lets a caller record the group for
  ``stop_stray``; ``env`` adds variables (the noise repeats' ``RATCHET_EVAL_REPEAT``).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal, Sequence

from ratchet_ray.experiment.closure import (builtin_entries, builtin_inputs, import_closure,
                                            module_name)
from ratchet_ray.experiment.contract import ContractError, EvalResult, parse_contract
from ratchet_ray.experiment.paths import glob_match
from ratchet_ray.storage.fsutil import read_tail

TAIL_BYTES = 64 * 1024
BUILTIN_TOKEN = "eval-skill-loop"
BUILTIN_CODE = ("ratchet_ray/cli/experiment.py", "ratchet_ray/experiment/contract.py",
                "ratchet_ray/experiment/manifest.py", "ratchet_ray/experiment/skill_eval.py",
                "ratchet_ray/metrics.py")
"""The built-in evaluator's code, relative to the folder that holds the ``ratchet_ray`` package."""
OWN_FLAGS = ("--manifest", "--subset", "--dataset-path")
"""Options whose file is the evaluator's own: never a candidate's input, whatever is editable."""


def package_root() -> Path:
    """The folder holding the ``ratchet_ray`` package this interpreter imports."""
    return Path(__file__).resolve().parents[2]


def builtin_code_files() -> list[Path]:
    """The built-in evaluator's code files as this interpreter imports them."""
    return [package_root() / rel for rel in BUILTIN_CODE]


def runs_builtin(command: str) -> bool:
    """Whether ``command`` runs the built-in evaluator (``ratchet experiment eval-skill-loop``)."""
    try:
        return BUILTIN_TOKEN in shlex.split(command)
    except ValueError:
        return False


def _option(tokens: list[str], flag: str) -> str | None:
    """The value of ``flag`` in ``tokens`` (``--flag VALUE`` or ``--flag=VALUE``), else None."""
    for i, token in enumerate(tokens):
        if token == flag and i + 1 < len(tokens):
            return tokens[i + 1]
        if token.startswith(f"{flag}="):
            return token.split("=", 1)[1]
    return None


class EvaluatorChanged(RuntimeError):
    """The evaluator's files differ from when the run started: the yardstick moved."""


class FrozenEvaluator:
    def __init__(self, repo: Path, command: str, paths: Sequence[str] = (),
                 inputs: Sequence[str] = ()):
        if not command.strip():
            raise ValueError("--evaluator is empty; give the command that prints the contract line")
        self.repo, self.command = Path(repo).resolve(), command
        self.inputs = tuple(inputs)
        self.in_repo: set[str] = set()
        self.outside: set[Path] = set()
        files = [p.relative_to(self.repo).as_posix() for p in self.repo.rglob("*")
                 if p.is_file() and ".git" not in p.relative_to(self.repo).parts] if paths else []
        for pattern in paths:
            if Path(pattern).is_absolute() and not Path(pattern).resolve().is_relative_to(self.repo):
                if not Path(pattern).is_file():
                    raise ValueError(f"--evaluator-path {pattern}: no such file")
                self.outside.add(Path(pattern).resolve())
                continue
            rel = (Path(pattern).resolve().relative_to(self.repo).as_posix()
                   if Path(pattern).is_absolute() else pattern)
            hits = [p for p in files if glob_match(p, rel)]
            if not hits:
                raise ValueError(f"--evaluator-path {pattern}: matches no file in {self.repo}")
            self.in_repo.update(hits)
        tokens = shlex.split(command)
        for i, token in enumerate(tokens):
            flag = tokens[i - 1] if i > 0 and tokens[i - 1].startswith("-") else None
            if token.startswith("--") and "=" in token:  # --flag=FILE
                flag, token = token.split("=", 1)
            candidate = (self.repo / token) if not Path(token).is_absolute() else Path(token)
            if candidate.is_file() and candidate.resolve().is_relative_to(self.repo):
                rel = candidate.resolve().relative_to(self.repo).as_posix()
                an_input = flag is not None and flag not in OWN_FLAGS
                if not (an_input and any(glob_match(rel, p) for p in inputs)):
                    self.in_repo.add(rel)
        if runs_builtin(command):
            for rel, installed in zip(BUILTIN_CODE, builtin_code_files()):
                if installed.is_relative_to(self.repo):
                    self.in_repo.add(installed.relative_to(self.repo).as_posix())
                else:
                    self.outside.add(installed)
                if (self.repo / rel).is_file():  # a ratchet-ray checkout: `python -m` uses it
                    self.in_repo.add(rel)
        self.closure: set[str] = set()  # module contracts
        self._freeze_closure(tokens)

    def _freeze_closure(self, tokens: list[str]) -> None:
        """Add the import closure of the evaluator's code, the data it reads and its config."""
        # The evaluator's own scripts; the built-in CLI module is not walked: it drives the
        # skill loop under test (``builtin_entries`` names the built-in's measuring modules).
        scripts = sorted(rel for rel in self.in_repo
                         if rel.endswith(".py") and rel not in BUILTIN_CODE)
        roots = [(self.repo, [name for rel in scripts
                              for name in [module_name(self.repo, self.repo / rel)] if name])]
        data: list[Path] = []
        if runs_builtin(self.command):
            from ratchet_ray.settings.schema import default_suite

            suite = _option(tokens, "--suite") or default_suite()
            entries = list(builtin_entries(suite))
            roots += [(package_root(), entries), (self.repo, entries)]
            dataset = _option(tokens, "--dataset-path")
            data = builtin_inputs(suite, dataset and str(self.repo / dataset))
        for flag in OWN_FLAGS:  # the evaluator's own files outside the repo too
            value = _option(tokens, flag)
            if value and (self.repo / value).is_file():
                data.append(self.repo / value)
        def candidate(path: Path) -> bool:  # a custom evaluator's import of an editable file
            rel = path.resolve().relative_to(self.repo).as_posix()
            return rel not in self.in_repo and any(glob_match(rel, p) for p in self.inputs)

        data += import_closure(*roots[0], stop=candidate).values()
        for root, entries in roots[1:]:  # the built-in's yardstick: frozen whatever is editable
            data += import_closure(root, entries).values()
        for path in data:
            path = path.resolve()
            if not path.is_relative_to(self.repo):
                self.outside.add(path)
            elif (rel := path.relative_to(self.repo).as_posix()) not in self.in_repo:
                self.closure.add(rel)

    def files(self) -> list[Path]:
        return sorted({self.repo / p for p in self.in_repo | self.closure} | self.outside)

    def digest(self) -> str:
        h = hashlib.sha256()
        for path in self.files():
            h.update(str(path).encode() + b"\0")
            h.update(path.read_bytes() if path.is_file() else b"<missing>")
        return h.hexdigest()

    def _name(self, path: Path) -> str:
        return path.relative_to(self.repo).as_posix() if path.is_relative_to(self.repo) else str(path)

    def file_digests(self) -> dict[str, str]:
        """One sha256 per frozen file (``<missing>`` for a file that is gone), by name."""
        return {self._name(path): (hashlib.sha256(path.read_bytes()).hexdigest()
                                   if path.is_file() else "<missing>")
                for path in self.files()}

    def changed(self, pinned: dict[str, str]) -> list[str]:
        """The names of the files whose digest differs from ``pinned`` (added or gone too)."""
        now = self.file_digests()
        return sorted(name for name in set(now) | set(pinned) if now.get(name) != pinned.get(name))


@dataclass(frozen=True)
class EvalRun:
    outcome: Literal["ok", "crash", "timeout"]
    result: EvalResult | None
    returncode: int | None
    wall_s: float
    log: Path
    problem: str = ""

    def tail(self, limit: int = 4000) -> str:
        return read_tail(self.log, limit)


def _kill_group(proc: subprocess.Popen) -> None:
    for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def stop_stray(pgid: int, cwd: Path) -> bool:
    """Kill the process group ``pgid`` if its leader still runs in ``cwd``: the evaluator of an
    engine that was killed. The cwd check keeps a reused pid of another program safe."""
    try:
        if Path(f"/proc/{pgid}/cwd").resolve() != Path(cwd).resolve():
            return False
        os.killpg(pgid, signal.SIGKILL)
    except OSError:  # gone already, not ours, or no /proc on this system
        return False
    return True


def run_evaluator(command: str, cwd: Path, log_path: Path, timeout_s: float,
                  on_start: Callable[[int], None] | None = None,
                  env: dict[str, str] | None = None) -> EvalRun:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, shell=True, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                env={**os.environ, **env} if env else None)
        if on_start is not None:
            on_start(proc.pid)  # its own session: the pid is the process group id
        try:
            code = proc.wait(timeout=max(timeout_s, 0.001))
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return EvalRun("timeout", None, None, time.monotonic() - started, log_path,
                           f"the evaluator ran past its {timeout_s:.0f} s budget and was killed")
    wall = time.monotonic() - started
    if code != 0:
        return EvalRun("crash", None, code, wall, log_path,
                       f"the evaluator exited with status {code} (log: {log_path})")
    try:
        result = parse_contract(read_tail(log_path, TAIL_BYTES))
    except ContractError as exc:
        return EvalRun("crash", None, code, wall, log_path, str(exc))
    return EvalRun("ok", result, code, wall, log_path)
