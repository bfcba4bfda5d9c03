"""The ``mbpp`` config section (``mbpp:``, ``--set mbpp.key=value``): how MBPP+ solutions are
graded beyond the generic ``grader`` section. Stored complete by ``resolve_config`` for the
suites that grade with this grader, so every grader node uses the driver's values.
"""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field


def _split_cap_default() -> float:
    """``$EVALPLUS_TIMEOUT_PER_TASK`` (evalplus's own variable) when set, else 60; a value that is
    not a number is refused naming it (a settings module imports no project module)."""
    value = os.environ.get("EVALPLUS_TIMEOUT_PER_TASK")
    if not value:
        return 60.0
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"$EVALPLUS_TIMEOUT_PER_TASK={value!r} is not a number; fix or unset "
                         "it") from None


class MbppSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
    allow_weak_sandbox: bool = False
    """Without bubblewrap, grade anyway in a rlimits-only sandbox (logged as a warning). Off:
    grading refuses to start and names the fix."""
    evalplus_timeout_per_task_s: float = Field(
        default_factory=_split_cap_default, gt=0)
    """evalplus's cap on one test split's process (default ``$EVALPLUS_TIMEOUT_PER_TASK`` or 60,
    read on the driver); graders on every node use it, whatever their environment holds."""
    min_time_limit_s: float = Field(default=1.0, gt=0)
    """The floor of a test's wall-clock limit, evalplus's ``--min-time-limit``; a higher floor
    keeps a correct solution on a busy machine from overrunning 1 s."""
    gt_time_limit_factor: float = Field(default=4.0, gt=0)
    """A test's limit is ``max(min_time_limit_s, this x the reference solution's time)``,
    evalplus's ``--gt-time-limit-factor``."""


SECTION = "mbpp"
MOVED_KEYS = {f"grader.{key}": f"{SECTION}.{key}" for key in MbppSettings.model_fields}
"""``grader.min_time_limit_s`` -> ``mbpp.min_time_limit_s`` (and the other three)."""
