"""The paper's headline metrics of one run, from its ``loop.json`` rounds: the one definition
``ratchet plot``, ``ratchet report``, the ablation table, ``sim-report`` and the experiment
evaluator share. Rolling gain = mean eval pass@1 of the last ``window`` (``ROLLING_WINDOW``)
rounds minus round 0's; with fewer rounds the window is every round after round 0.
Proposition 1's floor on expected eval pass@1 (``prop1_floor``, which the ``sim`` truth and the
experiment evaluator's veto share) is E[p0] - (tau + eps) - C * delta, with the Hoeffding
tolerance eps = sqrt(ln(2 / delta) / (2 N_min)) (``hoeffding_eps``; about 0.20 at the paper's
N_min 100, delta 1e-3).
"""

from __future__ import annotations

import json
import os
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROLLING_WINDOW = 10


def hoeffding_eps(n_min: int, delta: float) -> float:
    return math.sqrt(math.log(2.0 / delta) / (2.0 * n_min))


def prop1_floor(e_p0: float, tau: float, n_min: int, cap: int, delta: float) -> float:
    """Proposition 1's lower bound on expected eval pass@1 (see the module's docstring)."""
    return e_p0 - (tau + hoeffding_eps(n_min, delta)) - cap * delta


@dataclass(frozen=True)
class LoopMetrics:
    rounds: int
    round0: float | None
    peak: float | None
    peak_round: int | None
    rolling_mean: float | None
    rolling_gain: float | None
    window_rounds: list[int]
    rollbacks: list[int]
    final_active: int
    final_deprecated: int
    rollback_decisions: int
    """Rounds with an eval pass@1: the rollback gate decided in each (``rollbacks`` fired)."""


def load_loop(path: Path) -> tuple[Path, dict[str, Any]]:
    """``(loop.json path, its content)`` for a run dir or a ``loop.json`` path;
    ``FileNotFoundError`` naming the fix when there is none, ``ValueError`` naming what stands
    there instead (a folder, a link to nowhere, a device) and the fix."""
    loop_file = path / "loop.json" if path.is_dir() else path
    if not loop_file.is_file():
        if loop_file.is_symlink() or loop_file.exists():
            what = ("a folder" if loop_file.is_dir() else
                    f"a link to {os.readlink(loop_file)}, which is missing"
                    if not loop_file.exists() else "not a regular file")
            raise ValueError(f"{loop_file} is {what}, not the file `ratchet run` writes: move it "
                             "aside; `ratchet run --resume` of the run writes loop.json again "
                             "from its rounds' summaries, and `ratchet report` reads the rounds "
                             "from the run's evidence/")
        raise FileNotFoundError(f"{loop_file} not found: pass a run dir written by `ratchet run` "
                                "(it holds loop.json once a round has finished)")
    return loop_file, read_loop_file(loop_file)


def read_loop_file(loop_file: Path) -> dict[str, Any]:
    """The content of an existing ``loop.json``; ``ValueError`` naming it when it is garbled
    (a copy cut short, a hand edit): the rounds it summarises are also in the run's evidence."""
    try:
        data = json.loads(loop_file.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{loop_file} is not JSON ({exc}): restore it from a copy; with it moved "
                         "aside, `ratchet report` reads the rounds from the run's evidence/")
    if not isinstance(data, dict):
        raise ValueError(f"{loop_file} holds a JSON {type(data).__name__}, not the object "
                         "`ratchet run` writes: restore it from a copy; with it moved aside, "
                         "`ratchet report` reads the rounds from the run's evidence/")
    return data


def loop_metrics(rows: list[dict[str, Any]], window: int = ROLLING_WINDOW) -> LoopMetrics:
    """Headline metrics from ``loop.json`` rounds (rows without an eval pass are ignored)."""
    evals = [(r["round"], r["eval_pass_at_1"]) for r in rows if r.get("eval_pass_at_1") is not None]
    rollbacks = [r["round"] for r in rows if r.get("rollback_fired")]
    last = rows[-1] if rows else {}
    if not evals:
        return LoopMetrics(len(rows), None, None, None, None, None, [], rollbacks,
                           last.get("active_skills", 0), last.get("deprecated_skills", 0), 0)
    round0 = dict(evals).get(0, evals[0][1])
    peak_round, peak = max(evals, key=lambda e: (e[1], -e[0]))
    later = [e for e in evals if e[0] != evals[0][0]] or evals
    tail = later[-window:]
    rolling = sum(v for _, v in tail) / len(tail)
    return LoopMetrics(len(rows), round0, peak, peak_round, rolling, rolling - round0,
                       [r for r, _ in tail], rollbacks,
                       last.get("active_skills", 0), last.get("deprecated_skills", 0), len(evals))
