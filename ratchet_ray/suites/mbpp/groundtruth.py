"""Expected outputs of MBPP+ tasks: computed once per machine, per task, and cached on disk.

Contracts:
- ``GroundTruthStore(dataset).ensure(task_ids)`` returns ``{task_id: Path}`` of pickles in
  evalplus's cache directory, each ``{task_id: {"base", "base_time", "plus", "plus_time"}}`` as
  ``evalplus.evaluate.get_groundtruth`` produces them. Missing ones are computed in ONE child
  process (``oracle.py``) per call, under an exclusive file lock, so concurrent graders on a machine
  compute each task once and never read a half-written file (files land by ``os.replace``).
- File names are ``<dataset_hash>-<Mbpp_N>.pkl``: a per-task hash. The full-dataset hash is never
  used for a subset, so evalplus's own full cache (``<dataset_hash>.pkl``) is never poisoned.
- ``timings`` maps each task computed by this store to its seconds (measured in the child).
  Measured on the shared 2-core dev box: all 378 tasks take ~93 s; the median task well under 1 s;
  ``Mbpp/255`` dominates (its expected output pickles to ~780 MB).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterable

from ratchet_ray.suites.mbpp.dataset import MbppDataset

log = logging.getLogger(__name__)
ORACLE_SCRIPT = Path(__file__).with_name("oracle.py")


class GroundTruthError(RuntimeError):
    """Expected outputs could not be computed; the message names the tasks and the log."""


def default_cache_dir() -> Path:
    """evalplus's cache directory (``~/.cache/evalplus`` on Linux, honouring XDG_CACHE_HOME)."""
    from appdirs import user_cache_dir

    return Path(user_cache_dir("evalplus"))


class GroundTruthStore:
    def __init__(self, dataset: MbppDataset, cache_dir: Path | None = None,
                 timeout_s: float = 3600.0):
        self.dataset = dataset
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.timeout_s = timeout_s
        self.timings: dict[str, float] = {}
        self._ready: set[str] = set()  # per-process memo: files already known to exist

    def task_hash(self, task_id: str) -> str:
        return f"{self.dataset.dataset_hash}-{task_id.replace('/', '_')}"

    def path(self, task_id: str) -> Path:
        return self.cache_dir / f"{self.task_hash(task_id)}.pkl"

    def ensure(self, task_ids: Iterable[str]) -> dict[str, Path]:
        """Paths of the expected outputs of ``task_ids``, computing the missing ones."""
        wanted = list(dict.fromkeys(task_ids))
        for task_id in wanted:
            self.dataset.problem(task_id)  # unknown ids fail here, with the dataset named
        missing = [t for t in wanted if t not in self._ready and not self.path(t).is_file()]
        if missing:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            lock_path = self.cache_dir / f"{self.dataset.dataset_hash}.ratchet.lock"
            with open(lock_path, "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # another grader may be computing the same tasks
                still_missing = [t for t in missing if not self.path(t).is_file()]
                if still_missing:
                    self._compute(still_missing)
        self._ready.update(wanted)
        return {t: self.path(t) for t in wanted}

    def _compute(self, task_ids: list[str]) -> None:
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=self.cache_dir))
        try:
            job = {"problems": {t: self.dataset.problem(t) for t in task_ids},
                   "hashes": {t: self.task_hash(t) for t in task_ids}}
            job_path = staging / "job.pkl"
            job_path.write_bytes(pickle.dumps(job))
            env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "HOME", "TMPDIR")}
            env["XDG_CACHE_HOME"] = str(staging)
            log_path = staging / "oracle.log"
            started = time.monotonic()
            with open(log_path, "wb") as log_file:
                argv = [sys.executable, "-I", "-B", str(ORACLE_SCRIPT), str(job_path)]
                proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=log_file, env=env,
                                      timeout=self.timeout_s, check=False)
            errors = self._collect(proc.stdout, staging)
            log.info("MBPP+ ground truth: %d task(s) computed in %.1fs", len(task_ids),
                     time.monotonic() - started)
            if errors or proc.returncode != 0:
                tail = log_path.read_text(errors="replace")[-1500:]
                raise GroundTruthError(f"evalplus ground truth failed for {errors or task_ids} "
                                       f"(exit {proc.returncode}); oracle log tail:\n{tail}")
        except subprocess.TimeoutExpired as exc:
            raise GroundTruthError(f"evalplus ground truth for {len(task_ids)} task(s) exceeded "
                                   f"{self.timeout_s}s; compute fewer tasks per call") from exc
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _collect(self, stdout: bytes, staging: Path) -> list[str]:
        """Move finished pickles into the cache; return the ids that failed."""
        errors = []
        for line in stdout.decode(errors="replace").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            task_id = row["task_id"]
            produced = staging / "evalplus" / f"{self.task_hash(task_id)}.pkl"
            if row["error"] or not produced.is_file():
                errors.append(f"{task_id}: {row['error'] or 'no file written'}")
                continue
            os.replace(produced, self.path(task_id))
            self.timings[task_id] = float(row["seconds"])
        return errors

    def load(self, task_id: str) -> dict:
        """The expected outputs of one task (for tests and tools; graders hand the path on)."""
        with open(self.ensure([task_id])[task_id], "rb") as handle:
            return pickle.load(handle)[task_id]
