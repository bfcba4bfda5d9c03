"""SWE-bench grading throughput through the Grader pool against the physical floor.

    python bench/swe_throughput.py [--instances 6] [--workers 1,2] [--nodes 1,2,3] [--round]
                                   [--timeout 30] [--repeat 5] [--load N] [--profile]
                                   [--set swebench.canary_parallel=2 ...]

Generates ``--instances`` SWE-bench-format instances on three local repositories
(``bench/swe_instances.py``: 40-120 tests per run, one repository with slow tests, the last
instance hanging until the per-command timeout), builds and prepares their images (untimed, and
reported), starts a loopback Ray with a local run's settings (``loop.runtime.
LOCAL_RAY_SYSTEM_CONFIG``: its workers at the driver's priority), and for every worker count W
measures, on the same images:

- ``floor``: each instance's gold patch applied and its eval script run by a bare container of
  its image (``docker run --rm --network none``, the same memory and CPU limits, ``timeout`` at
  ``--timeout``), W at a time from a thread pool: what the hardware allows;
- ``ours``: the gold patches graded by W ``GraderActor`` s through a ``ResilientPool`` (the
  loop's own path: image lock, locked-down container, harness guard, protections, JUnit
  cross-check, the differential's proof of every resolution with the suite's default canary
  sessions, logs published to the run's artifacts), actors started and warm (the warm-up
  each Grader starts as it starts: Docker, swebench's imports, reaping) before the clock starts;
  a round overlaps that warm-up with solving, and the time to the first graded instance from a
  cold pool, printed apart, includes it. The gold records the proof compares with are made once
  before any clock (``swe_common.make_gold_records``: once per instance and image, as a run's
  first resolution or ``ratchet swe validate`` makes them; their seconds are printed apart).
  ``--set KEY=VALUE`` overrides a setting of ours (e.g. ``swebench.canary_parallel=2``).

``--load N`` runs the whole measurement, floor and ours alike, beside N busy processes
(pure-Python spin loops at the bench's priority, ``swe_load.CpuLoad``: stopped at the end,
however it ends), so "under load" is a setting; every row records the load observed while its
floor and its ours ran (``swe_load.LoadSampler``: the 1-minute load average and the mean count
of runnable tasks), which on a shared machine includes other people's work. ``--profile`` times
each grade's phases inside the Grader actors (``swe_phases``) and prints the seconds per grade
in each: Ray dispatch, image readiness, container up and down, the pre-eval execs, the eval,
after the eval, the report's parse, the canary sessions, the artifact put.

- ``round`` (``--round``, ``bench/swe_scale.py``): every instance solved by the real patch agent
  loop on W Solvers, its model scripted to replay the gold patch as one shell action
  (``GoldReplayLLM``: a container per step, the untrusted user, the ``git diff``), each patch
  graded on W Graders as its solve ends: instances per hour and per core-hour;
- ``--nodes K``: the same grading (and round) on a local Ray cluster of K Docker nodes on this
  machine (``tests/cluster``'s ``LocalCluster``, one Grader and with a round one Solver per node,
  a driver process of its own), against the floor at concurrency K.

It prints, per W: both walls, instances per hour, the ratio ours/floor (target >= 0.8), the
resolved counts (both must agree), the mean time of one instance in each, and the time to the
first graded instance from a cold pool (actors not yet started, images present). Once: the
per-container cost of create + start and of remove (``instance_container``) against a bare
``docker run --rm IMAGE true``. Results also go to ``<out>/swe_throughput.json``. The
containers it starts carry the label ``ratchet-ray.bench`` and the images it builds are
removed at the end (``--keep-images`` keeps them).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
os.environ.pop("RAY_ADDRESS", None)

from ratchet_ray.suites.swebench.settings import settings_from_config  # noqa: E402
from swe_common import bench_config, make_gold_records, run_ours  # noqa: E402
from swe_instances import make_instances  # noqa: E402
from swe_load import CpuLoad, LoadSampler, describe  # noqa: E402
from swe_scale import run_on_nodes, run_round  # noqa: E402

BENCH_LABEL = "ratchet-ray.bench"


def _floor_script(instance: dict, timeout_s: float) -> str:
    """Apply the gold patch and run the instance's eval script, nothing else."""
    return (f"cd /testbed && git apply - <<'EOF_GOLD'\n{instance['patch']}EOF_GOLD\n"
            f"cat > /tmp/eval.sh <<'EOF_EVAL'\n{instance['eval_script']}EOF_EVAL\n"
            f"timeout -s KILL {timeout_s:g} bash /tmp/eval.sh")


