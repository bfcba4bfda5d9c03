"""What both SWE-bench benches measure with (``bench/swe_throughput.py`` on this machine,
``bench/swe_scale.py``'s driver on a local cluster), so neither imports the other.

- ``bench_config(dataset, out, timeout_s)``: the config every measurement grades (and solves)
  with: the ``dataset`` instances, local images kept, locks under ``out``, the per-command
  timeout ``timeout_s``, the gold records under ``out/gold``; every verdict setting at the
  suite's default (the differential's canary sessions, ``swebench.canary_sessions`` and
  ``canary_parallel``), so "ours" is what a user's grade costs.
- ``make_gold_records(config, instances, out)``: the gold record of every instance whose gold
  patch can resolve (all but the hanging one), made once before any clock, as a run's first
  resolution (or ``ratchet swe validate``) makes it once per instance and image; its seconds.
- ``proof_seconds(trace)``: a grade's canary sessions' seconds beyond its real session, read
  from the cost line its trace ends with (None when no canary session ran).
- ``run_ours(config, instances, workers, out, profile=False)``: the gold patches graded by W
  ``GraderActor`` s through the loop's ``ResilientPool`` on the Ray this process is connected
  to, actors started and warm before the clock starts. Returns the wall, start-up and warm-up
  times, the time to the first graded instance and to the first container, the mean
  eval-script and instance times, the resolved count and the statuses; with ``profile`` also
  ``phases``, the seconds per grade in each of its phases (``swe_phases``).

Imports ``ratchet_ray`` and ``actors`` lazily: the scripts that import it put the repository
root on ``sys.path`` first.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path
from typing import Any


def bench_config(dataset: Path, out: Path, timeout_s: float,
                 overrides: list[str] = (), gold: Path | None = None) -> Any:
    """The config every measurement grades (and solves) with: local images, kept, gold records
    in ``gold`` (default ``out/gold``); then ``overrides`` (``KEY=VALUE``)."""
    from ratchet_ray.run_config.files import load_config

    return load_config([], [
        "suite=swebench", f"dataset_path={json.dumps(str(dataset))}",
        "swebench.namespace=null", "swebench.cache_level=instance", "swebench.memory_mb=1024",
        f"swebench.lock_dir={json.dumps(str(out / 'locks'))}",
        f"swebench.gold_records={json.dumps(str((gold or out / 'gold').resolve()))}",
        f"swebench.grade_command_timeout_s={timeout_s:g}", "swebench.instance_deadline_s=600",
        *overrides])


_COST = re.compile(r"cost: real session ([\d.]+)s; \d+ canary session\(s\) ([\d.]+)s wall"
                   r"( with the real one)?")


def proof_seconds(trace: str) -> float | None:
    """The canary sessions' seconds beyond the real session (their wall time, less the real
    session's when they ran beside it); None without a cost line."""
    found = _COST.search(trace or "")
    if not found:
        return None
    wall = float(found.group(2))
    return wall - float(found.group(1)) if found.group(3) else wall


def make_gold_records(config, instances: list[dict], out: Path) -> float:
    """Every resolvable instance's gold record, made now in this process (module contract)."""
    from ratchet_ray.suites.swebench.grader import SwebenchGrader
    from ratchet_ray.suites.swebench.settings import GradingLimits, settings_from_config

    settings = settings_from_config(config)
    grader = SwebenchGrader(settings, GradingLimits.of_run(config, settings), out / "gold-prep")
    started = time.monotonic()
    for instance in instances:
        if "test_hangs" not in instance["FAIL_TO_PASS"]:  # its gold patch never resolves
            grader.proof.gold_record(instance)
    return time.monotonic() - started


def run_ours(config, instances: list[dict], workers: int, out: Path,
             profile: bool = False) -> dict:
    """The gold patches graded on W Graders (module contract)."""
    import ray
    import swe_phases

    from actors.artifacts import run_artifacts_access
    from actors.draining import drain
    from actors.grader import GraderWorker
    from ratchet_ray.loop.runtime import make_grader_factory, make_pool
    from ratchet_ray.suites.swebench.dataset import normalize_all, to_task

    tasks = [to_task(i) for i in normalize_all(instances, "bench")]
    gold = {i["instance_id"]: i["patch"] for i in instances}
    artifacts, service = run_artifacts_access(out)
    created = time.monotonic()
    pool = make_pool("grader", config, make_grader_factory(config, out, artifacts), workers)
    try:
        pool.heal()  # every actor up: the clock below measures grading, not start-up
        up = time.monotonic()
        # Each Grader started its warm-up (Docker, swebench, reaping) as it started; a round
        # overlaps it with solving, so it is start-up too (counted in first_graded_s).
        ray.get([actor.warm.remote([]) for actor in pool.actors])
        if profile:  # timers in the actors' processes, before the clock (swe_phases)
            ray.cloudpickle.register_pickle_by_value(swe_phases)
            ray.get([actor.__ray_call__.remote(swe_phases.install) for actor in pool.actors])
        ready, ready_clock = time.monotonic(), time.time()
        grades: list = []
        for task in tasks:
            pool.submit(GraderWorker.grade, task, gold[task.task_id])
        drain([pool], lambda _pool, result: grades.append((time.monotonic(), result)))
        done = time.monotonic()
        phases = (swe_phases.breakdown(ray.get([actor.__ray_call__.remote(swe_phases.spans)
                                                for actor in pool.actors]), ready_clock)
                  if profile else None)
    finally:
        pool.shutdown()
        ray.kill(service)
    values = [r.value for _, r in grades if r.ok]
    evals = [float(m) for log in out.glob("logs/swebench/*/*/run_instance.log")
             for m in re.findall(r"eval script exit -?\d+ after ([\d.]+)s", log.read_text())]
    return {"wall_s": done - ready, "start_s": up - created, "warm_s": ready - up,
            "first_container_s": _first_container_s(out, ready_clock),
            "mean_eval_s": statistics.mean(evals) if evals else None,
            "first_graded_s": min(t for t, _ in grades) - created,
            "resolved": sum(v.passed for v in values),
            "statuses": sorted(v.exit_status for v in values),
            "mean_instance_s": statistics.mean(v.duration_s for v in values),
            **({"phases": phases} if profile else {})}


def _first_container_s(out: Path, clock: float) -> float | None:
    """Seconds from the clock's start (``clock``, epoch) to the first grade's container start,
    from the instances' logs (``HH:MM:SS.mmm``, local time, same machine)."""
    day = time.localtime(clock)
    since_midnight = clock - time.mktime(day[:3] + (0, 0, 0) + day[6:])
    starts = []
    for log in out.glob("logs/swebench/*/*/run_instance.log"):
        for h, m, sec in re.findall(r"^(\d\d):(\d\d):(\d\d\.\d+) container \S+ started",
                                    log.read_text(), re.M):
            starts.append((int(h) * 3600 + int(m) * 60 + float(sec) - since_midnight) % 86400)
    return min(starts) if starts else None
