"""Ray actor for the Solver pool: route + solve one task against the round's bank snapshot.

``SolverActor = ray.remote(SolverWorker)``; see ``ratchet_ray.roles.workers.SolverWorker``::

    solver = SolverActor.remote(config)            # builds its LLM from config.llm
    ray.get(solver.set_bank.remote(active_skills))  # once per round
    outcome = ray.get(solver.run.remote(task, "train", round_))

``launch_solvers`` starts ``n`` of them with the given per-actor resources.
"""

from __future__ import annotations

from typing import Any

import ray

from ratchet_ray.config import LoopConfig
from ratchet_ray.roles.workers import SolverWorker

SolverActor = ray.remote(SolverWorker)


def launch_solvers(config: LoopConfig, n: int, *, num_cpus: float = 1.0, **kwargs: Any) -> list:
    """``n`` Solver actors; ``kwargs`` go to ``SolverWorker`` (e.g. ``solver_cache_dir``)."""
    if n < 1:
        raise ValueError(f"launch_solvers: n must be >= 1, got {n}; set workers.solvers")
    return [SolverActor.options(num_cpus=num_cpus).remote(config, **kwargs) for _ in range(n)]