def _floor_resolved(instance: dict, output: str) -> bool:
    f2p = json.loads(instance["FAIL_TO_PASS"])
    return all(f"PASSED {t}" in output for t in f2p) and " FAILED " not in output


def run_floor(client, images: dict[str, str], instances: list[dict], workers: int,
              timeout_s: float, settings, tag: str, resolved=_floor_resolved) -> dict:
    """The gold patches run by bare containers, W at a time; ``resolved(instance, output)``
    reads a container's output (``bench/swe_realcode_throughput.py`` passes swebench's parser)."""
    def one(instance: dict) -> tuple[bool, float]:
        started = time.monotonic()
        container = client.containers.create(
            images[instance["instance_id"]], ["bash", "-c", _floor_script(instance, timeout_s)],
            network_mode="none", mem_limit=f"{settings.memory_mb}m",
            nano_cpus=int(settings.cpus * 1e9), labels={BENCH_LABEL: tag})
        try:
            container.start()
            container.wait()
            output = container.logs().decode(errors="replace")
        finally:
            container.remove(force=True)
        return resolved(instance, output), time.monotonic() - started

    started = time.monotonic()
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(one, instances))
    wall = time.monotonic() - started
    return {"wall_s": wall, "resolved": sum(r for r, _ in results),
            "mean_instance_s": statistics.mean(s for _, s in results)}


def container_overhead(client, image: str, settings, repeat: int, tag: str) -> dict:
    from ratchet_ray.suites.swebench.docker.container import instance_container

    ours_up, ours_down, bare = [], [], []
    for _ in range(repeat):
        started = time.monotonic()
        with instance_container(client, image, "bench__overhead", settings,
                                run_label=f"bench-{tag}"):
            up = time.monotonic()
        ours_up.append(up - started)
        ours_down.append(time.monotonic() - up)
        started = time.monotonic()
        client.containers.run(image, "true", remove=True, network_mode="none",
                              labels={BENCH_LABEL: tag})
        bare.append(time.monotonic() - started)
    return {"ours_create_start_s": statistics.median(ours_up),
            "ours_remove_s": statistics.median(ours_down),
            "bare_run_rm_s": statistics.median(bare)}


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=6)
    parser.add_argument("--workers", default="1,2",
                        help="comma-separated worker counts; empty: none")
    parser.add_argument("--nodes", default="",
                        help="comma-separated local Ray node counts (one Grader per node, and "
                             "one Solver with --round); empty: none")
    parser.add_argument("--round", action="store_true",
                        help="also a round: the gold patches replayed through the real agent "
                             "loop, then graded (at every worker and node count)")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="per-command timeout (the hanging instance runs into it)")
    parser.add_argument("--repeat", type=int, default=5, help="container overhead samples")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--keep-images", action="store_true")
    parser.add_argument("--no-hang", action="store_true",
                        help="no hanging instance (every instance's gold patch resolves, so "
                             "every grade of ours pays its canary sessions)")
    parser.add_argument("--load", type=int, default=0,
                        help="busy processes (pure-Python spin loops) running beside the whole "
                             "measurement, floor and ours alike; 0: the machine as it is")
    parser.add_argument("--profile", action="store_true",
                        help="time each grade's phases inside the Grader actors (swe_phases)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override for ours (repeatable), e.g. "
                             "swebench.canary_parallel=2")
    return parser.parse_args()


