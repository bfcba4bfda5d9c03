"""Ray actor for the Solver pool: route + solve tasks against the bank snapshot each call carries.

``SolverActor``: ``ratchet_ray.roles.solver.SolverWorker`` plus ``actors.batching.BatchCalls``
(several tasks per call), under the same class name (process titles, the Ray dashboard and the
chaos tests name actors by it). The actor holds no state a replacement would need: the split's
bank travels as an object ref with every call, and the worker only memoizes the last
snapshot's index::

    solver = SolverActor.remote(config)            # builds its LLM from config.llm
    bank = ray.put(BankSnapshot.of(active_skills))  # once per split, on the driver
    outcome = ray.get(solver.run.remote(task, "train", round_, bank=bank))
    outcomes, seconds = ray.get(solver.call_batch.remote(SolverWorker.run,
                                                         [(task, ("train", round_))], bank=bank))
"""

from __future__ import annotations

import ray

from actors.batching import BatchCalls
from ratchet_ray.roles import solver


class SolverWorker(solver.SolverWorker, BatchCalls):
    """The Solver as a pool actor: one task per ``run``, or several per ``call_batch``."""


SolverActor = ray.remote(SolverWorker)
