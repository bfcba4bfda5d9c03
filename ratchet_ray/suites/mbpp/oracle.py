"""Child process that computes MBPP+ expected outputs in ONE batch with evalplus, in parallel.

Run by ``groundtruth.GroundTruthStore`` as ``python -I -B oracle.py JOB.pkl OUT_DIR WORKERS``
(JOB: ``{"problems": {task_id: problem}}``); imports only the standard library and evalplus's
``trusted_exec`` (not ``evalplus.evaluate``: seconds of imports and a cache file nobody reads).
Per task, exactly ``get_groundtruth``'s two calls, base then plus: ``trusted_exec(prompt +
canonical_solution, <split>_input, entry_point, record_time=True, output_not_none=entry_point
in MBPP_OUTPUT_NOT_NONE_TASKS)``. Tasks go to ``WORKERS`` forked processes (1: this process),
each taking the next task when free; reference times are measured in each task's worker.

Output per task: ``OUT_DIR/<Mbpp_N>.pkl``, a pickle of ``{"<split>_pickles", "<split>_time",
"<split>_digest", "<split>_bytes"}`` (per output: its pickle, see ``digests``), and one JSON
line on stdout: ``{"task_id", "file", "sha256", "bytes", "seconds"}``. The canonical solutions
are trusted, so this is not sandboxed; it is a child so that their memory (hundreds of MB for
some tasks) returns to the OS. A task whose solution raises is reported on stderr and left out;
the others are still written, and the exit status is 1.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing
import os
import pickle
import re
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed

DIGEST_PROTOCOL = 4  # runner.py pickles outputs with the same protocol
SPLITS = ("base", "plus")

# A pickled float is BINFLOAT ("G") and 8 big-endian bytes; NaN and inf have all exponent bits
# set. Matching bytes inside a string only cost the digest shortcut, never a wrong verdict.
_NAN_OR_INF = re.compile(rb"G[\x7f\xff][\xf0-\xff]")

_job: dict = {}
_out_dir = ""


def digests(outputs: list) -> tuple[list, list, list]:
    """Per output: its pickle, the sha256 of that pickle (None where it may hold a NaN, which
    evalplus never finds equal to a copy of itself: then only the full comparison decides) and
    its size."""
    pickles, hashes, sizes = [], [], []
    for output in outputs:
        data = pickle.dumps(output, protocol=DIGEST_PROTOCOL)
        stable = _NAN_OR_INF.search(data) is None
        pickles.append(data)
        hashes.append(hashlib.sha256(data).hexdigest() if stable else None)
        sizes.append(len(data))
    return pickles, hashes, sizes


def compute_task(task_id: str) -> dict:
    """Expected outputs of one task, written to OUT_DIR; the manifest row (stdout line)."""
    from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS
    from evalplus.gen.util import trusted_exec

    started = time.monotonic()
    problem = _job["problems"][task_id]
    code = problem["prompt"] + problem["canonical_solution"]
    not_none = problem["entry_point"] in MBPP_OUTPUT_NOT_NONE_TASKS
    entry: dict = {}
    with contextlib.redirect_stdout(sys.stderr):  # canonical solutions may print
        for split in SPLITS:
            outputs, times = trusted_exec(code, problem[f"{split}_input"], problem["entry_point"],
                                          record_time=True, output_not_none=not_none)
            (entry[f"{split}_pickles"], entry[f"{split}_digest"],
             entry[f"{split}_bytes"]) = digests(outputs)
            entry[f"{split}_time"] = times
            del outputs
    data = pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
    name = task_id.replace("/", "_") + ".pkl"
    with open(os.path.join(_out_dir, name), "wb") as handle:
        handle.write(data)
    return {"task_id": task_id, "file": name, "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data), "seconds": round(time.monotonic() - started, 6)}


def _report(row: dict) -> None:
    sys.stdout.write(json.dumps(row) + "\n")
    sys.stdout.flush()


def _failed(task_id: str, exc: BaseException) -> None:
    sys.stderr.write(f"{task_id}: canonical solution failed: {type(exc).__name__}: {exc}\n"
                     + "".join(traceback.format_exception(exc))[-2000:])
    sys.stderr.flush()


def main(job_path: str, out_dir: str, workers: int) -> int:
    global _job, _out_dir
    with open(job_path, "rb") as handle:
        _job = pickle.load(handle)
    _out_dir = out_dir
    with contextlib.redirect_stdout(sys.stderr):  # imported once, before the workers fork
        import evalplus.eval._special_oracle  # noqa: F401
        import evalplus.gen.util  # noqa: F401
    task_ids = list(_job["problems"])
    failures = 0
    for task_id, result in _computed(task_ids, max(1, min(workers, len(task_ids)))):
        try:
            _report(result())
        except Exception as exc:  # a canonical solution raised, or a worker died (OOM): the
            _failed(task_id, exc)  # other tasks are still computed
            failures += 1
    return 1 if failures else 0


def _computed(task_ids: list[str], workers: int):
    """``(task id, a call giving its manifest row or raising)`` per task, as each one ends."""
    if workers == 1:
        yield from ((task_id, lambda t=task_id: compute_task(t)) for task_id in task_ids)
        return
    # fork: the workers inherit the job instead of receiving it pickled, on every Python version
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = {pool.submit(compute_task, task_id): task_id for task_id in task_ids}
        yield from ((futures[future], future.result) for future in as_completed(futures))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 1))
