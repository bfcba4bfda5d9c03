"""Child process that computes MBPP+ expected outputs with ``evalplus.evaluate.get_groundtruth``.

Run by ``groundtruth.GroundTruthStore`` as ``python -I -B oracle.py JOB.pkl``; it imports only the
standard library and evalplus. JOB holds ``problems`` ({task_id: problem}) and ``hashes``
({task_id: per-task hash}). Each task is computed on its own, under its own hash, so a cache file
never holds a subset under the full dataset's hash. The caller points ``XDG_CACHE_HOME`` at a
staging directory (evalplus writes ``$XDG_CACHE_HOME/evalplus/<hash>.pkl`` non-atomically) and
moves finished files into the real cache itself. One JSON line per task goes to stdout:
``{"task_id", "seconds", "error"}``. The canonical solutions are trusted dataset code, so this
process is not sandboxed; it exists so that their memory (hundreds of MB for some tasks) is
returned to the OS instead of staying in a long-lived grader actor.
"""

from __future__ import annotations

import contextlib
import json
import pickle
import sys
import time


def main(job_path: str) -> int:
    with open(job_path, "rb") as handle:
        job = pickle.load(handle)
    with contextlib.redirect_stdout(sys.stderr):  # evalplus prints progress
        from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS
        from evalplus.evaluate import get_groundtruth
    failures = 0
    for task_id, problem in job["problems"].items():
        started = time.monotonic()
        error = ""
        try:
            with contextlib.redirect_stdout(sys.stderr):
                get_groundtruth({task_id: problem}, job["hashes"][task_id],
                                MBPP_OUTPUT_NOT_NONE_TASKS)
        except Exception as exc:  # one bad canonical solution must not lose the others
            error = f"{type(exc).__name__}: {exc}"[:300]
            failures += 1
        line = {"task_id": task_id, "seconds": round(time.monotonic() - started, 4), "error": error}
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
