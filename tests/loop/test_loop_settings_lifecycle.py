"""Run-scoped lifecycles: model servers and rate limiters are named per run, shared within it,
invisible to another run in the same Ray, and released when the run ends, even by an error or
Ctrl-C; the one runtime context (``loop.session.RunRuntime``) that releases them."""

from __future__ import annotations

import pytest
import ray

from actors.llm_server import NodeLLMClient, release_llm_actors
from actors.rate_limiter import NAMESPACE, cluster_limiter, scope_token
from loop_helpers import scenario_config, scenario_models, server_pid
from ratchet_ray.llm.local import LocalConfig
from ratchet_ray.loop import session
from ratchet_ray.loop.driver import run_loop


def named(token: str) -> list[str]:
    return sorted(e["name"] for e in ray.util.list_named_actors(all_namespaces=True)
                  if e["namespace"] == NAMESPACE and f"-{scope_token(token)}-" in e["name"])


def test_two_runs_in_one_ray_never_share_or_release_each_others_servers(ray_local):
    config = LocalConfig()
    try:
        a1, a2 = NodeLLMClient(config, scope="run-a"), NodeLLMClient(config, scope="run-a")
        b = NodeLLMClient(config, scope="run-b")
        pid_a = server_pid(a1)
        assert server_pid(a2) == pid_a  # one model copy per node within a run
        pid_b = server_pid(b)
        assert pid_b != pid_a
        cluster_limiter("k", 5, 0, scope="run-a").limits()
        before = named("run-a")
        assert len(before) == 2 and len(named("run-b")) == 1

        assert sorted(release_llm_actors("run-a")) == before
        assert named("run-a") == []
        assert server_pid(b) == pid_b  # run b's server was not touched
    finally:
        release_llm_actors("run-a")
        release_llm_actors("run-b")


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, RuntimeError])
def test_a_run_that_raises_releases_its_actors(ray_local, tmp_path, monkeypatch, interrupt):
    other = NodeLLMClient(LocalConfig(), scope="another-run")
    other_pid = server_pid(other)
    seen: dict[str, list[str]] = {}

    def preflight_then_interrupt(config, models, scope=None, log_dir=None):
        # What a run's actors create on first use: its node's model server and its limiter.
        run_id = next((tmp_path / "results" / "mbpp").iterdir()).name
        server_pid(NodeLLMClient(LocalConfig(), scope=run_id))
        cluster_limiter("k", 5, 0, scope=run_id).limits()
        seen[run_id] = named(run_id)
        raise interrupt("stopped by the test")

    monkeypatch.setattr(session, "preflight", preflight_then_interrupt)
    try:
        with pytest.raises(interrupt):
            run_loop(scenario_config(tmp_path, 1), models=scenario_models(), show_progress=False)
        (run_id, before), = seen.items()
        assert len(before) == 2
        assert named(run_id) == []  # released on the way out
        assert server_pid(other) == other_pid  # another run's server lives on
    finally:
        release_llm_actors("another-run")


def test_a_sigterm_whose_interrupt_lost_its_words_is_still_recorded_as_sigterm(
        ray_local, tmp_path, monkeypatch):
    """On the way up, the interrupt SIGTERM raises can lose its words: DuckDB answers it with its
    own exception, and a library may re-raise a bare ``KeyboardInterrupt``. CI once recorded a
    SIGTERM as "Ctrl-C / SIGINT" that way; the record asks the session which signal came."""
    import json
    import os
    import signal
    import time

    def preflight_then_sigterm(config, models, scope=None, log_dir=None):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)  # the handler raises before this ends
        except KeyboardInterrupt:
            raise KeyboardInterrupt() from None  # the words lost, as a library may

    monkeypatch.setattr(session, "preflight", preflight_then_sigterm)
    previous = signal.signal(signal.SIGTERM, session._interrupt)  # as ray_session installs it
    try:
        with pytest.raises(KeyboardInterrupt):
            run_loop(scenario_config(tmp_path, 1), models=scenario_models(), show_progress=False)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert session.interrupting_signal() == "SIGTERM"
    (run_dir,) = (tmp_path / "results" / "mbpp").iterdir()
    stopped = json.loads((run_dir / "stopped.json").read_text())
    assert stopped["cause"] == "interrupted (SIGTERM) in round 0 of 1", stopped


def lease_alive(scope: str) -> bool:
    from actors.run_lease import NAMESPACE as LEASES, lease_name

    return any(e["namespace"] == LEASES and e["name"] == lease_name(scope)
               for e in ray.util.list_named_actors(all_namespaces=True))


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, RuntimeError])
def test_run_runtime_releases_everything_it_started_and_leaves_a_ray_it_found(
        ray_local, tmp_path, interrupt):
    from loop_helpers import Worker
    from ratchet_ray.settings.schema import LoopConfig
    from ratchet_ray.loop.session import RunRuntime

    remote_worker = ray.remote(num_cpus=0)(Worker)
    scope = "session-test"
    with pytest.raises(interrupt):
        with RunRuntime(LoopConfig(), scope, scenario_models()) as rt:
            assert lease_alive(scope)
            pool = rt.pool("solver", lambda: remote_worker.remote(), 2)
            pool.heal()
            actors = pool.actors
            server_pid(NodeLLMClient(LocalConfig(), scope=scope))  # a scope's detached server
            assert len(named(scope)) == 1
            breaker = rt.breaker("eval", 0, 4)
            assert breaker.max_rate == LoopConfig().infra.max_failure_rate
            raise interrupt("stopped by the test")
    assert ray.is_initialized()  # the Ray it found is left up
    assert named(scope) == [] and not lease_alive(scope)
    for actor in actors:
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(actor.__ray_ready__.remote(), timeout=60)


def test_a_failed_preflight_leaves_no_lease_behind(ray_local, monkeypatch):
    from ratchet_ray.settings.schema import LoopConfig
    from ratchet_ray.loop.breaker import PreflightFailed
    from ratchet_ray.loop.session import RunRuntime

    def failing(config, models, scope=None, log_dir=None):
        assert lease_alive(scope)  # taken before the checks: servers they start are covered
        raise PreflightFailed("the model server does not answer")

    monkeypatch.setattr(session, "preflight", failing)
    with pytest.raises(PreflightFailed, match="does not answer"):
        with RunRuntime(LoopConfig(), "preflight-test", scenario_models()):
            raise AssertionError("the block must not run")
    assert not lease_alive("preflight-test") and ray.is_initialized()


def test_run_runtime_outside_a_with_block_says_how_to_use_it():
    from ratchet_ray.settings.schema import LoopConfig
    from ratchet_ray.loop.session import RunRuntime

    with pytest.raises(RuntimeError, match="with RunRuntime"):
        RunRuntime(LoopConfig(), "unused").pool("solver", lambda: None, 1)
