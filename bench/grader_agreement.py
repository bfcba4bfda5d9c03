"""MBPP+ grading: our sandboxed grader vs ``evalplus.evaluate``, same solutions, same worker count.

    python bench/grader_agreement.py [--workers 2] [--tasks N]   (MBPP_OVERRIDE_PATH must be set)

Solutions per task: the canonical solution (evalplus's ``prompt + canonical_solution``), a
known-wrong one (returns None), and a forgery (returns an object whose ``__eq__`` is always True).
Each side runs in its own process with a private cache dir (evalplus's through
``XDG_CACHE_HOME``, set before it is imported: a ground truth left in ``~/.cache/evalplus`` would
be loaded instead of computed): first its ground truth (ours: one ``GroundTruthStore`` batch with
``--workers`` processes; evalplus: ``get_groundtruth``, sequential), timed apart, then the
grading of every solution with ``--workers`` processes (ours: one ``MbppGrader`` per worker
process; evalplus: ``evaluate(parallel=workers)``, its fast-check mode; with ``--tasks`` the
per-sample ``check_correctness`` that ``evaluate`` calls, in the same kind of pool). Prints the
verdict agreement on canonical and on known-wrong solutions (every task counts, including any that
evalplus itself fails), how many forgeries each side passed, the grading throughput ratio
ours/evalplus (solutions per second) and the peak resident memory of each side.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KINDS = ("canonical", "wrong", "forgery")


def solutions(problem: dict) -> dict[str, str]:
    entry = problem["entry_point"]
    return {"canonical": problem["prompt"] + problem["canonical_solution"],
            "wrong": f"def {entry}(*args):\n    return None\n",
            "forgery": (f"class _Liar:\n    def __eq__(self, other):\n        return True\n"
                        f"def {entry}(*args):\n    return _Liar()\n")}


def _peak_mib() -> dict[str, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"main_process_mib": round(own, 1), "largest_child_mib": round(child, 1)}


_grader = None


def _init_worker(cache_dir: str) -> None:
    global _grader
    from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus
    from ratchet_ray.suites.mbpp.grader import MbppGrader
    from ratchet_ray.suites.mbpp.groundtruth import GroundTruthStore

    dataset = load_mbpp_plus(os.environ["MBPP_OVERRIDE_PATH"])
    _grader = MbppGrader(dataset, groundtruth=GroundTruthStore(dataset, cache_dir=cache_dir))


def _grade_one(item: tuple[str, str, str]) -> tuple[str, str, bool, str]:
    from ratchet_ray.types import Task

    task_id, kind, code = item
    result = _grader.grade(Task(task_id=task_id, suite="mbpp", prompt=""), code)
    return task_id, kind, result.passed, result.exit_status


def side_ours(task_ids: list[str], workers: int, cache_dir: str) -> dict:
    from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus
    from ratchet_ray.suites.mbpp.groundtruth import GroundTruthStore

    dataset = load_mbpp_plus(os.environ["MBPP_OVERRIDE_PATH"])
    started = time.monotonic()
    GroundTruthStore(dataset, cache_dir=cache_dir, workers=workers).ensure(task_ids)
    groundtruth_s = time.monotonic() - started
    items = [(t, kind, code) for t in task_ids
             for kind, code in solutions(dataset.problem(t)).items()]
    with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(cache_dir,)) as pool:
        list(pool.map(_grade_one, items[:workers]))  # start-up (dataset, sandbox probe) untimed
        started = time.monotonic()
        rows = list(pool.map(_grade_one, items, chunksize=1))
        grading_s = time.monotonic() - started
    verdicts = {f"{t}|{kind}": passed for t, kind, passed, _ in rows}
    statuses = {f"{t}|{kind}": status for t, kind, _, status in rows}
    return {"groundtruth_s": groundtruth_s, "grading_s": grading_s, "verdicts": verdicts,
            "statuses": statuses, **_peak_mib()}


def side_evalplus(task_ids: list[str], workers: int, cache_dir: str) -> dict:
    from evalplus.data import get_mbpp_plus, get_mbpp_plus_hash
    from evalplus.data.utils import CACHE_DIR
    from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS
    from evalplus.evaluate import evaluate, get_groundtruth

    # evalplus fixes CACHE_DIR at import; a ground truth it finds there is loaded, not computed
    if Path(CACHE_DIR).resolve() != (Path(cache_dir) / "evalplus").resolve():
        raise SystemExit(f"evalplus caches in {CACHE_DIR}, not under {cache_dir}: XDG_CACHE_HOME "
                         f"must be set before evalplus is imported (see _run_side)")
    problems = get_mbpp_plus()
    if set(task_ids) != set(problems):
        return _evalplus_subset(problems, task_ids, workers)
    started = time.monotonic()
    get_groundtruth(problems, get_mbpp_plus_hash(), MBPP_OUTPUT_NOT_NONE_TASKS)
    groundtruth_s = time.monotonic() - started
    Path(cache_dir).mkdir(parents=True, exist_ok=True)  # get_groundtruth makes only its subdir
    work = Path(tempfile.mkdtemp(prefix="evalplus-bench-", dir=cache_dir))
    samples = work / "samples.jsonl"
    identity = {}
    with open(samples, "w") as handle:
        for task_id in task_ids:
            for kind, code in solutions(problems[task_id]).items():
                handle.write(json.dumps({"task_id": task_id, "solution": code}) + "\n")
                identity[(task_id, code)] = kind
    started = time.monotonic()
    evaluate("mbpp", samples=str(samples), parallel=workers, i_just_wanna_run=True)
    grading_s = time.monotonic() - started  # includes loading its cached ground truth
    results = json.loads((work / "samples_eval_results.json").read_text())
    verdicts = {}
    for task_id, rows in results["eval"].items():
        for row in rows:
            kind = identity[(task_id, row["solution"])]
            verdicts[f"{task_id}|{kind}"] = (row["base_status"] == "pass"
                                             and row["plus_status"] == "pass")
    return {"groundtruth_s": groundtruth_s, "grading_s": grading_s, "verdicts": verdicts,
            "api": "evaluate", **_peak_mib()}


def _evalplus_subset(problems: dict, task_ids: list[str], workers: int) -> dict:
    """``evaluate`` insists on the whole dataset; for a subset, the same per-sample call it makes
    (``check_correctness``, fast check) in the same kind of process pool."""
    from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS
    from evalplus.evaluate import check_correctness, get_groundtruth

    subset = {t: problems[t] for t in task_ids}
    started = time.monotonic()
    expected = get_groundtruth(subset, f"bench-subset-{len(task_ids)}", MBPP_OUTPUT_NOT_NONE_TASKS)
    groundtruth_s = time.monotonic() - started
    started = time.monotonic()
    with ProcessPoolExecutor(workers) as pool:
        futures = {(t, kind): pool.submit(check_correctness, "mbpp", 0, subset[t], code,
                                          expected[t], False, True, f"{t}|{kind}")
                   for t in task_ids for kind, code in solutions(subset[t]).items()}
        verdicts = {}
        for (task_id, kind), future in futures.items():
            result = future.result()
            verdicts[f"{task_id}|{kind}"] = (result["base"][0] == "pass"
                                             and result["plus"][0] == "pass")
    return {"groundtruth_s": groundtruth_s, "grading_s": time.monotonic() - started,
            "verdicts": verdicts, "api": "check_correctness (subset)", **_peak_mib()}


def _run_side(side: str, args, cache_dir: str) -> dict:
    argv = [sys.executable, __file__, "--side", side, "--workers", str(args.workers),
            "--cache-dir", cache_dir] + (["--tasks", str(args.tasks)] if args.tasks else [])
    # a private evalplus cache from the start: main() imports evalplus before the side runs
    env = {**os.environ, "XDG_CACHE_HOME": cache_dir}
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{side} side failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=0,
                        help="first N tasks only (evalplus side: its check_correctness per sample)")
    parser.add_argument("--side", choices=("ours", "evalplus"))
    parser.add_argument("--cache-dir")
    args = parser.parse_args()
    if "MBPP_OVERRIDE_PATH" not in os.environ:
        raise SystemExit("set MBPP_OVERRIDE_PATH to MbppPlus-v0.2.0.jsonl.gz")
    from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus

    dataset = load_mbpp_plus(os.environ["MBPP_OVERRIDE_PATH"])
    task_ids = list(dataset.problems)[: args.tasks or None]
    if args.side:
        run = side_ours if args.side == "ours" else side_evalplus
        print(json.dumps(run(task_ids, args.workers, args.cache_dir)))
        return 0
    with tempfile.TemporaryDirectory(prefix="grader-bench-") as cache:
        ours = _run_side("ours", args, f"{cache}/ours")
        theirs = _run_side("evalplus", args, f"{cache}/evalplus")
    n = len(task_ids)
    print(f"MBPP+ grader agreement: {n} tasks x {len(KINDS)} solutions, {args.workers} workers "
          f"(evalplus via {theirs['api']})")
    for kind in KINDS:
        keys = [f"{t}|{kind}" for t in task_ids]
        agree = sum(ours["verdicts"][k] == theirs["verdicts"][k] for k in keys)
        print(f"  {kind:9s}: agreement {agree}/{n} ({100 * agree / n:.1f}%); passed: ours "
              f"{sum(ours['verdicts'][k] for k in keys)}, evalplus "
              f"{sum(theirs['verdicts'][k] for k in keys)}")
        for key in keys:
            if ours["verdicts"][key] != theirs["verdicts"][key] and kind != "forgery":
                print(f"    differs: {key} ours={ours['verdicts'][key]} "
                      f"({ours['statuses'][key]}) evalplus={theirs['verdicts'][key]}")
    total = n * len(KINDS)
    ours_rate, their_rate = total / ours["grading_s"], total / theirs["grading_s"]
    print(f"  ground truth: ours {ours['groundtruth_s']:.1f}s (one batch, {args.workers} "
          f"workers), evalplus {theirs['groundtruth_s']:.1f}s (get_groundtruth, sequential); "
          f"ratio evalplus/ours {theirs['groundtruth_s'] / ours['groundtruth_s']:.2f}")
    print(f"  grading: ours {ours['grading_s']:.1f}s ({ours_rate:.2f}/s), evalplus "
          f"{theirs['grading_s']:.1f}s ({their_rate:.2f}/s); throughput ratio ours/evalplus "
          f"{ours_rate / their_rate:.2f}")
    print(f"  peak RSS: ours main {ours['main_process_mib']:.0f} MiB, largest child "
          f"{ours['largest_child_mib']:.0f} MiB; evalplus main {theirs['main_process_mib']:.0f} "
          f"MiB, largest child {theirs['largest_child_mib']:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
