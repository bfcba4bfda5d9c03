"""Ray actor for the Critic: one Verdict per train-failure capsule, in batches.

``CriticActor = ray.remote(CriticWorker)``; see ``ratchet_ray.roles.critic.CriticWorker``::

    critic = CriticActor.remote(config)
    results = ray.get(critic.critique_batch.remote([(task, capsule, skill_or_None), ...]))

Filter capsules with ``ratchet_ray.roles.critic.is_critiquable`` first; infrastructure failures
that slip through come back as results with ``error`` "NotCritiquable: ...".
"""

from __future__ import annotations

import ray

from ratchet_ray.roles.critic import CriticWorker

CriticActor = ray.remote(CriticWorker)
