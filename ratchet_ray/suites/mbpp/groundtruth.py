"""Expected outputs of MBPP+ tasks: computed in one parallel batch, stored once per dataset hash.

Contracts:
- ``GroundTruthStore(dataset, cache_dir, workers=None).ensure(task_ids)`` stores the expected
  outputs of ``task_ids``; the missing ones are computed together in ONE child (``oracle.py``,
  over ``workers`` forked processes; default: the usable cores, at most ``MAX_WORKERS``), under
  an exclusive file lock so that graders sharing ``cache_dir`` compute each task once.
- Layout: ``cache_dir/<dataset_hash>/<Mbpp_N>.pkl`` and ``manifest.json`` mapping each task id
  to its file, size and sha256 (``imported``: computed by another store). Files land by
  ``os.replace``; the manifest is rewritten atomically under the lock; tasks that finished are
  kept even when others of their batch failed.
- ``load(task_id)`` checks the file's sha256 against the manifest before unpickling it, in the
  grader (trusted) process only: evalplus's ``{"base", "base_time", "plus", "plus_time"}`` plus
  ``<split>_digest`` / ``<split>_bytes``. A mismatch raises ``GroundTruthError`` naming the file
  and the fix. No sandbox ever sees these files.
- ``blob`` / ``add_blob`` move verified entries between stores (through Ray's object store)
  without recomputing.
- ``timings``: seconds per task this store computed; ``batches``: one
  ``{"tasks", "workers", "seconds"}`` per child run.
- evalplus's own cache is never touched: the child runs with a private ``XDG_CACHE_HOME``.
"""

from __future__ import annotations

import fcntl
import hashlib
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

from ratchet_ray.storage.fsutil import atomic_write_bytes, atomic_write_text
from ratchet_ray.suites.mbpp.dataset import MbppDataset

log = logging.getLogger(__name__)
SPLITS = ("base", "plus")
ORACLE_SCRIPT = Path(__file__).with_name("oracle.py")
MAX_WORKERS = 8  # each worker may hold one task's outputs (GBs for a few tasks) at a time


class GroundTruthError(RuntimeError):
    """Expected outputs could not be computed or failed verification; the message says why."""


