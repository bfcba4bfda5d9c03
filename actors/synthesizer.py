"""Ray actor for the Synthesizer (and the Meta-Synthesizer on its cadence).

``SynthesizerActor = ray.remote(SynthesizerProcess)``; see
``ratchet_ray.roles.synthesizer.SynthesizerWorker``::

    synth = SynthesizerActor.remote(config, tasks=train_tasks)
    outcome = ray.get(synth.run.remote(verdicts, active, metaskill, bank_handle, round_))

``run`` takes the SkillBank actor's handle and proposes each skill to it itself (``RemoteBank``
waits for every ``add``), so a dedup hit is re-prompted inside one call. The plain worker only
knows a bank's ``add``; the handle is adapted here, on the Ray side. ``run`` opens a bank batch
(``SkillBank.begin_batch``): the caller commits it (``commit_batch``) once it has recorded the
outcome, so the adds and their record commit together (``ratchet_ray.loop.replay``).
"""

from __future__ import annotations

from typing import Any

import ray

from ratchet_ray.bank.skill_events import AddResult
from ratchet_ray.roles.synthesizer import SynthesizerWorker, SynthOutcome
from ratchet_ray.types import Skill


class RemoteBank:
    """A SkillBank actor handle seen as a bank: ``add`` and ``refine`` return the actor's
    answer."""

    def __init__(self, handle: Any):
        self.handle = handle

    def add(self, skill: Skill, *, round_: int, sources: int | None = None) -> AddResult:
        return ray.get(self.handle.add.remote(skill, round_=round_, sources=sources))

    def refine(self, skill: Skill, parent_id: str, *, round_: int) -> AddResult:
        return ray.get(self.handle.refine.remote(skill, parent_id, round_=round_))


class SynthesizerProcess(SynthesizerWorker):
    """``SynthesizerWorker`` whose ``run`` gets the SkillBank actor's handle as ``bank``."""

    def run(self, verdicts, active_skills, metaskill, bank: Any, round_: int,
            **kwargs: Any) -> SynthOutcome:
        # A retried attempt (this actor replaced a dead one) starts the bank's batch afresh, so
        # the dead attempt's uncommitted adds are not seen twice (``SkillBank.begin_batch``).
        ray.get(bank.begin_batch.remote())
        return super().run(verdicts, active_skills, metaskill, RemoteBank(bank), round_, **kwargs)


SynthesizerActor = ray.remote(SynthesizerProcess)
