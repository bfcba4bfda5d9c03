"""Rate limiter (in-process and the cluster-wide Ray actor) and the backend registry."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ratchet_ray.settings.schema import LLMSettings
from ratchet_ray.llm.base import LLMError, Message
from ratchet_ray.llm.ratelimit import LocalLimiter, RateLimiter, estimate_tokens, make_limiter
from ratchet_ray.llm.registry import BACKENDS, make_embedder, make_llm


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_requests_per_minute_budget_then_wait():
    clock = Clock()
    limiter = RateLimiter(requests_per_minute=3, clock=clock)
    assert [limiter.reserve(0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.reserve(0) == pytest.approx(20.0)  # 60 s / 3 requests per slot
    clock.now += 40.0  # two slots refilled, one already booked by the waiting request
    assert limiter.reserve(0) == pytest.approx(0.0)


def test_tokens_per_minute_budget_and_settle_refunds():
    clock = Clock()
    limiter = RateLimiter(tokens_per_minute=1000, clock=clock)
    assert limiter.reserve(800) == 0.0
    assert limiter.reserve(400) == pytest.approx(12.0)  # 200 short at 1000/60 tokens per second
    limiter.settle(-400)  # the first call used 400 tokens, not 800
    assert limiter.reserve(0) == 0.0
    assert limiter.reserve(10**9) == pytest.approx(48.0)  # booked as 1000 (one minute), 200 were left


def test_unlimited_limiter_never_waits_and_negative_limits_are_rejected():
    slept: list[float] = []
    limiter = LocalLimiter(0, 0, sleep=slept.append)
    assert all(limiter.acquire(10**6) == 0.0 for _ in range(100)) and slept == []
    with pytest.raises(ValueError, match=">= 0"):
        RateLimiter(requests_per_minute=-1)


def test_local_limiter_sleeps_for_the_booked_wait():
    slept: list[float] = []
    limiter = LocalLimiter(requests_per_minute=60, sleep=slept.append)
    for _ in range(61):
        limiter.acquire(1)
    assert len(slept) == 1 and 0.9 < slept[0] <= 1.0


def test_estimate_counts_prompt_and_reply_budget():
    assert estimate_tokens([Message("user", "x" * 400)], max_tokens=50) == 150


def test_cluster_wide_limiter_is_shared_by_all_workers(ray_local):
    from actors.rate_limiter import SharedLimiter, cluster_limiter

    assert isinstance(cluster_limiter("shared-test", 3, 0), SharedLimiter)
    assert isinstance(cluster_limiter("shared-test", 0, 0), LocalLimiter)  # no actor for no limit

    @ray_local.remote
    def book(times: int) -> list[float]:
        limiter = cluster_limiter("shared-test", 3, 0)
        return [ray_local.get(limiter._actor().reserve.remote(1)) for _ in range(times)]

    waits = sorted(w for ws in ray_local.get([book.remote(2), book.remote(2)]) for w in ws)
    assert waits[:3] == [0.0, 0.0, 0.0] and waits[3] > 15.0  # 4 bookings on one 3/min budget
    assert cluster_limiter("shared-test", 3, 0).limits() == (3, 0)
    from actors.llm_server import release_llm_actors

    assert "ratchet-ratelimit-shared-shared-test-3-0" in release_llm_actors("shared")
    assert cluster_limiter("shared-test", 3, 0).acquire(1) == 0.0  # a fresh budget after release


def test_a_client_whose_actor_was_released_calls_a_new_one_of_the_same_name(ray_local):
    from actors.named_client import kill_named
    from actors.rate_limiter import SharedLimiter, limiter_name
    from waiting import actor_gone, wait_for

    limiter = SharedLimiter("reconnect-test", 3, 0)
    try:
        assert limiter.acquire(1) == 0.0
        first = limiter._actor()
        assert kill_named(limiter_name("reconnect-test", 3, 0))
        wait_for(lambda: actor_gone(first), 30, "the released limiter to die")  # ray.kill is async
        assert limiter.limits() == (3, 0)  # the same client: a new actor took the name
        assert limiter._actor() is not first and limiter.acquire(1) == 0.0  # a fresh budget
    finally:
        kill_named(limiter_name("reconnect-test", 3, 0))


def test_running_ray_changes_nothing_the_services_decide(ray_local):
    """``make_llm`` never peeks at the process: inside Ray the default is still in-process, and
    the cluster's limiter is used only when handed in (and travels with the pickled client)."""
    import pickle

    from actors.llm_server import cluster_services
    from actors.rate_limiter import SharedLimiter

    settings = LLMSettings(backend="bedrock", requests_per_minute=5)
    assert isinstance(make_limiter("k", 5, 0), LocalLimiter)
    assert isinstance(make_llm(settings).limiter, LocalLimiter)
    shared = make_llm(settings, services=cluster_services())
    assert isinstance(pickle.loads(pickle.dumps(shared)).limiter, SharedLimiter)
    assert type(make_llm(LLMSettings())).__name__ == "LocalLLM"
    assert type(make_llm(LLMSettings(), services=cluster_services())).__name__ == "NodeLLMClient"
    assert type(make_embedder(LLMSettings(), services=cluster_services())).__name__ == "NodeEmbedderClient"


def test_unknown_backend_lists_the_valid_ones():
    with pytest.raises(LLMError, match="valid backends: local, bedrock, openai, sim"):
        make_llm(LLMSettings(), backend="vertex")
    with pytest.raises(LLMError, match="unknown LLM backend 'x'"):
        make_embedder(LLMSettings(), backend="x")
    assert BACKENDS == ("local", "bedrock", "openai", "sim")


def test_openai_backend_without_url_says_how_to_set_it(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(LLMError, match="llm.base_url"):
        make_llm(LLMSettings(backend="openai"))


def test_backends_import_lazily():
    code = ("import sys; from ratchet_ray.settings.schema import LLMSettings; from ratchet_ray.llm.registry import make_llm;"
            "llm = make_llm(LLMSettings(backend='bedrock'));"
            "assert 'llama_cpp' not in sys.modules and 'openai' not in sys.modules, sorted(sys.modules);"
            "assert 'boto3' not in sys.modules;"  # the boto3 client is built on first call
            "print(llm.model)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "global.anthropic.claude-opus-4-7"


def test_embedder_follows_backend_unless_set():
    settings = LLMSettings(backend="bedrock", embedder="openai", base_url="http://127.0.0.1:9/v1")
    assert type(make_embedder(settings)).__name__ == "OpenAICompatEmbedder"
    assert type(make_embedder(LLMSettings(backend="bedrock"))).__name__ == "BedrockEmbedder"


def test_the_sim_backend_comes_from_the_world_it_answers():
    """``llm.world`` names the module that builds the sim clients; without a world (settings not
    built through a sim config) the error says how to get one."""
    from ratchet_ray.run_config.files import load_config

    settings = load_config([], ["suite=sim", "llm.backend=sim"]).llm
    llm, embedder = make_llm(settings), make_embedder(settings)
    assert (type(llm).__name__, type(embedder).__name__) == ("SimLLM", "SimEmbedder")
    assert llm.spec == settings.world and embedder.embed(["a loop"]).shape[0] == 1
    with pytest.raises(LLMError, match="needs llm.world.*load_config.*with suite sim"):
        make_llm(LLMSettings(backend="sim"))
    with pytest.raises(LLMError, match="needs llm.world"):
        make_embedder(LLMSettings(embedder="sim"))
