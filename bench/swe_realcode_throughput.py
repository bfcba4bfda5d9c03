"""Grading throughput on a real project's instance set against the bare-Docker floor.

    python bench/swe_realcode_throughput.py --dataset results/realcode/flask-2.3.3/instances.jsonl \
        --workers 2 [--gold DIR] [--rounds 1]

On the same instance images (built, or found, before any clock), for the gold patch of every
instance, W at a time:
- ``floor``: the gold patch applied and the instance's eval script run by a bare container of its
  image (``swe_throughput.run_floor``: ``docker run --network none``, the grader's memory and CPU
  limits), resolved when swebench's own log parser for the instance reports every FAIL_TO_PASS
  and PASS_TO_PASS test passing: what the hardware allows;
- ``ours``: the same patches graded by W ``SwebenchGrader`` s in this process (the grades
  ``ratchet swe validate`` and a run's Grader pool make, without Ray: the image lock, the
  locked-down container, the untrusted uid, the JUnit cross-check, the comparison with gold and
  the suite's default canary sessions), each grade's proof seconds read from its trace's cost
  line. The gold records are read from ``--gold`` (a ``ratchet swe validate`` folder) or made
  before the clock.

Prints per round both walls, the ratio floor/ours, the mean seconds of one instance in each,
the resolved counts (both must be every instance) and the mean share of a resolved grade that is
proof; results also go to ``<out>/<time>/throughput.json``. Nothing is removed: the images are
the set's own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from swe_common import bench_config, proof_seconds  # noqa: E402
from swe_throughput import BENCH_LABEL, run_floor  # noqa: E402


def parsed_resolved(instance: dict, output: str) -> bool:
    """Whether swebench's log parser for ``instance`` reports every graded test passing."""
    from swebench.harness.log_parsers import PARSER_REGISTRY

    statuses = PARSER_REGISTRY[instance["log_parser"]](output, None)
    graded = json.loads(instance["FAIL_TO_PASS"]) + json.loads(instance["PASS_TO_PASS"])
    return all(statuses.get(test) in ("PASSED", "XFAIL") for test in graded)


def run_ours(graders, tasks_patches) -> dict:
    """The gold patches graded by ``graders`` (one thread each): wall, mean grade seconds,
    resolved count and the proof share of each resolved grade."""
    def one(item):
        index, (task, patch) = item
        started = time.monotonic()
        grade = graders[index % len(graders)].grade(task, patch)
        return grade, time.monotonic() - started

    started = time.monotonic()
    with ThreadPoolExecutor(len(graders)) as pool:
        results = list(pool.map(one, enumerate(tasks_patches)))
    wall = time.monotonic() - started
    shares = [p / s for g, s in results if g.passed and (p := proof_seconds(g.trace)) is not None]
    return {"wall_s": wall, "resolved": sum(g.passed for g, _ in results),
            "mean_instance_s": statistics.mean(s for _, s in results),
            "statuses": sorted({g.exit_status for g, _ in results}),
            "proof_share": statistics.mean(shares) if shares else None,
            "proven": len(shares)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1, help="floor then ours, this many times")
    parser.add_argument("--gold", type=Path, default=None,
                        help="gold records folder (default: made under --out before the clock)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N instances")
    parser.add_argument("--timeout", type=float, default=600.0, help="per-command limit, s")
    parser.add_argument("--out", type=Path, default=Path("results/bench/swe_realcode_throughput"))
    args = parser.parse_args()

    import docker

    from ratchet_ray.suites.swebench.dataset import normalize_all, to_task
    from ratchet_ray.suites.swebench.docker.images import InstanceImages
    from ratchet_ray.suites.swebench.grader import SwebenchGrader
    from ratchet_ray.suites.swebench.settings import GradingLimits, settings_from_config
    from ratchet_ray.suites.swebench.validate import repeat_patch

    out = args.out / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True)
    config = bench_config(args.dataset.resolve(), out, args.timeout, gold=args.gold)
    settings = settings_from_config(config)
    limits = GradingLimits.of_run(config, settings)
    instances = [json.loads(line) for line in args.dataset.read_text().splitlines() if line.strip()]
    if args.limit:
        instances = instances[:args.limit]
    client = docker.from_env(timeout=600)
    graders = [SwebenchGrader(settings, limits, out / f"grader-{w}") for w in range(args.workers)]
    started = time.monotonic()
    images = InstanceImages(client, settings)
    names = {i["instance_id"]: images.ensure(i, lambda _line: None) for i in instances}
    for instance in instances:
        graders[0].proof.gold_record(instance)
    prep = time.monotonic() - started
    tasks = {t.task_id: t for t in map(to_task, normalize_all(instances, "bench"))}
    pairs = [(tasks[i["instance_id"]], i["patch"]) for i in instances]
    print(f"dataset {args.dataset} ({len(instances)} instances), workers {args.workers}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; images and gold "
          f"records ready in {prep:.0f} s (untimed)", flush=True)
    print("| round | floor s | ours s | floor/ours | floor s per instance | ours s per instance "
          "| resolved floor / ours | proof share of a resolved grade |", flush=True)
    print("|---|---|---|---|---|---|---|---|", flush=True)
    rows = []
    tag = uuid.uuid4().hex[:8]
    try:
        for r in range(1, args.rounds + 1):
            floor = run_floor(client, names, instances, args.workers, args.timeout, settings,
                              tag, resolved=parsed_resolved)
            # Round r > 1 grades the patch behind validate's header line: the same tree, but
            # the grader's per-patch report cache cannot answer it.
            ours = run_ours(graders, [(t, repeat_patch(p, r - 1)) for t, p in pairs])
            rows.append({"round": r, "floor": floor, "ours": ours,
                         "ratio": floor["wall_s"] / ours["wall_s"],
                         "load_avg": os.getloadavg()[0]})
            share = f"{ours['proof_share']:.2f}" if ours["proof_share"] is not None else "n/a"
            print(f"| {r} | {floor['wall_s']:.1f} | {ours['wall_s']:.1f} | "
                  f"{floor['wall_s'] / ours['wall_s']:.2f} | {floor['mean_instance_s']:.1f} | "
                  f"{ours['mean_instance_s']:.1f} | {floor['resolved']}/{len(instances)} / "
                  f"{ours['resolved']}/{len(instances)} | {share} |", flush=True)
    finally:
        for container in client.containers.list(all=True, filters={"label": f"{BENCH_LABEL}={tag}"}):
            container.remove(force=True)
    ratio = statistics.mean(r["ratio"] for r in rows)
    print(f"floor/ours {ratio:.2f} (mean over {len(rows)} round(s)); load average now "
          f"{os.getloadavg()[0]:.1f}")
    (out / "throughput.json").write_text(json.dumps(
        {"dataset": str(args.dataset), "workers": args.workers, "prep_s": prep, "rows": rows},
        indent=1) + "\n")
    print(f"results: {out / 'throughput.json'}")


if __name__ == "__main__":
    main()
