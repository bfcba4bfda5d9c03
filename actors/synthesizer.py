"""Ray actor for the Synthesizer (and the Meta-Synthesizer on its cadence).

``SynthesizerActor = ray.remote(SynthesizerWorker)``; see
``ratchet_ray.roles.workers.SynthesizerWorker``::

    synth = SynthesizerActor.remote(config, tasks=train_tasks)
    outcome = ray.get(synth.run.remote(verdicts, active, metaskill, bank_handle, round_))

The worker proposes each skill to the SkillBank actor itself (``bank.add.remote(..)``), so a
dedup hit is re-prompted inside one call.
"""

from __future__ import annotations

import ray

from ratchet_ray.roles.workers import SynthesizerWorker

SynthesizerActor = ray.remote(SynthesizerWorker)
