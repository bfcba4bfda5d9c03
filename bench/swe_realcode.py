"""Real-project instance sets (``ratchet swe make-instances``) graded as ``swe validate`` grades:
gold must resolve and a no-op patch must not, ``--repeat`` times each, per instance the flake
rate, the grade's seconds and the share of a resolved grade that is proof.

    python bench/swe_realcode.py --dataset results/realcode/flask-2.3.3/instances.jsonl --repeat 5

Grades in this process (``SwebenchGrader``, ``--workers`` threads each with its own grader), no
Ray: the same grades ``ratchet swe validate`` runs through its Grader pool, measurable on a
machine too loaded to start Ray. Prints one markdown row per instance and the totals; the
target is every gold resolved and every no-op unresolved on every repeat (flake rate 0).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swe_common import bench_config, proof_seconds  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="only the first N instances")
    parser.add_argument("--out", type=Path, default=Path("results/bench/swe_realcode"))
    args = parser.parse_args()

    from ratchet_ray.suites.swebench.grader import SwebenchGrader
    from ratchet_ray.suites.swebench.settings import GradingLimits, settings_from_config
    from ratchet_ray.suites.swebench.validate import gold_pairs, validate

    out = args.out / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True)
    config = bench_config(args.dataset.resolve(), out, 600)
    settings = settings_from_config(config)
    limits = GradingLimits.of_run(config, settings)
    pairs = gold_pairs(settings)
    if args.limit:
        pairs = pairs[:args.limit]
    graders = [SwebenchGrader(settings, limits, out / f"grader-{w}") for w in range(args.workers)]
    # Each instance's gold record first, as a run's first resolution makes it, off the clock.
    prep = time.monotonic()
    instances = {i: json.loads(line) for i, line in enumerate(args.dataset.read_text().splitlines())}
    for row in instances.values():
        if row["instance_id"] in {t.task_id for t, _ in pairs}:
            graders[0].proof.gold_record(row)
    prep = time.monotonic() - prep

    def grade(items):
        def one(index_item):
            index, (task, patch) = index_item
            return graders[index % len(graders)].grade(task, patch)
        with ThreadPoolExecutor(max_workers=len(graders)) as pool:
            return list(pool.map(one, enumerate(items)))

    started = time.monotonic()
    result = validate(grade, pairs, repeat=args.repeat)
    wall = time.monotonic() - started
    print(f"dataset {args.dataset} ({len(pairs)} instances), repeat {args.repeat}, "
          f"workers {args.workers}; gold records made in {prep:.0f} s before the clock")
    print("| instance | gold resolved | no-op unresolved | gold failure rate | mean gold grade s | "
          "mean no-op grade s | proof share of a resolved grade |")
    print("|---|---|---|---|---|---|---|")
    all_ok = True
    for task, _ in pairs:
        mine = [o for o in result.outcomes if o.instance_id == task.task_id]
        gold = [o for o in mine if o.kind == "gold"]
        noop = [o for o in mine if o.kind == "noop"]
        resolved = sum(o.passed for o in gold)
        unresolved = sum((not o.passed) and not o.infra_failure for o in noop)
        all_ok &= resolved == len(gold) and unresolved == len(noop)
        shares = [p / o.duration_s for o in gold if o.passed and o.duration_s
                  and (p := proof_seconds(o.trace)) is not None]
        flake = 1 - resolved / len(gold)
        share = f"{statistics.mean(shares):.2f}" if shares else "n/a"
        print(f"| {task.task_id} | {resolved}/{len(gold)} | {unresolved}/{len(noop)} | "
              f"{flake:.2f} | {statistics.mean(o.duration_s for o in gold):.1f} | "
              f"{statistics.mean(o.duration_s for o in noop):.1f} | {share} |")
    for failure in result.failures:
        print(f"FAIL {failure.instance_id} {failure.kind}: {failure.failed}/{failure.repeats} "
              f"{failure.statuses} {failure.reason[:300]}")
    print(f"{len(result.outcomes)} grades in {wall:.0f} s ({len(result.outcomes) / wall * 60:.1f} "
          f"grades/min); quarantine: {sorted(result.quarantine()) or 'none'}")
    print(f"target: every gold resolved and every no-op unresolved on every repeat: "
          f"{'met' if all_ok else 'NOT met'}")


if __name__ == "__main__":
    main()
