"""Ray actor for the Critic: one Verdict per train-failure capsule, in batches.

``CriticActor = ray.remote(CriticWorker)``; see ``ratchet_ray.roles.workers.CriticWorker``::

    critic = CriticActor.remote(config)
    results = ray.get(critic.critique_batch.remote([(task, capsule, skill_or_None), ...]))

Filter capsules with ``ratchet_ray.roles.critic.is_critiquable`` first; infrastructure failures
that slip through come back as results with ``error`` "NotCritiquable: ...".
"""

from __future__ import annotations

from typing import Any

import ray

from ratchet_ray.config import LoopConfig
from ratchet_ray.roles.workers import CriticWorker

CriticActor = ray.remote(CriticWorker)


def launch_critics(config: LoopConfig, n: int, *, num_cpus: float = 1.0, **kwargs: Any) -> list:
    if n < 1:
        raise ValueError(f"launch_critics: n must be >= 1, got {n}; set workers.critics")
    return [CriticActor.options(num_cpus=num_cpus).remote(config, **kwargs) for _ in range(n)]
