"""A budget several runs share (every arm-seed of a sweep): one named ledger actor per scope.

Contracts:
- The ledger keeps each run's latest absolute spend (tokens, USD) under its key (the run dir's
  resolved path); ``seed`` (``SharedBudget.report``: one run's) replaces those entries and
  returns the sum over every run, so a repeated report (a resumed run, a sweep re-seeding its
  finished arms) counts once.
- The detached actor ``ratchet-budget-<scope>`` (namespace ``ratchet``) is created by the first
  caller; ``release_budget_ledger(scope)`` removes it (the sweep does, when it ends); one left
  by a killed sweep is reused and re-seeded by its next invocation.
- ``SharedBudget`` pickles without its handle; a ledger released while a run still reports is
  created again (that run then counts only the spends reported after).
"""

from __future__ import annotations

import ray

from actors.named_client import NAMESPACE, NamedActorClient, kill_named
from actors.run_lease import scope_token


class BudgetLedgerProcess:
    """The spend of every run of one scope."""

    def __init__(self) -> None:
        self.spend: dict[str, tuple[int, float]] = {}

    def seed(self, spends: dict[str, tuple[int, float]]) -> tuple[int, float]:
        for key, (tokens, cost) in spends.items():
            self.spend[key] = (int(tokens), float(cost))
        return self.total()

    def total(self) -> tuple[int, float]:
        return (sum(t for t, _ in self.spend.values()), sum(c for _, c in self.spend.values()))


BudgetLedgerActor = ray.remote(num_cpus=0)(BudgetLedgerProcess)


def ledger_name(scope: str) -> str:
    return f"ratchet-budget-{scope_token(scope)}"


class SharedBudget(NamedActorClient):
    """The client of scope ``scope``'s ledger (see module contracts)."""

    def __init__(self, scope: str):
        self.scope = scope

    def _create(self):
        return BudgetLedgerActor.options(
            name=ledger_name(self.scope), namespace=NAMESPACE, get_if_exists=True,
            lifetime="detached").remote()

    def report(self, key: str, tokens: int, cost_usd: float) -> tuple[int, float]:
        """Record run ``key``'s absolute spend; returns the scope's total (tokens, USD)."""
        return self.seed({key: (tokens, cost_usd)})

    def seed(self, spends: dict[str, tuple[int, float]]) -> tuple[int, float]:
        """Record several runs' absolute spends at once; returns the total."""
        tokens_total, cost_total = self._call(BudgetLedgerProcess.seed, spends)
        return int(tokens_total), float(cost_total)


def release_budget_ledger(scope: str) -> bool:
    """Kill scope ``scope``'s ledger; False when there was none."""
    return kill_named(ledger_name(scope))
