"""evalplus's MBPP+ pass/fail rules, applied in the trusted grader to decoded plain values.

evalplus compares inside the untrusted process (``unsafe_execute``), where a returned object can
lie through ``__eq__``; here the same rules run outside the sandbox on values ``wire.decode``
built, with evalplus's own constants and helpers (``MBPP_OUTPUT_SET_EQ_TASKS``,
``MBPP_OUTPUT_NOT_NONE_TASKS``, the per-task oracles of ``_special_oracle`` on the trusted
inputs, ``is_floats``, the ``atol`` rules, ``untrusted_check``'s time limits).

``SplitChecker(entry_point, atol).check(inp, out, exp)`` judges consecutive tests of one split
and never raises (an error while comparing fails the test). Like evalplus, once a float expected
output forces ``atol = 1e-6`` it stays for the rest of the split (``matched_exactly`` records a
test passed by digest).

One deliberate difference: where evalplus compares within the tolerance (``np.allclose``), an
output whose array shape is not the expected one's fails. ``np.allclose`` broadcasts, and an
extra empty axis makes it compare nothing: ``[[]]`` for ``[2.5]``, or ``[[[]], [[]]]`` for
``[[1], [2]]`` once the split's atol is set, passed evalplus without the value being computed.
An output of the expected shape is judged exactly as evalplus judges it.
"""

from __future__ import annotations

import numpy as np
from evalplus.config import DEFAULT_GT_TIME_LIMIT_FACTOR, DEFAULT_MIN_TIME_LIMIT
from evalplus.eval import is_floats
from evalplus.eval._special_oracle import (
    MBPP_OUTPUT_NOT_NONE_TASKS,
    MBPP_OUTPUT_SET_EQ_TASKS,
    _digit_distance_nums,
    _surface_Area,
)

MIN_TIME_LIMIT_S = DEFAULT_MIN_TIME_LIMIT
GT_TIME_LIMIT_FACTOR = DEFAULT_GT_TIME_LIMIT_FACTOR
EVALPLUS_SPLIT_CAP_S = 60.0  # untrusted_check: min(EVALPLUS_TIMEOUT_PER_TASK or 60, sum) + 1


def time_limits(ref_times: list[float], min_time_limit: float = MIN_TIME_LIMIT_S,
                factor: float = GT_TIME_LIMIT_FACTOR) -> list[float]:
    """evalplus's per-test limits: ``max(min_time_limit, factor x reference time)``."""
    return [max(min_time_limit, factor * t) for t in ref_times]


def split_timeout(limits: list[float], cap: float = EVALPLUS_SPLIT_CAP_S) -> float:
    """evalplus joins the split's process after ``min(cap, sum) + 1``, then ``+ 1`` more; ``cap``:
    its ``EVALPLUS_TIMEOUT_PER_TASK`` (from the run's config: the driver's value on any node)."""
    return min(cap, sum(limits)) + 2.0


class SplitChecker:
    def __init__(self, entry_point: str, atol: float):
        self.entry_point = entry_point
        self.atol = atol

    def matched_exactly(self, exp) -> None:
        """A test passed by identity with ``exp`` (digest match): keep evalplus's atol state."""
        if self.atol == 0 and is_floats(exp):
            self.atol = 1e-6

    def check(self, inp, out, exp) -> bool:
        try:
            return self._check(inp, out, exp)
        except Exception:  # evalplus: any exception while checking fails the test
            return False

    def _check(self, inp, out, exp) -> bool:
        # Mirrors the mbpp branch of evalplus.eval.unsafe_execute line by line.
        entry_point = self.entry_point
        exact_match = out == exp
        if entry_point == "are_equivalent":  # Mbpp/164
            exact_match = exact_match or True
        elif entry_point == "sum_div":  # Mbpp/295
            exact_match = exact_match or out == 0
        elif entry_point == "surface_Area":  # Mbpp/581
            exact_match = exact_match or abs(out - _surface_Area(*inp)) <= self.atol
        elif entry_point == "digit_distance_nums":  # Mbpp/558
            exact_match = exact_match or out == _digit_distance_nums(*inp)
        elif entry_point in MBPP_OUTPUT_SET_EQ_TASKS:
            exact_match = set(out) == set(exp)
        elif entry_point in MBPP_OUTPUT_NOT_NONE_TASKS:
            if isinstance(out, bool):
                exact_match = out == exp
            else:
                exact_match = exp == (out is not None)
        if self.atol == 0 and is_floats(exp):
            self.atol = 1e-6  # evalplus enforces atol for float comparison (for the split)
        if not exact_match and self.atol != 0:
            if type(out) != type(exp):
                return False
            if isinstance(exp, (list, tuple)) and len(out) != len(exp):
                return False
            if np.shape(out) != np.shape(exp):  # not in evalplus: see the module docstring
                return False
            return bool(np.allclose(out, exp, rtol=1e-07, atol=self.atol))
        return bool(exact_match)
