"""The run's spending budget: tokens and USD over every LLM call, stopped cleanly when spent.

Contracts:
- ``RunBudget.for_run(settings, store)`` starts from every ``llm_call`` row the run's evidence
  holds, so a resumed run counts what it spent before.
- ``charge`` / ``charge_rows`` add spend as it is recorded; ``exhausted`` is true once it
  reaches ``budget.max_tokens`` or ``budget.max_cost_usd`` (None: no limit).
- ``check(where)`` raises ``BudgetExhausted`` (a ``RunStopped``) naming the spend, the limit and
  the command that continues with a higher limit. A split or the critic stops handing out work
  once spent, lets the tasks in flight be recorded, then raises (``stop``), so ``--resume``
  picks up exactly the tasks not started.
- Shared budget (``budget.scope``, set by a sweep for all its arm-seeds): the limits apply to
  the sum of the scope's runs. Each run reports its absolute spend to the scope's ledger
  (``actors.budget_ledger``) at start and with every charge; ``exhausted`` / ``describe`` use
  the scope's total, and the message names the sweep as what to rerun.
- ``resume_settings(config_file, sets)`` applies ``--set budget.*=...`` to a resumed run's
  config; any other key is refused, and so is a config.yaml holding no settings (truncated)
  or edited, since the run last ran, in a key that changes what its rounds measure
  (``run_config.resumed``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from ratchet_ray.settings.schema import BudgetSettings, LoopConfig, read_config_file
from ratchet_ray.run_config.files import ConfigError, load_config
from ratchet_ray.run_config.resumed import (RECORD_FILE, ResumeEditError, loop_record,
                                            refusal, setting_edits, settings_of, warning)
from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.loop.breaker import RunStopped

BUDGET_PREFIX = "budget."


class BudgetExhausted(RunStopped):
    """The run spent its budget; ``details`` holds the spend and the limits (for the record)."""

    def __init__(self, message: str, details: dict[str, Any]):
        super().__init__(message)
        self.details = details


@dataclass
class RunBudget:
    settings: BudgetSettings
    tokens: int = 0
    cost_usd: float = 0.0
    run_dir: str = "RUN_DIR"
    """Named in the message's resume command (and the run's key in a shared ledger)."""
    shared: Any = None
    """The scope's ledger client (``report(key, tokens, cost_usd) -> totals``), None for a run's
    own budget."""
    scope_tokens: int = 0
    scope_cost_usd: float = 0.0
    """The scope's totals as the ledger last answered (every run of the scope, this one too)."""

    @classmethod
    def for_run(cls, settings: BudgetSettings, store: Any, run_dir: str,
                shared: Any = None) -> "RunBudget":
        """The budget with the spend ``store`` (an ``EvidenceStore``) already records; with
        ``settings.scope`` (and limits) it reports to that scope's ledger (``shared``, by
        default ``actors.budget_ledger.SharedBudget(scope)``)."""
        with store.connect() as con:
            tokens, cost = nq.fetch_one(con, "llm_spend_total")
        if settings.scope is not None and shared is None and (
                settings.max_tokens is not None or settings.max_cost_usd is not None):
            from actors.budget_ledger import SharedBudget

            shared = SharedBudget(settings.scope)
        budget = cls(settings, int(tokens), float(cost), run_dir,
                     shared if settings.scope is not None else None)
        budget._report()
        return budget

    @property
    def key(self) -> str:
        """This run in the scope's ledger: its run dir, resolved."""
        return str(Path(self.run_dir).resolve())

    def _report(self) -> None:
        if self.shared is not None:
            self.scope_tokens, self.scope_cost_usd = self.shared.report(
                self.key, self.tokens, self.cost_usd)

    @property
    def spent(self) -> tuple[int, float]:
        """(tokens, USD) the limits apply to: the scope's totals when shared, else the run's."""
        if self.shared is not None:
            return self.scope_tokens, self.scope_cost_usd
        return self.tokens, self.cost_usd

    def charge(self, tokens: int, cost_usd: float) -> None:
        self.tokens += int(tokens)
        self.cost_usd += float(cost_usd)
        if tokens or cost_usd:
            self._report()

    def charge_rows(self, rows: Iterable[dict[str, Any]]) -> None:
        """Add the spend of ``llm_call`` evidence rows."""
        rows = list(rows)  # one ledger report for the lot
        self.charge(sum(r["input_tokens"] + r["output_tokens"] for r in rows),
                    sum(r["cost_usd"] for r in rows))

    @property
    def exhausted(self) -> str | None:
        """Which limit is reached (``"max_tokens"`` / ``"max_cost_usd"``), None when neither."""
        s = self.settings
        tokens, cost = self.spent
        if s.max_tokens is not None and tokens >= s.max_tokens:
            return "max_tokens"
        if s.max_cost_usd is not None and cost >= s.max_cost_usd:
            return "max_cost_usd"
        return None

    def details(self) -> dict[str, Any]:
        details = {"limit": self.exhausted, "tokens": self.tokens,
                   "cost_usd": round(self.cost_usd, 6), "max_tokens": self.settings.max_tokens,
                   "max_cost_usd": self.settings.max_cost_usd}
        if self.shared is not None:
            details |= {"scope": self.settings.scope, "scope_tokens": self.scope_tokens,
                        "scope_cost_usd": round(self.scope_cost_usd, 6)}
        return details

    def describe(self) -> str:
        """``tokens 1200/5000, $0.0100/$1.0000`` (no ``/limit`` where there is none); a shared
        budget shows the scope's totals: ``sweep tokens 1200/5000, ...``."""
        s = self.settings
        spent_tokens, spent_cost = self.spent
        tokens = f"tokens {spent_tokens}" + (f"/{s.max_tokens}" if s.max_tokens is not None
                                             else "")
        cost = f"${spent_cost:.4f}" + (f"/${s.max_cost_usd:.4f}"
                                       if s.max_cost_usd is not None else "")
        return f"{'sweep ' if self.shared is not None else ''}{tokens}, {cost}"

    def error(self, where: str) -> BudgetExhausted:
        limit = self.exhausted or "max_tokens"
        tokens, cost = self.spent
        spent = (f"{tokens} tokens" if limit == "max_tokens" else f"${cost:.4f}")
        limit_value = getattr(self.settings, limit)
        if self.shared is not None:
            whose = f"the runs of budget scope {self.settings.scope!r} (this sweep) spent"
            then = (f"rerun the sweep's command with --set budget.{limit}=<a higher limit> (it "
                    "resumes every stopped arm-seed)")
        else:
            whose, then = "spent", (f"ratchet run --resume {self.run_dir} "
                                    f"--set budget.{limit}=<a higher limit>")
        return BudgetExhausted(
            f"budget exhausted {where}: {whose} {spent} of budget.{limit} {limit_value} "
            f"({self.describe()}); the tasks in flight were finished and recorded, nothing "
            f"else was started. Continue with: {then}", self.details())

    def check(self, where: str) -> None:
        """Raise ``BudgetExhausted`` when a limit is reached (``where``: e.g. "before round 2
        train")."""
        if self.exhausted:
            raise self.error(where)


