"""Seeds vary runs as the paper's do (issue 26): the Default Solver samples (temperature 1.0),
so the run seeds 42, 7 and 13 give different Solver samples of one task, and each call's
sampling seed (derived from the run seed as the role workers derive it) makes a seed
reproduce its own sample. On the real Gemma 270M, in process (``local``) and behind llama.cpp's
OpenAI-compatible server (``openai``, the chat API's ``seed``).
"""

from __future__ import annotations

import pytest
from llm_servers import start_llama_server, stop

from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.roles.solver import solve_code
from ratchet_ray.seeding import derive_seed
from ratchet_ray.types import Task

RUN_SEEDS = (42, 7, 13)
TASK = Task(task_id="Mbpp/3", suite="mbpp",
            prompt='"""\nWrite a python function to decide whether a number is prime.\n'
                   'assert is_prime(7) == True\n"""\n',
            payload={"entry_point": "is_prime"})


def solver_sample(llm, run_seed: int) -> str:
    """The Default Solver's first train attempt of TASK in round 0 of a run with ``run_seed``."""
    config = LoopConfig(seed=run_seed)
    call_seed = derive_seed(config.seed, 0, "train", TASK.task_id, "solver")
    result = solve_code(llm, TASK, None, max_tokens=40, temperature=config.llm.temperature,
                        seed=call_seed)
    return result.replies[0].text


def check_seeds_vary_and_reproduce(llm) -> None:
    assert LoopConfig().llm.temperature == 1.0  # the Default samples the Solver
    samples = {seed: solver_sample(llm, seed) for seed in RUN_SEEDS}
    assert all(text.strip() for text in samples.values()), samples
    assert len(set(samples.values())) == len(RUN_SEEDS), samples  # three seeds, three samples
    assert solver_sample(llm, 42) == samples[42]  # a seed reproduces its run


def test_local_gemma_solver_samples_differ_by_seed_and_reproduce():
    from ratchet_ray.llm.local import LocalConfig, LocalLLM

    check_seeds_vary_and_reproduce(LocalLLM(LocalConfig(n_ctx=1024)))


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    from ratchet_ray.llm.local import gemma_model_path

    proc, url = start_llama_server(tmp_path_factory.mktemp("llama"), {"models": [
        {"model": str(gemma_model_path()), "model_alias": "gemma", "n_ctx": 1024,
         "n_threads": 1, "n_threads_batch": 1, "verbose": False}]})
    yield f"{url}/v1"
    stop(proc)


@pytest.mark.slow
@pytest.mark.model
def test_openai_compatible_solver_samples_differ_by_seed_and_reproduce(llama_server):
    from ratchet_ray.llm.openai_compat import OpenAICompatLLM, OpenAIConfig

    llm = OpenAICompatLLM(OpenAIConfig(base_url=llama_server, model="gemma", max_retries=0))
    assert llm.supports_seed
    check_seeds_vary_and_reproduce(llm)
