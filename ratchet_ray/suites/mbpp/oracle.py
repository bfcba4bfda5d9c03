"""Child process that computes MBPP+ expected outputs in ONE batch with evalplus.

Run by ``groundtruth.GroundTruthStore`` as ``python -I -B oracle.py JOB.pkl OUT_DIR``; imports only
the standard library and evalplus. JOB holds ``problems`` ({task_id: problem}) and ``hash``: the
dataset hash when all tasks are computed (then evalplus's own cache file is exactly what evalplus
would write), otherwise a hash naming the subset, so a subset never sits under the full dataset's
hash (evalplus would later read it as complete and fail with KeyError). The caller points
``XDG_CACHE_HOME`` at a staging directory. ``evalplus.evaluate.get_groundtruth`` computes every
task in this one process; the result is then written as one pickle per task
(``OUT_DIR/<n>.pkl``: evalplus's ``{"base", "base_time", "plus", "plus_time"}`` plus, per
split, ``<split>_digest`` and ``<split>_bytes``: each output's pickle sha256 and size, see
``digests``) and one JSON line per task
goes to stdout: ``{"task_id", "file", "sha256", "bytes"}``. The canonical solutions are trusted
dataset code, so this process is not sandboxed; it exists so that their memory (hundreds of MB
for some tasks) returns to the OS instead of staying in a long-lived grader.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import re
import sys


DIGEST_PROTOCOL = 4  # runner.py pickles outputs with the same protocol


# A pickled float is BINFLOAT ("G") and 8 big-endian bytes; NaN and inf have all exponent bits
# set. Matching bytes inside a string only cost the digest shortcut, never a wrong verdict.
_NAN_OR_INF = re.compile(rb"G[\x7f\xff][\xf0-\xff]")


def digests(outputs: list) -> tuple[list, list]:
    """Per output: the sha256 of its pickle (None where it may hold a NaN, which evalplus never
    finds equal to a copy of itself: then only the full comparison decides) and its size."""
    hashes, sizes = [], []
    for output in outputs:
        data = pickle.dumps(output, protocol=DIGEST_PROTOCOL)
        stable = _NAN_OR_INF.search(data) is None
        hashes.append(hashlib.sha256(data).hexdigest() if stable else None)
        sizes.append(len(data))
    return hashes, sizes


def main(job_path: str, out_dir: str) -> int:
    with open(job_path, "rb") as handle:
        job = pickle.load(handle)
    with contextlib.redirect_stdout(sys.stderr):  # evalplus prints progress
        from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS
        from evalplus.evaluate import get_groundtruth

        expected = get_groundtruth(job["problems"], job["hash"], MBPP_OUTPUT_NOT_NONE_TASKS)
    for task_id in job["problems"]:
        entry = expected[task_id]
        for split in ("base", "plus"):
            entry[f"{split}_digest"], entry[f"{split}_bytes"] = digests(entry[split])
        data = pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
        name = task_id.replace("/", "_") + ".pkl"
        with open(os.path.join(out_dir, name), "wb") as handle:
            handle.write(data)
        row = {"task_id": task_id, "file": name, "sha256": hashlib.sha256(data).hexdigest(),
               "bytes": len(data)}
        sys.stdout.write(json.dumps(row) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
