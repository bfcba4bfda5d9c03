"""The run directory: one self-contained folder per run (one arm, one seed); its layout is in
docs/architecture.md, "The run dir".

Contracts:
- ``RunDir.create`` refuses to reuse an existing folder and a results folder it cannot write
  (naming ``--set results_dir``); ``RunDir.open`` refuses a folder without ``config.yaml`` and
  says how to start a fresh run instead; ``check_writable`` refuses a read-only run dir;
  ``check_bank`` a bank folder deleted while a checkpoint holds it, a damaged bank snapshot and
  a round-0 snapshot gone once the bank moved on; ``check_name`` a run dir
  renamed since its evidence was written (its name is the run's id).
- Every JSON file is written atomically and durably (``fsutil``), so a killed driver never leaves
  a half-written summary behind; a phase's output file doubles as its "done" marker on resume.
- ``acquire`` makes this process the run's only writer (see its docstring); ``release`` ends it.
  Holding the lock, it removes the hidden temp files and folders of writes a kill cut short
  (``.<name>.<32 hex>.tmp``, ``fsutil.temp_path``'s names, anywhere in the run dir) that no
  write touched for ``STALE_TEMP_S``: no reader looks at them, and each kill would leave one more.
- A file that cannot be parsed raises ``RunFileError`` naming the file and the fix.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ratchet_ray.bank.checkpoints import (CHECKPOINTS_DIR, available_rounds, checkpoint_dir,
                                          snapshot_problem)
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.run_config.files import dump_config, load_config
from ratchet_ray.run_config.resumed import RECORD_FILE
from ratchet_ray.evidence.integrity import require_readable
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.storage.fsutil import (PREV_SUFFIX, atomic_write_json, cannot_read, disk_full,
                                        unwritable)
from ratchet_ray.suites.hooks import setting_line
from ratchet_ray.storage.runlock import RunLock
from ratchet_ray.types import BenchResult, RoundSummary


log = logging.getLogger(__name__)

TEMP_NAME = re.compile(r"\..+\.(?:[0-9a-f]){32}\.tmp")
"""The name ``fsutil.temp_path`` gives a write's temp file or folder (``.summary.json.<hex>.tmp``,
``checkpoints/.round_03.<hex>.tmp``)."""
STALE_TEMP_S = 60.0
"""A temp untouched this long is a cut write's leftover, never one a write still fills."""


def remove_leftover_temps(run_dir: Path, now: float | None = None) -> list[Path]:
    """Remove the temps of cut writes in ``run_dir`` (``TEMP_NAME``, unmodified for
    ``STALE_TEMP_S``); the caller holds the run's writer lock. Returns what it removed; one it
    cannot remove stays (readers ignore it) and is logged."""
    now = time.time() if now is None else now
    removed = []
    for folder, dirs, files in os.walk(run_dir):
        for name in [*dirs, *files]:
            path = Path(folder, name)
            if not TEMP_NAME.fullmatch(name):
                continue
            try:
                if now - path.lstat().st_mtime < STALE_TEMP_S:
                    continue
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            except OSError as exc:
                log.warning("leftover temp %s of a cut write not removed (%s); readers ignore it",
                            path, exc)
                continue
            removed.append(path)
        dirs[:] = [d for d in dirs if not TEMP_NAME.fullmatch(d)]  # removed, or left: not walked
    return removed


class _RunLogHandler(logging.FileHandler):
    """``run.log``'s handler: on a full disk logging's own report of each record it could not
    write (``--- Logging error ---`` and a traceback on stderr, for every line) would bury the
    run's one line saying the disk is full; those records are dropped."""

    def handleError(self, record: logging.LogRecord) -> None:
        if not disk_full(sys.exc_info()[1]):
            super().handleError(record)


CONFIG_FILE = "config.yaml"
TRAIN_IDS_FILE = "train_ids.json"
EVAL_IDS_FILE = "eval_ids.json"
RUN_LOG_FILE = "run.log"
LOOP_FILE = "loop.json"
SUMMARY_FILE = "summary.json"
_IDS_FIX = ("the file is written once when the run starts; restore it from a copy of the run "
            "dir (it lists the task ids of the split)")
