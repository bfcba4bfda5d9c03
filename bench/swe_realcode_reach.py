"""The differential's reach on an instance set: per instance, whether the first canary session
of a grade mutates a FAIL_TO_PASS test, and whether the cheat probe's impossible twin can be
built.

    python bench/swe_realcode_reach.py --dataset results/realcode/flask-2.3.3/instances.jsonl \
        --gold results/realcode_validate/<time>/gold

Reads each instance's gold record from ``--gold`` (``swebench.gold_records``: the folder
``ratchet swe validate`` filled; a record missing there is made now) and makes its twin record
(``twin.TwinGrading.twin_record``: one session of the base code with the gold record's
FAIL_TO_PASS mutants planted; a stored one is read). In this process, no Ray. The first canary
session of a grade plants a FAIL_TO_PASS mutant exactly when the gold record keeps one
(``differential.draw`` takes the first from that pool whenever it is not empty), so the reach is
read from the records, as every grade of the instance would draw it. Prints one markdown row per
instance (graded tests with a candidate mutant, mutants kept, FAIL_TO_PASS tests covered, the
first canary's kind, the up-front twin check, the twin's mutant or why none) and the totals.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swe_common import bench_config  # noqa: E402


def _row(instance: dict, gold, twin, up_front: bool) -> dict:
    """What one instance's records say (module contract's columns)."""
    f2p = json.loads(instance["FAIL_TO_PASS"])
    kept = gold.mutants()
    kept_f2p = {m.test for m in kept if m.test in f2p}
    return {"instance": instance["instance_id"], "f2p": len(f2p),
            "graded": len(f2p) + len(json.loads(instance["PASS_TO_PASS"])),
            "candidates": len(kept) + len(gold.dropped), "kept": len(kept),
            "f2p_covered": len(kept_f2p), "first_canary_f2p": bool(kept_f2p),
            "twin_up_front": up_front,
            "twin": twin.chosen().describe() if twin and twin.mutant else None,
            "twin_reason": "" if twin is None else twin.reason,
            "twin_s": None if twin is None else twin.seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--gold", type=Path, default=None,
                        help="gold records folder (default: a new one under --out)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N instances")
    parser.add_argument("--out", type=Path, default=Path("results/bench/swe_realcode_reach"))
    args = parser.parse_args()

    from ratchet_ray.suites.swebench.dataset import normalize_all, to_task
    from ratchet_ray.suites.swebench.grader import SwebenchGrader
    from ratchet_ray.suites.swebench.proof.twin import impossible_twin
    from ratchet_ray.suites.swebench.settings import GradingLimits, settings_from_config

    out = args.out / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True)
    config = bench_config(args.dataset.resolve(), out, 600, gold=args.gold)
    settings = settings_from_config(config)
    grader = SwebenchGrader(settings, GradingLimits.of_run(config, settings), out / "grader")
    instances = [json.loads(line) for line in args.dataset.read_text().splitlines() if line.strip()]
    if args.limit:
        instances = instances[:args.limit]
    tasks = {t.task_id: t for t in map(to_task, normalize_all(instances, "bench"))}
    rows = []
    started = time.monotonic()
    for instance in instances:
        up_front = impossible_twin(tasks[instance["instance_id"]]) is not None
        gold = grader.proof.gold_record(instance)
        twin = grader.twins.twin_record(instance) if gold.resolved and up_front else None
        rows.append(_row(instance, gold, twin, up_front))
    wall = time.monotonic() - started
    print(f"dataset {args.dataset} ({len(rows)} instances); records read or made in {wall:.0f} s")
    print("| instance | F2P tests | graded tests | candidate mutants | kept | F2P tests with a kept "
          "mutant | first canary mutates F2P | twin possible up front | twin's mutant (or why none) "
          "| twin record s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        twin = r["twin"] or r["twin_reason"] or "-"
        seconds = f"{r['twin_s']:.1f}" if r["twin_s"] is not None else "-"
        print(f"| {r['instance']} | {r['f2p']} | {r['graded']} | {r['candidates']} | {r['kept']} | "
              f"{r['f2p_covered']}/{r['f2p']} | {'yes' if r['first_canary_f2p'] else 'no'} | "
              f"{'yes' if r['twin_up_front'] else 'no'} | {twin} | {seconds} |")
    reach = sum(r["first_canary_f2p"] for r in rows)
    twins = sum(r["twin"] is not None for r in rows)
    covered = sum(r["f2p_covered"] for r in rows)
    print(f"first canary session mutates a FAIL_TO_PASS test on {reach}/{len(rows)} instances; "
          f"FAIL_TO_PASS tests with a kept mutant {covered}/{sum(r['f2p'] for r in rows)}; "
          f"impossible twin built on {twins}/{len(rows)}")
    (out / "reach.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(f"results: {out / 'reach.json'}")


if __name__ == "__main__":
    main()
