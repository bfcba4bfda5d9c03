"""The oracle Solver of the ``mbpp_oracle`` world: the ``sim`` LLM with real code for answers.

Every role answers as the ``sim`` backend does (``SimLLM``: Router, Critic, Synthesizer and
refinement from the world's truth), except that the Solver's reply is Python the real MBPP+
grader runs: when the world draws a pass (probability ``p(task, routed skill)``) the task's
canonical solution, else one of its broken variants (``MbppWorld.broken``, picked by the call's
draw). The reply's first line is a comment saying which (``# oracle stand-in: canonical`` or
``# oracle stand-in: broken (<mutation>)``): the grader ignores comments, a reader of a capsule
sees what the world drew, and ``truth`` compares the draw with the grade.
"""

from __future__ import annotations

from typing import Any

from ratchet_ray.suites.mbpp_oracle.world import MbppWorld
from ratchet_ray.suites.sim.llm import SimLLM
from ratchet_ray.suites.sim.world import SimTask

CANONICAL_MARK = "# oracle stand-in: canonical"
BROKEN_MARK = "# oracle stand-in: broken"


class OracleLLM(SimLLM):
    """``LLMClient`` of the world over MBPP+ (see module docstring)."""

    model = "mbpp-oracle-world"

    @property
    def world(self) -> MbppWorld:
        return super().world  # type: ignore[return-value]

    def build_world(self) -> MbppWorld:
        return MbppWorld(self.spec)

    def answer(self, task: SimTask, token: str | None, passed: bool, rng: Any) -> str:
        if passed:
            head, code = CANONICAL_MARK, self.world.solution(task.task_id)
        else:
            variant = rng.choice(self.world.broken(task.task_id))
            head, code = f"{BROKEN_MARK} ({variant.mutation})", variant.code
        return f"```python\n{head}\n{code}\n```"
