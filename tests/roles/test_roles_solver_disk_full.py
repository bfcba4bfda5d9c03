"""A full disk a Solver meets (a trajectory, a cache, a local model's scratch file) is no attempt
of the task: ``solve`` raises it, and the loop and the baseline stop on ``fsutil.no_room``'s words
instead of recording it as an infrastructure failure of every task (then tripping the breaker
with 'read run.log'). A genuine infrastructure failure stays an attempt."""

from __future__ import annotations

import errno

import pytest

from fakes import HashEmbedder, ScriptedLLM
from ratchet_ray.llm.base import LLMError
from ratchet_ray.roles.solver import solve


def full_disk_llm() -> ScriptedLLM:
    """A client whose every call meets a full disk (made here: a Ray worker cannot import this
    module, so the function travels by value)."""
    def full(messages, json_schema=None):
        raise OSError(errno.ENOSPC, "No space left on device", "/results/run/logs/x.json")

    return ScriptedLLM(full)


def test_solve_raises_a_full_disk_and_records_any_other_failure(prime_task):
    """A full disk was returned as an attempt (exit status OSError), like a server that is down."""
    with pytest.raises(OSError) as caught:
        solve(full_disk_llm(), prime_task, None, output_kind="code", max_tokens=64,
              temperature=0.0)
    assert caught.value.errno == errno.ENOSPC

    def down(messages, json_schema=None):
        raise LLMError("http://127.0.0.1:9/v1: Connection error.")

    result = solve(ScriptedLLM(down), prime_task, None, output_kind="code", max_tokens=64,
                   temperature=0.0)
    assert result.exit_status == "LLMError" and "Connection error" in result.error


def test_a_pool_job_that_met_a_full_disk_stops_the_split_instead_of_an_attempt():
    """``stop_on_full_disk``: the Solver's error as the pool gives it back (Ray's task error, or
    the batched call's own exception) raises the OSError the driver stops on; any other error
    is left to be recorded."""
    from ray.exceptions import RayTaskError

    from ratchet_ray.loop.execute import stop_on_full_disk

    full = OSError(errno.ENOSPC, "No space left on device", "/results/run/logs/x.json")
    wrapped = RayTaskError("run", "traceback", full)
    for error in (full, wrapped):
        with pytest.raises(OSError) as caught:
            stop_on_full_disk(error)
        assert caught.value.errno == errno.ENOSPC and caught.value.filename == full.filename
    stop_on_full_disk(RuntimeError("actor died"))
    stop_on_full_disk(None)


def test_a_loop_whose_solver_meets_a_full_disk_stops_with_no_room_not_the_breaker(ray_local,
                                                                                 tmp_path):
    """The run went on with every task an infrastructure failure until the breaker tripped,
    whose fix read 'read run.log for the full traces'."""
    from loop_helpers import scenario_config
    from ratchet_ray.evidence.store import EvidenceStore
    from ratchet_ray.loop.driver import run_loop
    from ratchet_ray.loop.runtime import Models
    from ratchet_ray.loop.stops import DiskFull

    config = scenario_config(tmp_path, 1)
    with pytest.raises(DiskFull) as caught:
        run_loop(config, models=Models(llm=full_disk_llm(), embedder=HashEmbedder()),
                 show_progress=False)
    text = str(caught.value)
    assert text.startswith("no room to write in /results/run/logs (No space left on device)"), text
    assert "free space on that disk" in text and "--resume" in text
    assert "infrastructure" not in text and "run.log" not in text
    (run_dir,) = (tmp_path / "results").glob("mbpp/*")
    assert EvidenceStore(run_dir).row_count("capsule") == 0  # no attempt was recorded


def test_the_baseline_stops_on_a_full_disk_and_writes_no_row(ray_local, tmp_path):
    """It retried each probe 3 times, then stopped on the breaker as infrastructure failures."""
    from ratchet_ray.cli.baseline import done_probes, run_baseline
    from ratchet_ray.loop.runtime import Models
    from ratchet_ray.run_config.files import load_config

    config = load_config([], ["workers.solvers=1", "workers.graders=1"])
    out = tmp_path / "baseline.jsonl"
    with pytest.raises(OSError) as caught:
        run_baseline(config, out, probes=2, limit=2,
                     models=Models(llm=full_disk_llm(), embedder=HashEmbedder()))
    assert caught.value.errno == errno.ENOSPC
    assert done_probes(out) == set()