def _sampled(measure_one):
    """``measure_one()``'s result with the load observed while it ran (``swe_load``)."""
    with LoadSampler() as load:
        got = measure_one()
    return {**got, "load": load.summary()}


def measure(args, client, config, names: dict, instances: list[dict], out: Path, tag: str,
            results: dict) -> None:
    """Every scale: the floor, our grading, and with ``--round`` a round; printed as it goes."""
    settings = settings_from_config(config)
    n = len(instances)
    for workers in _counts(args.workers):
        floor = _sampled(lambda: run_floor(client, names, instances, workers, args.timeout,
                                           settings, tag))
        ours = _sampled(lambda: run_ours(config, instances, workers, out / f"ours_w{workers}",
                                         profile=args.profile))
        row = {"workers": workers, "floor": floor, "ours": ours,
               "ratio": floor["wall_s"] / ours["wall_s"]}
        print(_line(n, workers, floor, ours), flush=True)
        print(f"  load: floor {describe(floor['load'])}; ours {describe(ours['load'])}",
              flush=True)
        if ours.get("phases"):
            print("  ours per grade: " + ", ".join(f"{k} {v:.2f}s"
                                                    for k, v in ours["phases"].items()),
                  flush=True)
        if args.round:
            row["round"] = run_round(config, instances, workers, out / f"round_w{workers}")
            print(_round_line(n, f"W={workers}", row["round"]), flush=True)
        results["scales"].append(row)
    dataset = out / "instances.jsonl"
    for nodes in _counts(args.nodes):
        floor = run_floor(client, names, instances, nodes, args.timeout, settings, tag)
        ours = run_on_nodes(dataset, out, nodes, False, args.timeout)
        row = {"nodes": nodes, "floor": floor, "ours": ours,
               "ratio": floor["wall_s"] / ours["wall_s"]}
        print(_line(n, nodes, floor, ours).replace(f"W={nodes}", f"{nodes} node(s), W={nodes}"),
              flush=True)
        if args.round:
            row["round"] = run_on_nodes(dataset, out, nodes, True, args.timeout)
            print(_round_line(n, f"{nodes} node(s)", row["round"]), flush=True)
        results["nodes"].append(row)


def main() -> None:
    args = _arguments()
    # A SIGTERM (a timeout, a kill) ends the run through its ``finally``s: the spinners, the
    # containers and the images it made are removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    import docker
    import ray

    from ratchet_ray.loop.runtime import LOCAL_RAY_SYSTEM_CONFIG  # a local run's Ray
    from ratchet_ray.suites.swebench.docker.images import InstanceImages

    tag = uuid.uuid4().hex[:8]
    out = args.out or Path(tempfile.mkdtemp(prefix="swe-throughput-"))
    out.mkdir(parents=True, exist_ok=True)
    instances = make_instances(args.instances, hang=not args.no_hang)
    dataset = out / "instances.jsonl"
    dataset.write_text("".join(json.dumps(i) + "\n" for i in instances))
    config = bench_config(dataset, out, args.timeout, args.set)
    settings = settings_from_config(config)
    client = docker.from_env(timeout=600)
    prepared = InstanceImages(client, settings)
    # An image of the same name left by an earlier run that was killed holds other commits.
    _clean(client, tag, {prepared.name(i) for i in instances}, keep_images=False)
    started = time.monotonic()
    names = {i["instance_id"]: prepared.ensure(i, lambda _line: None) for i in instances}
    import ratchet_ray

    results: dict = {"instances": len(instances), "timeout_s": args.timeout,
                     "image_prep_s": round(time.monotonic() - started, 1), "cpus": os.cpu_count(),
                     "load_avg": os.getloadavg()[0], "load_processes": args.load,
                     "code": str(Path(ratchet_ray.__file__).parents[1]), "overrides": args.set,
                     "scales": [], "nodes": []}
    print(f"code measured: {results['code']}; images prepared in {results['image_prep_s']:.0f}s "
          f"(untimed)", flush=True)
    # This machine as one node, with a docker unit for each Grader and, with --round, Solver,
    # and logical CPUs enough for them all (the floor runs as many containers on these cores).
    units = max(_counts(args.workers), default=1) * (2 if args.round else 1)
    try:  # a Ray that cannot start still leaves no image behind
        results["gold_records_s"] = round(make_gold_records(config, instances, out), 1)
        print(f"gold records made in {results['gold_records_s']:.0f}s (untimed, once per "
              f"instance and image)", flush=True)
        ray.init(_node_ip_address="127.0.0.1", include_dashboard=False, configure_logging=False,
                 log_to_driver=False, num_cpus=max(os.cpu_count() or 1, units),
                 resources={"docker": units}, _system_config=LOCAL_RAY_SYSTEM_CONFIG)
        results["overhead"] = container_overhead(client, names[instances[0]["instance_id"]],
                                                 settings, args.repeat, tag)
        with CpuLoad(args.load):  # both sides alike
            measure(args, client, config, names, instances, out, tag, results)
    finally:
        ray.shutdown()
        _clean(client, tag, set(names.values()), args.keep_images)
    over = results["overhead"]
    print(f"container: ours create+start {over['ours_create_start_s']:.2f}s, remove "
          f"{over['ours_remove_s']:.2f}s; bare run --rm true {over['bare_run_rm_s']:.2f}s; "
          f"images prepared in {results['image_prep_s']:.0f}s (untimed)")
    (out / "swe_throughput.json").write_text(json.dumps(results, indent=1) + "\n")
    print(f"results: {out / 'swe_throughput.json'}")


