"""Fresh eval samples on every backend (issue 40): the eval cache keys every call by its seed
identity, so a backend without a sampling seed (Bedrock's Converse) still draws anew each round,
and only a resumed round (or the same request of the same round) is replayed."""

from __future__ import annotations

import itertools

from fakes import HashEmbedder

from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.llm.base import Reply
from ratchet_ray.llm.cache import CachedLLM
from ratchet_ray.roles.solver import SolverWorker
from ratchet_ray.types import Task

TASK = Task(task_id="Mbpp/3", suite="mbpp", payload={"entry_point": "is_prime"},
            prompt='"""\nWrite a python function to decide whether a number is prime.\n"""\n')


class SeedlessSampler:
    """A stand-in for a backend that samples but takes no seed: every call is a new draw, and a
    ``seed`` keyword would be a TypeError (as for a client without one)."""

    backend, model = "seedless", "sampler-1"

    def __init__(self):
        self.draws = itertools.count()
        self.calls: list[dict] = []

    def complete(self, messages, *, max_tokens=512, temperature=0.0, stop=None, json_schema=None):
        self.calls.append({"temperature": temperature})
        n = next(self.draws)
        return Reply(text=f"```python\ndef is_prime(n):\n    return n > {n}\n```",
                     input_tokens=10, output_tokens=5, model=self.model, backend=self.backend)


def test_a_seedless_backend_draws_anew_each_round_and_a_resumed_round_replays(tmp_path):
    llm, cache = SeedlessSampler(), tmp_path / "solver_cache"
    config = LoopConfig(seed=42)
    assert config.llm.temperature > 0  # the Default samples the Solver (T=1.0)
    worker = SolverWorker(config, llm=llm, embedder=HashEmbedder(), output_kind="code",
                          solver_cache_dir=cache)
    worker.set_bank([])
    outputs = [worker.run(TASK, "eval", round_).output for round_ in range(3)]
    assert len(llm.calls) == 3 and len(set(outputs)) == 3  # three rounds, three draws
    assert all(call["temperature"] == config.llm.temperature for call in llm.calls)

    resumed = SolverWorker(config, llm=llm, embedder=HashEmbedder(), output_kind="code",
                           solver_cache_dir=cache)  # a restarted Solver finishing round 2
    resumed.set_bank([])
    replay = resumed.run(TASK, "eval", 2)
    assert replay.output == outputs[2] and replay.solver_replies[0].cached
    assert len(llm.calls) == 3  # nothing paid again

    other_seed = SolverWorker(LoopConfig(seed=7), llm=llm, embedder=HashEmbedder(),
                              output_kind="code", solver_cache_dir=cache)
    other_seed.set_bank([])
    assert not other_seed.run(TASK, "eval", 2).solver_replies[0].cached  # another run's draw


def test_the_cache_takes_a_seed_for_its_key_but_never_passes_it_to_a_seedless_client(tmp_path):
    llm = SeedlessSampler()
    cached = CachedLLM(llm, tmp_path)
    assert cached.supports_seed and not cached.client_takes_seed
    from ratchet_ray.llm.base import Message

    prompt = [Message("user", "Write is_prime(n).")]
    first = cached.complete(prompt, temperature=1.0, seed=1)
    assert cached.complete(prompt, temperature=1.0, seed=1).text == first.text
    assert cached.complete(prompt, temperature=1.0, seed=2).text != first.text
    assert len(llm.calls) == 2