def resume_settings(config_file: Path, sets: Sequence[str]) -> tuple[LoopConfig, list[str]]:
    """The resumed run's config (``config_file``, its config.yaml, with the ``budget.*``
    overrides ``sets`` applied; any other key refused) and the warnings its edits call for:
    ``config_file`` compared with the run's record of the settings it ran with
    (``run_config.resumed``, beside it; for a run started before the record existed, the
    settings its loop.json names: ``resumed.loop_record``): a key that changes what the rounds measure is refused
    (``ResumeEditError``, one line naming each edit and the fix), an operational one is one
    warning line."""
    config = _resume_config(config_file, sets)
    record = Path(config_file).with_name(RECORD_FILE)
    if not record.exists():  # an older run: what its loop.json recorded, if anything
        record = Path(config_file).with_name("loop.json")
        recorded = loop_record(record)
        if not recorded:
            return config, []
    else:
        recorded = _read_record(record)
    as_file = load_config([config_file]) if sets else config  # --set budget.* is no edit
    finished = sum(1 for _ in Path(config_file).parent.glob("round_*/summary.json"))
    warned, refused = setting_edits(recorded, as_file, finished)
    if refused:
        raise ResumeEditError(refusal(config_file, refused, finished, record))
    return config, [warning(config_file, warned)] if warned else []


def _read_record(record: Path) -> dict[str, Any]:
    try:  # resolved as config.yaml is, so what the environment fills in is no edit
        if not read_config_file(record):  # truncated: it would compare with the Default
            raise ConfigError(f"{record} holds no settings (an empty file)")
        return settings_of(load_config([record]))
    except ValueError as exc:
        raise ConfigError(f"{' '.join(str(exc).split())}; it is the run's own copy of the "
                          "settings it ran with: restore it from a copy of the run dir") from exc


def _resume_config(config_file: Path, sets: Sequence[str]) -> LoopConfig:
    other = [s for s in sets if not s.strip().startswith(BUDGET_PREFIX)]
    if other:
        raise ConfigError(f"--resume keeps the settings the run started with ({config_file}); "
                          f"only budget.max_tokens / budget.max_cost_usd may change, not "
                          f"{', '.join(other)}")
    config = load_config([config_file], sets)
    if not read_config_file(config_file):  # truncated: it would resume with the Default's settings
        raise ConfigError(f"{config_file} holds no settings (an empty file), where a run's "
                          "config.yaml holds those it started with; restore it from a copy of "
                          "the run dir, or start a new run without --resume")
    return config
