"""The ``mbpp_oracle`` grader: the real MBPP+ grader, remembering each program's verdict.

Contract: ``OracleGrader`` is ``MbppGrader`` except that one grader grades a given program for a
given task once: the oracle Solver writes only a task's canonical solution or one of its few
broken variants, and MBPP+ grading is a pure function of (task, code). Later grades of a
(task id, twin recipe, output) return the first one's ``GradeResult`` with ``duration_s`` 0;
infrastructure failures and timeouts / memory failures (which load can cause) are never
remembered. The twin recipe is in the key (``suites.base.as_impossible_twin``): an impossible
twin has its task's id, and must not read its task's pass.
"""

from __future__ import annotations

import hashlib
import json

from ratchet_ray.suites.base import twin_recipe
from ratchet_ray.suites.mbpp.grader import MbppGrader
from ratchet_ray.types import GradeResult, Task

_NOT_REMEMBERED = ("timeout", "memory")


class OracleGrader(MbppGrader):
    """See the module contract."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._seen: dict[tuple[str, str, str], GradeResult] = {}
        self.sandbox_runs = 0
        """Grades that ran the program (not answered from memory)."""

    def grade(self, task: Task, output: str) -> GradeResult:
        key = (task.task_id, json.dumps(twin_recipe(task), sort_keys=True, default=str),
               hashlib.sha256(output.encode()).hexdigest())
        known = self._seen.get(key)
        if known is not None:
            return known.model_copy(update={"duration_s": 0.0})
        result = super().grade(task, output)
        self.sandbox_runs += 1
        if not result.infra_failure and result.exit_status not in _NOT_REMEMBERED:
            self._seen[key] = result
        return result
