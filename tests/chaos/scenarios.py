"""The chaos scenarios: each runs one run to completion through seeded faults.

``SCENARIOS[name](rng, work, drivers) -> run_dir``: ``work`` is a fresh folder, ``drivers``
collects every driver process started (the orphan check looks at them). Expected refusals
(a resume over a corrupt part, a second writer) are asserted here; the invariants are checked by
the caller against the reference run.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import time
from pathlib import Path
from typing import Callable

from click.testing import CliRunner

import chaos_lib as lib
from chaos_lib import REPORT, Driver
from chaos_llm_server import ChaosLLMServer
from local_cluster import LocalCluster, NodeSpec
from loop_helpers import scenario_config, scenario_models
from ratchet_ray.cli import main as ratchet
from ratchet_ray.run_config.files import dump_config


def _config(work: Path) -> str:
    path = work / "config.yaml"
    dump_config(scenario_config(work, lib.ROUNDS), path)
    return str(path)


def _start(drivers: list[Driver], work: Path, args: list[str], env: dict | None = None) -> Driver:
    driver = Driver(args, work / "logs", env)
    drivers.append(driver)
    return driver


def _finish(drivers: list[Driver], work: Path, run_dir: Path, driver: Driver,
            env: dict | None = None) -> None:
    """Wait for ``driver``; resume (as often as needed, at most 3 times) until the run ends.
    ``env``: the resumes' environment, as the first driver's (e.g. another cluster's
    ``RAY_ADDRESS``)."""
    for _ in range(4):
        if driver.wait() == 0:
            return
        if "RAY_ADDRESS" not in (env or {}):  # the bank lives in the test's own Ray
            lib.wait_bank_gone(run_dir)
        driver = _start(drivers, work, ["--resume", str(run_dir)], env)
    raise AssertionError(f"run {run_dir} did not finish after resumes: {driver.log_tail()}")


def driver_kill(rng: random.Random, work: Path, drivers: list[Driver]) -> Path:
    """SIGKILL the driver 1-2 times at random points of random phases; --resume each time."""
    driver = _start(drivers, work, [_config(work)])
    run_dir = driver.run_dir
    for round_, phase, delay in lib.kill_points(rng, rng.randint(1, 2)):
        if not lib.wait_for_phase(driver, round_, phase):
            break
        time.sleep(delay)
        if driver.proc.poll() is not None:
            break
        driver.kill()
        REPORT.fault("driver SIGKILL")
        lib.wait_bank_gone(run_dir)
        driver = _start(drivers, work, ["--resume", str(run_dir)])
    _finish(drivers, work, run_dir, driver)
    return run_dir


def actor_kill(rng: random.Random, work: Path, drivers: list[Driver]) -> Path:
    """SIGKILL 1-3 actor processes of random kinds mid-phase (the Ray equivalent of a crash)."""
    driver = _start(drivers, work, [_config(work)])
    for round_, phase, delay in lib.kill_points(rng, rng.randint(1, 3)):
        if not lib.wait_for_phase(driver, round_, phase):
            break
        time.sleep(delay)
        alive = lib.ray_actor_processes()
        if not alive or driver.proc.poll() is not None:
            continue
        victim = rng.choice(sorted(alive, key=lambda p: p.pid))
        kind = " ".join(victim.cmdline())[5:].split(".", 1)[0].split(" ", 1)[0]
        victim.kill()
        REPORT.fault(f"kill {kind}")
    _finish(drivers, work, driver.run_dir, driver)
    return driver.run_dir


def disk_full(rng: random.Random, work: Path, drivers: list[Driver]) -> Path:
    """The disk fills after N evidence parts (a part write fails half way); the run must stop
    (not go on with evidence missing); space is freed and --resume finishes it."""
    allowed = rng.randint(1, 4 * lib.ROUNDS)  # a run writes more parts than that
    driver = _start(drivers, work, [_config(work)], {"CHAOS_DISK_FULL_AFTER": str(allowed)})
    run_dir = driver.run_dir
    assert driver.wait() != 0, f"the disk never filled (after {allowed} parts)"
    REPORT.fault("disk full")
    assert "No space left on device" in (run_dir / "run.log").read_text(), driver.log_tail()
    assert not list(run_dir.glob("evidence/*/round=*/.*.tmp")), "a failed write left a temp file"
    lib.wait_bank_gone(run_dir)
    driver = _start(drivers, work, ["--resume", str(run_dir)])
    _finish(drivers, work, run_dir, driver)
    return run_dir


def corrupt_part(rng: random.Random, work: Path, drivers: list[Driver]) -> Path:
    """Kill the driver inside a round, truncate one of that round's capsule/verdict parts:
    the resume is refused naming both commands, `evidence verify` lists the part, `evidence
    repair` quarantines it, and --resume finishes the run."""
    driver = _start(drivers, work, [_config(work)])
    run_dir = driver.run_dir
    round_ = rng.randrange(lib.ROUNDS)
    lib.wait_for_phase(driver, round_, rng.choice(["train", "critic", "synth"]))
    time.sleep(rng.uniform(0.0, 0.5))
    driver.kill()
    lib.wait_bank_gone(run_dir)
    unfinished = [r for r in range(lib.ROUNDS)
                  if not (run_dir / f"round_{r:02d}" / "summary.json").exists()]
    parts = sorted(p for r in unfinished for kind in ("capsule", "verdict")
                   for p in (run_dir / "evidence" / kind / f"round={r}").glob("part-*.parquet"))
    if parts:
        victim = rng.choice(parts)
        data = victim.read_bytes()
        victim.write_bytes(data[: len(data) // 2])
        REPORT.fault("truncated part")
        refused = _start(drivers, work, ["--resume", str(run_dir)])
        assert refused.wait() != 0
        message = refused.log_tail()
        assert "evidence verify" in message and "evidence repair" in message, message
        verify = CliRunner().invoke(ratchet, ["--db", str(run_dir), "evidence", "verify"])
        assert verify.exit_code == 1 and victim.name in verify.output, verify.output
        repair = CliRunner().invoke(ratchet, ["--db", str(run_dir), "evidence", "repair"])
        assert repair.exit_code == 0 and "lost:" in repair.output, repair.output
        assert not victim.exists()
        assert list((run_dir / "quarantine").rglob(victim.name)), "the part was not kept"
    _finish(drivers, work, run_dir, _start(drivers, work, ["--resume", str(run_dir)]))
    return run_dir


def garbage_summary(rng: random.Random, work: Path, drivers: list[Driver]) -> Path:
    """Kill the driver as round r+1 starts, garble round r's summary.json: the resume names the
    file and the fix; following it (move the file away) the run finishes."""
    driver = _start(drivers, work, [_config(work)])
    run_dir = driver.run_dir
    round_ = rng.randrange(lib.ROUNDS - 1)
    lib.wait_for_phase(driver, round_ + 1, "eval")
    driver.kill()
    lib.wait_bank_gone(run_dir)
    summary = run_dir / f"round_{round_:02d}" / "summary.json"
    summary.write_bytes(b"\x00{garbage" + bytes(rng.randrange(256) for _ in range(32)))
    REPORT.fault("garbage summary.json")
    refused = _start(drivers, work, ["--resume", str(run_dir)])
    assert refused.wait() != 0
    message = refused.log_tail()
    assert str(summary) in message and "--resume" in message, message
    shutil.move(str(summary), str(work / "bad-summary.json"))  # the fix the message names
    _finish(drivers, work, run_dir, _start(drivers, work, ["--resume", str(run_dir)]))
    return run_dir


def second_writer(rng: random.Random, work: Path, drivers: list[Driver]) -> Path:
    """While a run writes, a second --resume and `skill load` / `curate` are refused naming the
    holder; read-only commands keep working; the first run finishes unharmed."""
    driver = _start(drivers, work, [_config(work)])
    run_dir = driver.run_dir
    lib.wait_for_phase(driver, rng.randrange(lib.ROUNDS), rng.choice(["eval", "train", "critic"]))
    holder = f"pid {driver.proc.pid}"
    # Paused, the first driver keeps its lock but cannot finish while the others try: without
    # the pause it may end between the check and the second --resume, which then rightly runs.
    paused = driver.proc.poll() is None
    if paused:
        os.kill(driver.proc.pid, signal.SIGSTOP)
    try:
        if paused and driver.proc.poll() is None:
            second = _start(drivers, work, ["--resume", str(run_dir)])
            assert second.wait() != 0
            assert holder in second.log_tail(), second.log_tail()
            load = CliRunner().invoke(ratchet, ["--db", str(run_dir), "skill", "load"])
            curate = CliRunner().invoke(ratchet, ["--db", str(run_dir), "curate"])
            assert load.exit_code != 0 and holder in load.output, load.output
            assert curate.exit_code != 0 and holder in curate.output, curate.output
            query = CliRunner().invoke(ratchet, ["--db", str(run_dir), "query",
                                                 "select count(*) from capsule"])
            assert query.exit_code == 0, query.output
            REPORT.fault("second writer", 3)
    finally:
        if paused and driver.proc.returncode is None:  # not reaped: the pid is still its own
            os.kill(driver.proc.pid, signal.SIGCONT)
    _finish(drivers, work, run_dir, driver)
    return run_dir


def llm_storm(rng: random.Random, work: Path, drivers: list[Driver]) -> Path:
    """The LLM server throttles (429 / 503) and garbles structured replies while the run goes;
    the real OpenAI-compatible client retries and repairs, so the run ends as without them."""
    responder = scenario_models().llm.responder
    with ChaosLLMServer(responder, seed=rng.randrange(2**31), storm_p=rng.uniform(0.2, 0.6),
                        garble_p=rng.uniform(0.1, 0.4)) as server:
        driver = _start(drivers, work, [_config(work)], {"CHAOS_LLM_URL": server.url})
        run_dir = driver.run_dir
        _finish(drivers, work, run_dir, driver)
    for kind in ("429", "503", "garbled"):
        REPORT.fault(f"LLM {kind}", server.stats[kind])
    assert server.stats["429"] + server.stats["503"] > 0
    return run_dir


def service_kill(rng: random.Random, work: Path, drivers: list[Driver]) -> Path:
    """The run's own services die mid-phase: its LLM comes from its config (an OpenAI-compatible
    server with a rate limit, so the run's rate limiter actor exists); at 1-3 seeded points the
    rate limiter actor is SIGKILLed or the LLM server goes down for 1-3 s and comes back on its
    port. Clients re-create the limiter and retry the server, so the run ends as without them."""
    scripted = scenario_models().llm.responder

    def responder(messages, schema):  # the scenario's replies, and OK to the preflight's ping
        return "OK" if messages[-1].content == "Reply with OK." else scripted(messages, schema)

    with ChaosLLMServer(responder, seed=rng.randrange(2**31), storm_p=0.0) as server:
        config = scenario_config(work, lib.ROUNDS)
        config.llm.backend = "openai"
        config.llm.base_url = server.url
        config.llm.model = "scripted"
        config.llm.requests_per_minute = 100_000  # never waits, but the limiter actor exists
        config.llm.openai.max_retries = 8
        path = work / "config.yaml"
        dump_config(config, path)
        env = {"CHAOS_LLM_FROM_CONFIG": "1", "OPENAI_API_KEY": "chaos"}
        driver = _start(drivers, work, [str(path)], env)
        for round_, phase, delay in lib.kill_points(rng, rng.randint(1, 3)):
            if not lib.wait_for_phase(driver, round_, phase):
                break
            time.sleep(delay)
            if driver.proc.poll() is not None:
                break
            limiters = lib.ray_actor_processes("RateLimiterProcess")
            if limiters and rng.random() < 0.5:
                limiters[0].kill()
                REPORT.fault("kill RateLimiterProcess")
            else:
                server.outage(rng.uniform(1.0, 3.0))
                REPORT.fault("LLM server down")
        _finish(drivers, work, driver.run_dir, driver, env)
    return driver.run_dir


def node_death(rng: random.Random, work: Path, drivers: list[Driver]) -> Path:
    """A worker node of a multi-node cluster on this machine (a head with no CPUs and two worker
    nodes, each its own `ray start`) dies at a random point of a random phase: its raylet, its
    workers and all they started are SIGKILLed. The run goes on on the other node (or resumes
    there when the driver stopped)."""
    cluster = LocalCluster([NodeSpec("head", 0), NodeSpec("w1", 3), NodeSpec("w2", 3)],
                           work / "cluster")
    cluster.start()
    try:
        env = cluster.driver_env()
        driver = _start(drivers, work, [_config(work)], env)
        (round_, phase, delay), = lib.kill_points(rng, 1)
        if lib.wait_for_phase(driver, round_, phase):
            time.sleep(delay)
            if driver.proc.poll() is None:
                cluster.kill(rng.choice(["w1", "w2"]))
                REPORT.fault("worker node death")
        _finish(drivers, work, driver.run_dir, driver, env)
        return driver.run_dir
    finally:
        for driver in drivers:
            driver.kill()
        cluster.stop()


SCENARIOS: dict[str, Callable[[random.Random, Path, list[Driver]], Path]] = {
    "driver_kill": driver_kill, "actor_kill": actor_kill, "disk_full": disk_full,
    "corrupt_part": corrupt_part, "garbage_summary": garbage_summary,
    "second_writer": second_writer, "llm_storm": llm_storm, "service_kill": service_kill,
    "node_death": node_death,
}
