"""Terminal progress of a run: round, phase, tasks done/failed, pass@1, tokens and cost.

Contract: ``LoopProgress`` is display only (the run log and the evidence are the record). On a
terminal it draws a live ``rich`` bar; elsewhere (``ray job submit`` logs, CI) it prints one line
per finished phase so the job log stays readable. ``enabled=False`` shows nothing. Given the
run's ``budget`` (``loop.budget.RunBudget``), the token and cost totals are the run's (spend
before a resume included) against its limits, e.g. ``tokens 1200/5000, $0.0100``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ratchet_ray.types import RoundSummary


@dataclass
class PhaseCounters:
    done: int = 0
    failed: int = 0
    passed: int = 0

    @property
    def pass_at_1(self) -> float:
        return self.passed / self.done if self.done else 0.0


class LoopProgress:
    """One bar for the current phase; run-wide tokens and cost in its description."""

    def __init__(self, rounds: int, *, enabled: bool = True, budget: Any = None):
        self.rounds = rounds
        self.budget = budget
        self.enabled = enabled
        self.console = Console(stderr=True)
        self.live = enabled and self.console.is_terminal
        self.counters = PhaseCounters()
        self.total_tokens = 0
        self.total_cost = 0.0
        self._round = 0
        self._phase = ""
        self._started = time.monotonic()
        self._bar: Progress | None = None
        self._task = None
        if self.live:
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), console=self.console)
            self._bar.start()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> "LoopProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- phases ------------------------------------------------------------------------------
    def phase(self, round_: int, name: str) -> None:
        """Start phase ``name`` of ``round_`` (its bar without a total until ``set_total``)."""
        self._round, self._phase = round_, name
        self.counters = PhaseCounters()
        self._started = time.monotonic()
        if self._bar is not None:
            if self._task is not None:
                self._bar.remove_task(self._task)
            self._task = self._bar.add_task(self._describe(), total=None)

    def set_total(self, total: int) -> None:
        """The current phase has ``total`` work items (draws the bar's denominator)."""
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, total=total or None)

    def add_usage(self, tokens: int, cost_usd: float) -> None:
        """LLM usage outside task work items (critic, synthesizer), for the run totals."""
        self.total_tokens += tokens
        self.total_cost += cost_usd

    def advance(self, *, passed: bool | None = None, failed: bool = False, tokens: int = 0,
                cost_usd: float = 0.0) -> None:
        """One work item finished; ``failed`` marks an error (not a wrong answer)."""
        c = self.counters
        c.done += 1
        c.failed += int(failed)
        c.passed += int(bool(passed))
        self.add_usage(tokens, cost_usd)
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, advance=1, description=self._describe())

    def end_phase(self, note: str = "") -> None:
        if not self.enabled or self.live:
            return
        c = self.counters
        took = time.monotonic() - self._started
        counts = f"{c.done} done, {c.failed} failed; " if c.done else ""
        self.console.print(f"round {self._round} {self._phase}: {counts}{note} ({took:.1f}s)"
                           f" | {self.usage_text()}",
                           markup=False, highlight=False, soft_wrap=True)

    def round_done(self, summary: RoundSummary) -> None:
        if not self.enabled:
            return
        parts = [f"round {summary.round} done:"]
        if summary.eval:
            parts.append(f"eval pass@1 {summary.eval.pass_at_1:.3f}")
        if summary.train:
            parts.append(f"train pass@1 {summary.train.pass_at_1:.3f}")
        infra = sum(b.infra_failures for b in (summary.eval, summary.train) if b is not None)
        if infra:  # below the breaker's threshold: counted as failed tasks, shown, not hidden
            parts.append(f"infra failures {infra}")
        parts.append(f"bank {summary.active_skills} active / {summary.deprecated_skills} "
                     f"deprecated, +{len(summary.skills_created)} new, "
                     f"-{len(summary.skills_retired)} retired")
        if summary.rollback_fired:
            parts.append(f"ROLLBACK to round {summary.restored_round}")
        parts.append(self.usage_text())
        self.console.print(" ".join(parts), markup=False, highlight=False, soft_wrap=True)

    # ---- text --------------------------------------------------------------------------------
    def usage_text(self) -> str:
        """Run-wide tokens and cost (against the budget's limits when there is a budget)."""
        if self.budget is not None:
            return self.budget.describe()
        return f"tokens {self.total_tokens}, ${self.total_cost:.4f}"

    def _describe(self) -> str:
        c = self.counters
        shown = f", pass@1 {c.pass_at_1:.3f}" if self._phase in ("eval", "train") and c.done else ""
        return (f"round {self._round}/{self.rounds - 1} {self._phase:<9} failed {c.failed}"
                f"{shown} | {self.usage_text()}")