def default_workers() -> int:
    """The cores this process may run on, at most ``MAX_WORKERS``."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


def default_cache_dir() -> Path:
    """``~/.cache/ratchet-ray/mbpp-groundtruth`` on Linux (honours XDG_CACHE_HOME)."""
    from appdirs import user_cache_dir

    return Path(user_cache_dir("ratchet-ray")) / "mbpp-groundtruth"


class GroundTruthStore:
    def __init__(self, dataset: MbppDataset, cache_dir: Path | str | None = None,
                 timeout_s: float = 3600.0, workers: int | None = None):
        self.dataset = dataset
        self.workers = workers or default_workers()
        self.root = Path(cache_dir) if cache_dir else default_cache_dir()
        self.dir = self.root / dataset.dataset_hash
        self.timeout_s = timeout_s
        self.timings: dict[str, float] = {}
        self.batches: list[dict] = []
        self._manifest: dict[str, dict] = {}

    def path(self, task_id: str) -> Path:
        return self.dir / (task_id.replace("/", "_") + ".pkl")

    def _read_manifest(self) -> dict[str, dict]:
        try:
            return json.loads((self.dir / "manifest.json").read_text())
        except FileNotFoundError:
            return {}
        except ValueError as exc:
            raise GroundTruthError(f"{self.dir / 'manifest.json'} is corrupt ({exc}); delete "
                                   f"{self.dir} to recompute") from exc

    def _write_manifest(self, manifest: dict[str, dict]) -> None:
        atomic_write_text(self.dir / "manifest.json", json.dumps(manifest, sort_keys=True))
        self._manifest = manifest

    def ensure(self, task_ids: Iterable[str]) -> None:
        wanted = list(dict.fromkeys(task_ids))
        for task_id in wanted:
            self.dataset.problem(task_id)  # unknown ids fail here, with the dataset named
        if all(t in self._manifest for t in wanted):
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another grader may be computing the same tasks
            manifest = self._read_manifest()
            missing = [t for t in wanted if t not in manifest or not self.path(t).is_file()]
            failure = None
            if missing:
                rows, failure = self._compute(missing)
                manifest.update(rows)
                self._write_manifest(manifest)
            self._manifest = manifest
            if failure:
                raise GroundTruthError(failure)

    def _compute(self, task_ids: list[str]) -> tuple[dict[str, dict], str]:
        """Run the oracle on ``task_ids``: the manifest rows of the tasks it finished, and a
        message naming the failed ones ("" when none failed)."""
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=self.dir))
        workers = max(1, min(self.workers, len(task_ids)))
        try:
            job = {"problems": {t: self.dataset.problem(t) for t in task_ids}}
            (staging / "job.pkl").write_bytes(pickle.dumps(job))
            (staging / "out").mkdir()
            env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "HOME")}
            env.update(XDG_CACHE_HOME=str(staging / "cache"), TMPDIR=str(staging))
            started = time.monotonic()
            with open(staging / "oracle.log", "wb") as log_file:
                argv = [sys.executable, "-I", "-B", str(ORACLE_SCRIPT), str(staging / "job.pkl"),
                        str(staging / "out"), str(workers)]
                proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=log_file, env=env,
                                      timeout=self.timeout_s, check=False)
            seconds = time.monotonic() - started
            rows = self._collect(proc.stdout, staging / "out")
            self.batches.append({"tasks": len(task_ids), "workers": workers, "seconds": seconds})
            log.info("MBPP+ ground truth: %d task(s) computed in one batch of %d worker(s) in "
                     "%.1fs", len(rows), workers, seconds)
            if proc.returncode != 0 or set(rows) != set(task_ids):
                tail = (staging / "oracle.log").read_text(errors="replace")[-1500:]
                return rows, (f"evalplus ground truth failed for "
                              f"{sorted(set(task_ids) - set(rows))[:10]} (exit "
                              f"{proc.returncode}); oracle log tail:\n{tail}")
            return rows, ""
        except subprocess.TimeoutExpired as exc:
            raise GroundTruthError(f"evalplus ground truth for {len(task_ids)} task(s) exceeded "
                                   f"{self.timeout_s}s") from exc
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _collect(self, stdout: bytes, out_dir: Path) -> dict[str, dict]:
        """Verify and move finished files into the store; the manifest rows by task id."""
        rows = {}
        for line in stdout.decode(errors="replace").splitlines():
            row = json.loads(line)
            data = (out_dir / row["file"]).read_bytes()
            if hashlib.sha256(data).hexdigest() != row["sha256"]:
                continue  # not what the oracle reported: treated as not computed
            os.replace(out_dir / row["file"], self.path(row["task_id"]))
            rows[row["task_id"]] = {"file": self.path(row["task_id"]).name,
                                    "sha256": row["sha256"], "bytes": row["bytes"]}
            self.timings[row["task_id"]] = float(row["seconds"])
        return rows

    def has(self, task_id: str) -> bool:
        """Whether this store holds ``task_id`` already (nothing is computed)."""
        if task_id not in self._manifest:
            self._manifest = self._read_manifest()  # another grader may have added it
        return task_id in self._manifest and self.path(task_id).is_file()

    def blob(self, task_id: str) -> tuple[bytes, str]:
        """The verified stored bytes of one task and their sha256."""
        self.ensure([task_id])
        entry = self._manifest[task_id]
        data = self.path(task_id).read_bytes()
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise GroundTruthError(f"{self.path(task_id)} does not match its sha256 in "
                                   f"{self.dir / 'manifest.json'}; delete {self.dir} to recompute")
        return data, entry["sha256"]

    def add_blob(self, task_id: str, data: bytes, sha256: str) -> None:
        """Store bytes computed elsewhere (checked against ``sha256`` first)."""
        self.dataset.problem(task_id)
        if hashlib.sha256(data).hexdigest() != sha256:
            raise GroundTruthError(f"expected outputs of {task_id} do not match their sha256")
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            atomic_write_bytes(self.path(task_id), data)
            manifest = self._read_manifest()  # what other graders added meanwhile stays
            manifest[task_id] = {"file": self.path(task_id).name, "sha256": sha256,
                                 "bytes": len(data), "imported": True}
            self._write_manifest(manifest)

    def load(self, task_id: str) -> dict:
        """The expected outputs of one task, hash-verified before unpickling."""
        data, _ = self.blob(task_id)
        entry = pickle.loads(data)
        for split in SPLITS:  # each output was pickled alone, once (its digest is of those bytes)
            if f"{split}_pickles" in entry:  # absent in stores written before: outputs as such
                entry[split] = [pickle.loads(p) for p in entry.pop(f"{split}_pickles")]
        return entry
