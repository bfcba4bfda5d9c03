"""What one run's round phases work with: ``LoopContext``.

Its own module so that the phases (``loop.phases``) and the steps they call (``loop.twins``)
both depend on it without depending on each other. Contracts: the state itself lives in the
actors and the evidence; ``task(id)`` finds a train or eval task; ``charge_calls`` turns
replies into ``llm_call`` rows charged to the budget (``append_calls`` also writes them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.governance.rollback import RollbackGate
from ratchet_ray.llm.accounting import llm_call_row
from ratchet_ray.loop.budget import RunBudget
from ratchet_ray.loop.progress import LoopProgress
from ratchet_ray.loop.rundir import RunDir
from ratchet_ray.loop.runtime import Runtime
from ratchet_ray.types import Task


@dataclass
class LoopContext:
    """What the phases work with; the state itself lives in the actors and the evidence."""

    config: LoopConfig
    run: RunDir
    store: EvidenceStore
    actors: Runtime
    train_tasks: list[Task]
    eval_tasks: list[Task]
    gate: RollbackGate
    progress: LoopProgress
    budget: RunBudget | None = None
    """The run's spending limits (``loop.budget``), charged with every recorded call."""
    shared_inputs: dict = field(default_factory=dict)
    """Per task id, its precomputed grading input in the object store (``SplitRunner``)."""

    def task(self, task_id: str) -> Task:
        return self._tasks[task_id]

    def __post_init__(self) -> None:
        self._tasks = {t.task_id: t for t in [*self.train_tasks, *self.eval_tasks]}

    def append_calls(self, round_: int, role: str, replies: Sequence[Any]) -> None:
        self.store.append("llm_call", round_, self.charge_calls(round_, role, replies))

    def charge_calls(self, round_: int, role: str, replies: Sequence[Any]) -> list[dict]:
        """The ``llm_call`` rows of ``replies``, charged to the budget and shown as usage now;
        the caller writes them (``append_calls`` at once, the critic in parts)."""
        rows = [llm_call_row(r, run_id=self.run.run_id, round_=round_, role=role)
                for r in replies]
        if self.budget is not None:
            self.budget.charge_rows(rows)
        for reply in replies:
            self.progress.add_usage(reply.input_tokens + reply.output_tokens, reply.cost_usd)
        return rows