_TAG_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
SWEEP_COMMAND_ENV = "RATCHET_SWEEP_COMMAND"
"""Set by a sweep in each of its jobs' environment (``sweep.jobs.submission``): the command that
continues the sweep, which its runs name wherever a run names ``--resume RUN``."""


def resume_advice(path: Path | None = None, prog: str = "") -> str:
    """How a stopped run goes on: ``[PROG ]--resume[ PATH]``, or in a sweep's job
    (``SWEEP_COMMAND_ENV``) the sweep's command in backticks: a run resumed alone would leave
    the sweep, its lock, budget, status and report."""
    sweep = os.environ.get(SWEEP_COMMAND_ENV, "").strip()
    if sweep:
        return f"`{sweep}`"
    return " ".join(w for w in (prog, "--resume", shlex.quote(str(path)) if path else "") if w)


def run_name(config: LoopConfig, n_train: int, n_eval: int) -> str:
    """``<suite>_r<R>_t<N>_e<M>_<UTCts>[_<tag>]``, e.g. ``mbpp_r10_t60_e40_20260101T120000Z``."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    name = f"{config.suite}_r{config.rounds}_t{n_train}_e{n_eval}_{stamp}"
    if config.tag:
        if not _TAG_OK.match(config.tag):
            raise ValueError(f"tag {config.tag!r}: use letters, digits, '_', '.', '-' "
                             "(at most 64 characters), e.g. --tag smoke")
        name += f"_{config.tag}"
    return name


def results_dir_problem(config: LoopConfig) -> str | None:
    """Why a new run of ``config`` could not create its run dir under ``results_dir`` (a
    read-only mount, no permission), in one line naming the flag that writes elsewhere."""
    parent = Path(config.results_dir).resolve() / config.suite
    why = unwritable(parent)
    if why is None:
        return None
    return (f"cannot create the run dir under {parent}: {why}; pass a writable results folder "
            "with --set results_dir=/a/writable/path")


def bench_json(bench: BenchResult) -> dict[str, Any]:
    """A BenchResult with its pass@1 spelled out (it is a property, not a field)."""
    return {**bench.model_dump(mode="json"), "pass_at_1": bench.pass_at_1}


class RunFileError(ValueError):
    """A file of the run dir cannot be read; the message names the file and the fix."""


def _read_json(path: Path, fix: str) -> Any:
    try:
        return json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunFileError(f"{path} is not valid JSON ({exc}); {fix}") from exc


def _read_ids(path: Path) -> list[str]:
    """A split's ids file; ``RunFileError`` naming it and the fix when it is missing, this user
    may not read it, or it holds anything but a JSON list of task id strings."""
    try:
        ids = _read_json(path, _IDS_FIX)
    except FileNotFoundError as exc:
        raise RunFileError(f"{path} is missing; {_IDS_FIX}") from exc
    except OSError as exc:
        raise RunFileError(f"{path}: {cannot_read(path, exc)}") from exc
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise RunFileError(f"{path} holds a JSON {type(ids).__name__}, not a list of task id "
                           f"strings; {_IDS_FIX}")
    return ids


def _times(run_dir: Path, kind: str) -> list[float]:
    """``created_at`` of every row of ``kind`` in the evidence (unreadable parts are left to
    ``RunDir.acquire``, which names the repair)."""
    import pyarrow.parquet as pq

    found: list[float] = []
    for part in EvidenceStore(run_dir).part_paths(kind):
        try:
            found.extend(pq.ParquetFile(part).read(columns=["created_at"]).column(0).to_pylist())
        except (OSError, ValueError):
            continue
    return [t for t in found if t is not None]


def _first_time(run_dir: Path, kind: str) -> float | None:
    return min(_times(run_dir, kind), default=None)


def _last_time(run_dir: Path, kind: str) -> float | None:
    return max(_times(run_dir, kind), default=None)


class RunDir:
    """Paths and small files of one run; the evidence and the bank live in their own stores."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock: RunLock | None = None
        self.setting_edits: list[str] = []
        """A resume's warnings: the operational keys of config.yaml edited since it last ran."""

    # ---- the single writer -----------------------------------------------------------------
    def acquire(self, purpose: str) -> None:
        """Become the run's only writer: take its lock (``RunDirBusy`` naming the holder when
        another process has it), refuse evidence with an unreadable part (``CorruptEvidence``
        naming ``evidence verify`` / ``evidence repair``), rename old zero-padded evidence
        partitions and remove the temps of cut writes (``remove_leftover_temps``). Both errors
        are ``ValueError``s raised before anything is written."""
        lock = RunLock(self.path, purpose).acquire()
        try:
            store = EvidenceStore(self.path)
            require_readable(store, self.path)
            store.migrate_partitions()
            removed = remove_leftover_temps(self.path)
            if removed:
                log.info("removed %d leftover temp file(s) of writes a kill cut short, e.g. %s",
                         len(removed), removed[0])
        except BaseException:
            lock.release()
            raise
        self._lock = lock

    def release(self) -> None:
        """Drop the writer lock (idempotent; a dead process drops it anyway)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    @property
    def _root(self) -> Path | None:
        """The root of this process's writes while it holds the run dir: never made again."""
        return self.path if self._lock is not None else None

    def lost(self) -> str | None:
        """What became of the run dir while this process held it (deleted, moved, replaced by a
        link or a copy: ``RunLock.moved``), as a stop's cause and its fix; None while it is
        there, or when not held."""
        moved = self._lock.moved() if self._lock is not None else None
        if moved is None:
            return None
        if not moved:
            return (f"the run dir {self.path} was deleted while the run ran: nothing more is "
                    "recorded, nor the folder made again; start the run anew")
        return (f"the run dir {self.path} was moved to {moved} while the run ran: nothing more is "
                f"recorded; move it back (its name is the run's id) and continue with "
                f"{resume_advice(self.path)}")

    @property
    def run_id(self) -> str:
        return self.path.name

    # ---- creation / opening ----------------------------------------------------------------
    @classmethod
    def create(cls, config: LoopConfig, train_ids: list[str], eval_ids: list[str]) -> "RunDir":
        parent = Path(config.results_dir).resolve() / config.suite
        path = parent / run_name(config, len(train_ids), len(eval_ids))
        if path.exists():
            raise FileExistsError(f"run dir {path} already exists; resume it with --resume {path} "
                                  "or give this run a --tag")
        problem = results_dir_problem(config)
        if problem is not None:
            raise ValueError(problem)
        path.mkdir(parents=True)
        run = cls(path)
        dump_config(config, path / CONFIG_FILE)
        dump_config(config, path / RECORD_FILE)  # the settings it ran with: resume compares
        atomic_write_json(path / TRAIN_IDS_FILE, list(train_ids))
        atomic_write_json(path / EVAL_IDS_FILE, list(eval_ids))
        return run

    @classmethod
    def open(cls, path: str | Path) -> "RunDir":
        run = cls(Path(path))
        if not (run.path / CONFIG_FILE).is_file():
            raise FileNotFoundError(
                f"{run.path} is not a run dir (no {CONFIG_FILE}); pass the folder printed when the "
                "run started, e.g. results/mbpp/mbpp_r10_t60_e40_<ts>, or start a new run without "
                "--resume")
        return run

    def check_writable(self) -> None:
        """``ValueError`` naming the fix when the run dir cannot be written (a read-only copy):
        a resumed run writes its lock, evidence and rounds there."""
        why = unwritable(self.path)
        if why is not None:
            raise ValueError(f"cannot write to the run dir {self.path}: {why}; copy it to a "
                             "writable place (cp -a RUN /a/writable/path/) and --resume the copy")

    def check_bank(self) -> None:
        """``ValueError`` naming the fix when the bank's folder (``skills/`` or
        ``meta-skills/``) is gone while the latest bank checkpoint holds files of it: the
        SkillBank would start empty and the resumed run go on without what it learned; when a
        file stands where ``checkpoints/`` belongs (each round's snapshot would fail); when a
        bank snapshot is damaged (``checkpoints.snapshot_problem``: files its manifest lists
        missing, a manifest garbled or another run's, a file where it belongs), which a
        rollback would restore as fewer skills; and when round 0's snapshot is gone while no
        round has finished and the bank has changed since round 0 began (its synth or curate
        ran): the resume would make that snapshot again from the later bank."""
        rounds = available_rounds(self.path)
        if rounds:
            self._check_bank_folders(rounds[-1])
        recorded = self._recorded_run_id() or self.run_id
        folder = self.path / CHECKPOINTS_DIR
        if folder.exists() and not folder.is_dir():  # every round's snapshot write would fail
            raise ValueError(f"{folder} is a file where the bank snapshots' folder belongs: "
                             f"move it out of the run dir and {resume_advice()} again")
        numbered = sorted(folder.glob("round_*")) if folder.is_dir() else []
        for path in numbered:
            number = path.name.split("_", 1)[1].removesuffix(PREV_SUFFIX)
            problem = snapshot_problem(self.path, int(number), recorded) if number.isdigit() \
                else None
            if problem is not None:
                raise ValueError(
                    f"{problem}; a rollback to that round would restore another bank than "
                    f"the one it ran with: put it back from a copy of the run dir, or move it "
                    f"out of {folder} (only the best round's snapshot is ever restored, and a "
                    f"rollback that needs a missing one stops naming it), then "
                    f"{resume_advice()} again")
        self._check_start_bank()

    def _check_bank_folders(self, latest_round: int) -> None:
        """``check_bank``'s first clause: the bank's folders against the latest checkpoint."""
        latest = checkpoint_dir(self.path, latest_round)
        if not latest.is_dir():  # a crash cut its swap: the complete copy is the .prev
            latest = latest.with_name(latest.name + PREV_SUFFIX)
        for name in ("skills", "meta-skills"):
            kept = [f for f in (latest / name).glob("*") if not f.name.startswith(".")] \
                if (latest / name).is_dir() else []
            if kept and not (self.path / name).is_dir():
                raise ValueError(
                    f"the skill bank's folder {self.path / name} is missing, while the checkpoint "
                    f"{latest / name} holds {len(kept)} file(s): a resume would start from an "
                    f"empty bank; restore it (cp -a {shlex.quote(str(latest / name))} "
                    f"{shlex.quote(str(self.path / name))}) and {resume_advice()} again")

    def _check_start_bank(self) -> None:
        """``check_bank``'s round-0 clause: the driver makes ``checkpoints/round_00`` again when
        none is left and no round has finished, which is exact only while the bank is the one
        round 0 started from. Round 0 changes the bank only after its eval, train and critic
        (metasynth, synth, curate), so a ``skill_event`` written after the run's first capsule
        means it has moved on."""
        if available_rounds(self.path) or any(self.path.glob(f"round_*/{SUMMARY_FILE}")):
            return
        first = _first_time(self.path, "capsule")
        changed = _last_time(self.path, "skill_event")
        if first is None or changed is None or changed <= first:
            return
        snapshot = checkpoint_dir(self.path, 0)
        raise ValueError(
            f"the bank snapshot round 0 started from ({snapshot}) is missing, and the bank has "
            "changed since round 0 began (its metasynth, synth or curate ran): a resume would "
            "make that snapshot again from the later bank, which a rollback to round 0 would "
            f"restore; put {snapshot} back from a copy of the run dir and {resume_advice()} "
            "again, or start the run anew")

    def _recorded_run_id(self) -> str | None:
        """The run id the evidence's first capsule part holds (None: no readable part)."""
        import pyarrow.parquet as pq

        parts = EvidenceStore(self.path).part_paths("capsule")
        try:
            ids = pq.ParquetFile(parts[0]).read(columns=["run_id"]).column(0) if parts else []
        except (OSError, ValueError):
            return None
        return str(ids[0]) if len(ids) else None

    def check_name(self) -> None:
        """``ValueError`` naming the fix when the evidence was written under another run id: the
        run dir was renamed, or copied under another name. Its name is the run's id, which keys
        every capsule, so a resume would redo an unfinished round's tasks beside those recorded
        (and stop on a split holding them twice). An unreadable part is left to ``acquire``."""
        recorded = self._recorded_run_id() or self.run_id
        if recorded != self.run_id:
            raise ValueError(
                f"{self.path} holds the evidence of run {recorded}: the folder was renamed or "
                "copied under another name, and its name is the run's id, so a resume would redo "
                f"its unfinished round beside what it holds; give it its name back (mv "
                f"{shlex.quote(str(self.path))} {shlex.quote(str(self.path.parent / recorded))}) "
                "or copy it keeping the name (cp -a RUN /a/path/), and resume that")

    def config(self) -> LoopConfig:
        return load_config([self.path / CONFIG_FILE])

    def train_ids(self) -> list[str]:
        return _read_ids(self.path / TRAIN_IDS_FILE)

    def eval_ids(self) -> list[str]:
        return _read_ids(self.path / EVAL_IDS_FILE)

    # ---- per-round files -------------------------------------------------------------------
    def round_file(self, round_: int, name: str) -> Path:
        return self.path / f"round_{round_:02d}" / name

    def write_round_json(self, round_: int, name: str, data: Any) -> None:
        atomic_write_json(self.round_file(round_, name), data, root=self._root)

    def read_round_json(self, round_: int, name: str) -> Any | None:
        """The phase output ``name`` of ``round_``, or None when that phase has not finished."""
        path = self.round_file(round_, name)
        if not path.is_file():
            return None
        return _read_json(path, f"move it out of {path.parent} and resume with "
                                f"{resume_advice(self.path)}: the phase that wrote it runs again")

    def write_summary(self, summary: RoundSummary) -> None:
        self.write_round_json(summary.round, SUMMARY_FILE, summary.model_dump(mode="json"))

    def summaries(self) -> list[RoundSummary]:
        """Summaries of every finished round, in round order."""
        found = []
        for folder in sorted(self.path.glob("round_*")):
            path = folder / SUMMARY_FILE
            if path.is_file():
                try:
                    found.append(RoundSummary.model_validate_json(path.read_text()))
                except (ValidationError, UnicodeDecodeError) as exc:
                    first = str(exc).splitlines()[0][:200]
                    raise RunFileError(
                        f"{path} is not a valid round summary ({first}); move it out of "
                        f"{folder} and resume with {resume_advice(self.path)}: the round's work "
                        "is in the evidence, so the resumed run rewrites the summary without "
                        "redoing or double-counting anything; when a later round has finished too, "
                        "rebuild it from a copy instead (the `round` view of `ratchet query` "
                        "holds its numbers)") from exc
        return sorted(found, key=lambda s: s.round)

    def write_loop_json(self, config: LoopConfig, summaries: list[RoundSummary],
                        stopped: dict[str, Any] | None = None) -> None:
        """``loop.json``: the run's identity, its setting line (model, tasks, the suite's Solver,
        the rules: ``suites.hooks.setting_line``) and one row per finished round (``plot`` reads
        it); ``stopped``: why the run stopped early (the next finished round drops it)."""
        rows = [s.model_dump(mode="json")
                | {"eval_pass_at_1": s.eval.pass_at_1 if s.eval else None,
                   "train_pass_at_1": s.train.pass_at_1 if s.train else None}
                for s in summaries]
        atomic_write_json(self.path / LOOP_FILE, {
            "run_id": self.run_id, "suite": config.suite, "arm": config.arm, "seed": config.seed,
            "rounds_planned": config.rounds, "setting": setting_line(config), "rounds": rows,
            **({"stopped": stopped} if stopped else {})}, root=self._root)

    # ---- logging ---------------------------------------------------------------------------
    def attach_log(self) -> logging.Handler:
        """Send this process's ``ratchet_ray``/``actors``/``jobs`` log records to ``run.log``;
        a record a full disk keeps out is dropped quietly (the run stops on that disk anyway)."""
        handler = _RunLogHandler(self.path / RUN_LOG_FILE)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        for name in ("ratchet_ray", "actors", "jobs"):
            logger = logging.getLogger(name)
            logger.setLevel(logging.INFO)
            logger.addHandler(handler)
        return handler

    def detach_log(self, handler: logging.Handler) -> None:
        for name in ("ratchet_ray", "actors", "jobs"):
            logging.getLogger(name).removeHandler(handler)
        handler.close()
