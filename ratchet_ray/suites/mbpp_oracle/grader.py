"""The ``mbpp_oracle`` grader: the real MBPP+ grader, remembering each program's verdict.

Contract: ``OracleGrader`` is ``MbppGrader`` (sandboxed evalplus check, expected outputs from
the ground-truth store, every exit status the same) except that a grader actor grades a given
program for a given task once: the oracle Solver writes only a task's canonical solution or
one of its few broken variants, so the same text comes back round after round, and MBPP+
grading is a pure function of (task, code). The first grade of each (task id, output) is a real
sandboxed run; later ones return its ``GradeResult`` (``duration_s`` 0: nothing ran). Grades
that are infrastructure failures or timeouts (which load can cause) are never remembered.
"""

from __future__ import annotations

import hashlib

from ratchet_ray.suites.mbpp.grader import MbppGrader
from ratchet_ray.types import GradeResult, Task

_NOT_REMEMBERED = ("timeout", "memory")


class OracleGrader(MbppGrader):
    """See the module contract."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._seen: dict[tuple[str, str], GradeResult] = {}
        self.sandbox_runs = 0
        """Grades that ran the program (not answered from memory)."""

    def grade(self, task: Task, output: str) -> GradeResult:
        key = (task.task_id, hashlib.sha256(output.encode()).hexdigest())
        known = self._seen.get(key)
        if known is not None:
            return known.model_copy(update={"duration_s": 0.0})
        result = super().grade(task, output)
        self.sandbox_runs += 1
        if not result.infra_failure and result.exit_status not in _NOT_REMEMBERED:
            self._seen[key] = result
        return result
