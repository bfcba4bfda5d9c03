"""The oracle Solver of the ``mbpp_oracle`` world: the ``sim`` LLM with real code for answers.

Every role answers as ``SimLLM`` does, but the Solver's reply is Python the real MBPP+ grader
runs: on a drawn pass the canonical solution, else one of its broken variants
(``MbppWorld.broken``, picked by the call's draw). Its first line says which
(``CANONICAL_MARK`` or ``BROKEN_MARK (<mutation>)``): the grader ignores comments, a capsule's
reader sees what the world drew.
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