def _counts(text: str) -> list[int]:
    """``"1,2,4"`` -> [1, 2, 4]; ``""`` -> [] (that measurement is skipped)."""
    return [int(k) for k in text.split(",") if k.strip()]


def _clean(client, tag: str, images: set[str], keep_images: bool) -> None:
    """Remove this run's containers and, unless kept, the images it built."""
    import docker

    for container in client.containers.list(all=True, filters={"label": f"{BENCH_LABEL}={tag}"}):
        container.remove(force=True)
    if keep_images:
        return
    for name in images:
        try:
            client.images.remove(name, force=True)
        except docker.errors.ImageNotFound:
            pass


def _round_line(n: int, scale: str, got: dict) -> str:
    cores = os.cpu_count() or 1
    per_hour = 3600 * n / got["wall_s"]
    return (f"  round {scale}: {got['wall_s']:.1f}s for {n} solves + grades ({per_hour:.0f}/h, "
            f"{per_hour / cores:.0f} per core-hour on {cores} cores), {got['resolved']}/{n} "
            f"resolved; solve {got['mean_solve_s'] or 0:.1f}s, grade "
            f"{got['mean_grade_s'] or 0:.1f}s each")


def _line(n: int, workers: int, floor: dict, ours: dict) -> str:
    per_hour = lambda wall: 3600 * n / wall  # noqa: E731
    return (f"W={workers}: floor {floor['wall_s']:.1f}s ({per_hour(floor['wall_s']):.0f}/h, "
            f"{floor['resolved']}/{n} resolved, {floor['mean_instance_s']:.1f}s each) | ours "
            f"{ours['wall_s']:.1f}s ({per_hour(ours['wall_s']):.0f}/h, {ours['resolved']}/{n} "
            f"resolved, {ours['mean_instance_s']:.1f}s each, of which the eval script "
            f"{ours['mean_eval_s'] or 0:.1f}s) | ratio ours/floor "
            f"{floor['wall_s'] / ours['wall_s']:.2f} | first graded (cold pool) "
            f"{ours['first_graded_s']:.1f}s, actors up in {ours['start_s']:.1f}s and warm "
            f"{ours.get('warm_s', 0):.1f}s later; first container "
            f"{ours.get('first_container_s') or 0:.1f}s after the clock's start")


if __name__ == "__main__":
    main()
