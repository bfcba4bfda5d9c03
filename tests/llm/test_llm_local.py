"""Local backend with the real models: Gemma 3 270M on llama.cpp and all-MiniLM-L6-v2."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from pydantic import BaseModel

from loop_helpers import server_pid
from ratchet_ray.settings.schema import LLMSettings
from ratchet_ray.llm.base import LLMError, Message, cosine_matrix
from ratchet_ray.llm.local import LocalConfig, LocalLLM, MiniLMEmbedder
from ratchet_ray.llm.structured import complete_structured


class RouterPick(BaseModel):
    skill_id: Literal["none", "sk-sort", "sk-dates"]
    reason: str


@pytest.fixture(scope="module")
def gemma():
    return LocalLLM(LocalConfig(n_ctx=2048))


@pytest.fixture(scope="module")
def minilm():
    return MiniLMEmbedder()


def test_gemma_generates_text(gemma):
    reply = gemma.complete([Message("system", "You write Python code."),
                            Message("user", "Write a function that returns the square of x.")],
                           max_tokens=24)
    assert reply.text.strip()
    assert 0 < reply.output_tokens <= 24 and reply.input_tokens > 10
    assert reply.backend == "local" and reply.model == "gemma-3-270m-q4_k_m" and reply.cost_usd == 0.0


def test_gemma_json_schema_constrained_generation_parses(gemma):
    ask = [Message("system", "You route tasks to skills."),
           Message("user", "Skills: sk-sort (sorting lists), sk-dates (parsing dates).\n"
                           "Task: sort the numbers in a list. Pick one skill id or none.")]
    raw = gemma.complete(ask, max_tokens=60, json_schema=RouterPick.model_json_schema())
    parsed = json.loads(raw.text)  # the grammar makes the raw text valid JSON of the schema's shape
    assert set(parsed) == {"skill_id", "reason"}
    result = complete_structured(gemma, ask, RouterPick, max_tokens=60)
    assert result.value.skill_id in ("none", "sk-sort", "sk-dates")
    assert len(result.replies) == 1  # constrained decoding needs no repair


def _cpu_reports_amx() -> bool:
    try:
        return "amx_tile" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def test_extra_buffer_types_are_off_by_default_in_the_params_given_to_llama_cpp(gemma, monkeypatch):
    # With them on, llama-cpp-python built on a CPU with AMX crashes in its AMX kernels
    # (ggml_backend_amx_mul_mat, or SIGILL in decode): that path never runs in this process.
    import llama_cpp
    from llama_cpp import llama as llama_module

    from ratchet_ray.llm.local import llama_model_defaults

    monkeypatch.delenv("RATCHET_LOCAL_EXTRA_BUFFER_TYPES", raising=False)
    assert LocalConfig.from_settings(LLMSettings()).extra_buffer_types is False
    assert gemma.llama.model_params.use_extra_bufts is False  # what llama_model_load_from_file got
    assert gemma.complete([Message("user", "Say OK.")], max_tokens=2).output_tokens > 0
    # The setting turns them on, and only for the model it loads: what Llama.__init__ reads
    # inside the block, the library's own defaults outside it.
    monkeypatch.setenv("RATCHET_LOCAL_EXTRA_BUFFER_TYPES", "1")
    config = LocalConfig.from_settings(LLMSettings())
    assert config.extra_buffer_types is True
    assert config.digest() != LocalConfig(extra_buffer_types=False).digest()
    with llama_model_defaults(True):
        assert llama_module.llama_cpp.llama_model_default_params().use_extra_bufts is True
    with llama_model_defaults(False):
        assert llama_module.llama_cpp.llama_model_default_params().use_extra_bufts is False
    assert llama_cpp.llama_model_default_params().use_extra_bufts is True  # library left as is
    monkeypatch.setenv("RATCHET_LOCAL_EXTRA_BUFFER_TYPES", "maybe")
    with pytest.raises(ValueError, match=r"RATCHET_LOCAL_EXTRA_BUFFER_TYPES='maybe' is not a boolean"):
        LLMSettings()


def test_extra_buffer_types_on_load_and_run_in_a_child_process_or_crash_there_on_amx(tmp_path):
    """The on path end to end, in a child (``probe_local_model``): the model loads with them on
    and answers, or, on a CPU with AMX, the child dies and the crash names the fix (turn them
    off). Either way this process and its pytest worker live on."""
    from ratchet_ray.llm.local_probe import LocalModelCrashed, probe_local_model

    config = LocalConfig(extra_buffer_types=True, n_ctx=256)
    try:
        detail = probe_local_model(config, log_dir=tmp_path, timeout_s=300)
    except LocalModelCrashed as crash:
        assert _cpu_reports_amx(), f"crashed on a CPU without AMX: {crash}"
        assert "the local model crashed" in str(crash)
        assert "llm.local.extra_buffer_types=false" in crash.hint
        assert crash.log_path.is_file()
    else:
        assert "extra buffer types on" in detail  # the child's model was loaded with them on


def test_prompt_larger_than_context_is_a_typed_error_and_budget_shrinks():
    small = LocalLLM(LocalConfig(n_ctx=64))
    with pytest.raises(LLMError, match="does not fit the local context of 64"):
        small.complete([Message("user", "word " * 200)], max_tokens=8)
    reply = small.complete([Message("user", "Count: one two three four five six")], max_tokens=500)
    assert reply.input_tokens + reply.output_tokens <= 64


def test_minilm_paraphrase_scores_above_unrelated(minilm):
    vectors = minilm.embed([
        "How do I sort a list of numbers in Python?",
        "What is the way to order a Python list of integers?",
        "The train to Lisbon leaves at noon.",
    ], input_type="search_query")
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sims = cosine_matrix(vectors, vectors)
    assert sims[0, 1] > sims[0, 2] + 0.3
    assert minilm.embed([]).shape == (0, 384)


@pytest.mark.slow
@pytest.mark.model
def test_one_model_copy_per_node_under_ray(ray_local):
    from actors.llm_server import NodeLLMClient, cluster_services, release_llm_actors

    @ray_local.remote(num_cpus=0)
    class RoleWorker:
        def __init__(self):
            from ratchet_ray.llm.registry import make_embedder, make_llm

            self.llm = make_llm(LLMSettings(), services=cluster_services())
            self.embedder = make_embedder(LLMSettings(), services=cluster_services())

        def work(self):
            reply = self.llm.complete([Message("user", "Name a colour.")], max_tokens=6)
            vectors = self.embedder.embed(["a red apple", "a crimson apple"])
            return os.getpid(), server_pid(self.llm), reply.output_tokens, vectors.shape

    workers = [RoleWorker.remote() for _ in range(2)]
    results = ray_local.get([w.work.remote() for w in workers])
    worker_pids, server_pids = {r[0] for r in results}, {r[1] for r in results}
    assert len(worker_pids) == 2 and len(server_pids) == 1  # two callers, one model copy
    assert not worker_pids & server_pids
    assert all(r[2] > 0 and r[3] == (2, 384) for r in results)
    from ratchet_ray.llm.registry import make_llm

    driver_client = make_llm(LLMSettings(), services=cluster_services())  # the same server
    assert isinstance(driver_client, NodeLLMClient)
    assert server_pid(driver_client) in server_pids
    assert any(name.startswith("ratchet-llm-") for name in release_llm_actors())
