"""The keep/revert experiment loop against a frozen evaluator (``ratchet experiment run``).

One iteration is ``iteration.IterationSteps``'; the user-facing rules: docs/experiment-loop.md.

Contracts of ``ExperimentEngine(settings, proposer).run()``:
- Works in ``settings.repo`` on the branch ``experiment/<name>`` (created from HEAD when
  missing); a dirty worktree is ``DirtyWorktree`` (protected and evaluator paths named first).
  ``results.tsv`` and ``.ratchet-experiment/`` are git-excluded, never dirt.
- Iteration 0 (the baseline, a ``keep`` row) pins the metric direction, the evaluator's hash,
  one digest per evaluator file and its self-reported hashes (``REPORTED_PINS``) under
  ``_engine``. A changed file, before any iteration or evaluation or on resume, stops the run
  (``EvaluatorChanged``); other reported hashes veto the candidate. Between iterations the
  worktree equals HEAD, the last ``keep``'s commit; a rejected attempt is reset to its base and
  its new untracked files deleted.
- One evaluation's time and cost limits: ``ExperimentSettings.eval_timeout_s``, ``eval_cost_usd``.
- Noise margin: ``noise_margin`` as given, else ``contract.noise_margin`` of the per-seed
  scalars, else ``contract.repeat_noise`` of ``noise_repeats`` extra baseline evaluations
  (``RATCHET_EVAL_REPEAT=k``), pinned in ``_engine.noise``; a measured margin is widened by
  ``contract.max_adjusted_margin``.
- A would-be keep that changes a ``review`` glob or lists ``metrics["needs_review"]`` is
  ``needs_review``: HEAD stays, the commit is kept on ``review/<name>/iterNNN``.
- Stops at ``max_iterations``, a spent ``budget_s`` (summed over the branch's ledger, so a
  resume continues it), ``patience`` iterations without a keep, or an exhausted proposer; an
  unreachable proposer backend raises ``ProposerUnavailable`` before the iteration changes
  anything.
- Resume after a kill (``attempt.json`` left): the stray evaluator is killed, the base commit
  restored, a ``discard`` row noted ``interrupted`` appended and the iteration run again.
  Nothing is kept without its ledger row.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from ratchet_ray.experiment.contract import REPEAT_ENV, EvalResult, repeat_noise
from ratchet_ray.experiment.evaluator import (OWN_FLAGS, EvalRun, EvaluatorChanged,
                                              FrozenEvaluator, run_evaluator, stop_stray)
from ratchet_ray.experiment.gitops import Git
from ratchet_ray.experiment.iteration import IterationSteps
from ratchet_ray.experiment.ledger import INTERRUPTED, LEDGER_FILE, Ledger, LedgerRow
from ratchet_ray.experiment.paths import PathPolicy, matches_any
from ratchet_ray.experiment.proposals import Proposer, ProposerExhausted
from ratchet_ray.experiment.state import ARTIFACTS_DIR, Attempt, RunArtifacts

log = logging.getLogger(__name__)
ENGINE_KEY = "_engine"
"""Key of the baseline row's metrics holding what the run is pinned to."""
REPORTED_PINS = ("evaluator_sha", "evaluator_config_sha256", "manifest_sha256")
"""Hashes an evaluator reports of itself in its metrics; the baseline's are pinned."""
DEFAULT_EVAL_SHARE = 0.25
DEFAULT_EVAL_COST_USD = 10.0


class ExperimentError(RuntimeError):
    """The experiment cannot start or continue; the message says what to fix."""


class DirtyWorktree(ExperimentError):
    """The target worktree has uncommitted changes."""


@dataclass
class ExperimentSettings:
    repo: Path
    editable: list[str]
    evaluator: str
    protected: list[str] = field(default_factory=list)
    evaluator_paths: list[str] = field(default_factory=list)
    """Files the evaluator is made of besides those its command names (globs or absolute paths)."""
    name: str = "default"
    spec: str | None = None
    """Spec file in the repo (goal, constraints); None = ``program.md`` when it exists."""
    max_iterations: int = 25
    budget_s: float = 3600.0
    eval_timeout_s: float | None = None
    """Per-evaluation limit; None = ``budget_s * DEFAULT_EVAL_SHARE`` (never more than what is
    left of the budget)."""
    eval_cost_usd: float | None = DEFAULT_EVAL_COST_USD
    """Per-experiment cost limit on the contract's ``metrics["cost_usd"]`` (over it: a veto);
    None = no limit."""
    review: list[str] = field(default_factory=list)
    """Editable globs a human must review: a candidate changing one is never merged
    (``needs_review``)."""
    noise_repeats: int = 2
    """Extra baseline evaluations that measure the noise when the evaluator reports fewer than
    two per-seed scalars (0: no repeats, margin 0)."""
    patience: int | None = 10
    noise_margin: float | None = None
    """Fixed margin; None = from the evaluator's per-seed scalars (``contract.noise_margin``)."""
    max_fix_attempts: int = 2
    lower_is_better: bool | None = None
    """Expected direction; None = whatever the evaluator's contract line says."""
    recent_rows: int = 8


@dataclass
class ExperimentReport:
    branch: str
    stop_reason: str
    rows: list[LedgerRow]
    best_scalar: float | None
    head: str


class ExperimentEngine(IterationSteps):
    def __init__(self, settings: ExperimentSettings, proposer: Proposer):
        s = self.settings = settings
        self.proposer = proposer
        self.git = Git(s.repo)
        self.repo = self.git.repo
        self.branch = f"experiment/{s.name}"
        spec = s.spec or ("program.md" if (self.repo / "program.md").is_file() else None)
        if spec is not None and not (self.repo / spec).is_file():
            raise ExperimentError(f"spec file {spec} not found in {self.repo}")
        self.spec_path = spec
        self.evaluator = FrozenEvaluator(self.repo, s.evaluator, s.evaluator_paths, s.editable)
        frozen = sorted(self.evaluator.in_repo | ({spec} if spec else set()))
        bad = [p for p in frozen if matches_any(p, s.editable)]
        if bad:
            raise ExperimentError(f"{', '.join(bad)} match an --editable glob, but the evaluator "
                                  "and the spec are frozen: narrow the editable globs (a file "
                                  "the evaluator command names is frozen unless it follows an "
                                  "option flag, e.g. --meta-skill FILE; the evaluator's own "
                                  f"{', '.join(OWN_FLAGS)} files and the built-in evaluator's "
                                  "code are always frozen)")
        # The import closure is protected but not refused at start: a broad editable glob
        # may cover it, and a candidate that edits one of its files is a policy violation.
        closure = sorted(self.evaluator.closure)
        self.policy = PathPolicy.of(s.editable, [*s.protected, *frozen, *closure, LEDGER_FILE,
                                                 f"{ARTIFACTS_DIR}/**"])
        self.git.exclude([f"/{LEDGER_FILE}", f"/{ARTIFACTS_DIR}/"])
        self.ledger = Ledger(self.repo / LEDGER_FILE)
        self.art = RunArtifacts(self.repo, s.name)
        self.new_rows: list[LedgerRow] = []

    # ---- start / resume -----------------------------------------------------------------------
    def _prepare(self) -> None:
        attempt = self.art.in_flight()
        changed = self.git.changed_paths()
        if changed and attempt is None:
            frozen = [p for p in changed if matches_any(p, self.policy.protected)]
            what = (f"protected/evaluator path(s) {', '.join(frozen)} are dirty" if frozen
                    else f"uncommitted changes in {', '.join(changed[:5])}")
            raise DirtyWorktree(f"{self.repo}: {what}; commit or discard them first (the "
                                "experiment needs a clean worktree)")
        if self.git.branch() != self.branch:
            if changed:
                raise DirtyWorktree(f"{self.repo} is dirty and not on {self.branch}; clean it")
            self.git.switch(self.branch, create=not self.git.has_branch(self.branch))
        if attempt is not None:
            self._recover(attempt)
        expected = self._kept_head()
        if expected and self.git.head() != expected:
            raise ExperimentError(f"{self.branch} is at {self.git.head()[:10]} but the ledger's "
                                  f"last keep is {expected[:10]}; reset the branch to it or use "
                                  "another --name")

    def _recover(self, attempt: Attempt) -> None:
        if attempt.evaluator_pgid and stop_stray(attempt.evaluator_pgid, self.repo):
            log.warning("killed the evaluator (process group %d) the interrupted run left behind",
                        attempt.evaluator_pgid)
        finished = any(r.iteration == attempt.iteration and r.note != INTERRUPTED
                       for r in self._rows())
        target = self._kept_head() if finished else attempt.base
        self.git.restore(target or attempt.base, attempt.untracked_before)
        if not finished:
            log.warning("iteration %d was interrupted; restored %s and running it again",
                        attempt.iteration, attempt.base[:10])
            self._append(LedgerRow(attempt.iteration, "discard", base_commit=attempt.base,
                                   candidate_commit=attempt.candidate, head_commit=attempt.base,
                                   note=INTERRUPTED))
        self.art.end()

    def _rows(self) -> list[LedgerRow]:
        return [r for r in self.ledger.rows() if r.branch == self.branch]

    def _final_rows(self) -> list[LedgerRow]:
        return [r for r in self._rows() if r.note != INTERRUPTED]

    def _kept_head(self) -> str:
        keeps = [r for r in self._final_rows() if r.status == "keep"]
        return keeps[-1].head_commit if keeps else ""

    def _append(self, row: LedgerRow) -> LedgerRow:
        row.branch = self.branch
        row.proposer = row.proposer or self.proposer.name
        self.ledger.append(row)
        self.new_rows.append(row)
        log.info("iteration %d: %s %s", row.iteration, row.status, row.note)
        return row

    # ---- the loop -----------------------------------------------------------------------------
    def run(self) -> ExperimentReport:
        self._prepare()
        pinned = self._pinned()
        self.digest = self.evaluator.digest()
        self.files = pinned.get("evaluator_files") or self.evaluator.file_digests()
        self._check_frozen()  # against the pinned digests, when the baseline recorded them
        legacy = "evaluator_files" not in pinned and pinned.get("evaluator_sha256")
        if legacy and legacy != self.digest:  # a ledger from before per-file digests
            raise EvaluatorChanged(f"the evaluator's files ({', '.join(map(str, self.evaluator.files()))}"
                                   f") differ from those {self.branch} started with; restore them "
                                   "or start a new experiment (--name)")
        if not any(r.iteration == 0 for r in self._final_rows()):
            self._baseline()
        reason = self._loop()
        best = self._best()
        return ExperimentReport(self.branch, reason, self.new_rows, best.scalar if best else None,
                                self.git.head())

    def _loop(self) -> str:
        s = self.settings
        while True:
            final = [r for r in self._final_rows() if r.iteration >= 1]
            if len(final) >= s.max_iterations:
                return f"iteration cap ({s.max_iterations}) reached"
            since_keep = next((i for i, row in enumerate(reversed(final)) if row.status == "keep"),
                              len(final))
            if s.patience and since_keep >= s.patience:
                return f"no improvement in the last {s.patience} iterations"
            if self._remaining() <= 0:
                return f"budget of {s.budget_s:.0f} s spent"
            iteration = max((r.iteration for r in self._final_rows()), default=0) + 1
            self._check_frozen()  # before the proposer sees anything of this iteration
            try:
                self._iterate(iteration)
            except ProposerExhausted as exc:
                return f"proposer exhausted: {exc}"

    def _remaining(self) -> float:
        return self.settings.budget_s - sum(r.wall_s for r in self._rows())

    def _best(self) -> EvalResult | None:
        keeps = [r for r in self._final_rows() if r.status == "keep" and r.scalar is not None]
        if not keeps:
            return None
        k = keeps[-1]
        return EvalResult(k.scalar, k.vetoes, k.metrics, k.seeds, self.direction)

    def _pinned(self) -> dict:
        """What the baseline row pinned the run to: metric direction and evaluator hash."""
        base = [r for r in self._final_rows() if r.iteration == 0 and r.status == "keep"]
        return base[0].metrics.get(ENGINE_KEY, {}) if base else {}

    @property
    def direction(self) -> bool:
        pinned = self._pinned()
        if "lower_is_better" in pinned:
            return bool(pinned["lower_is_better"])
        return bool(self.settings.lower_is_better)

    def _baseline(self) -> None:
        head = self.git.head()
        before = sorted(self.git.untracked())
        self.art.begin(Attempt(0, head, before))
        run = self._evaluate(0, 1)
        self.git.restore(head, before)
        if run.outcome != "ok":
            self._append(LedgerRow(0, "crash", base_commit=head, head_commit=head,
                                   wall_s=run.wall_s, note=run.problem, log=self.art.rel(run.log)))
            self.art.end()
            # run.problem names the log already; the tail says why (e.g. 127: command not found)
            tail = run.tail().strip()[-600:]
            raise ExperimentError(f"the baseline evaluation of {head[:10]} failed: {run.problem}; "
                                  "fix the evaluator command"
                                  + (f"; its output ends with:\n{tail}" if tail else ""))
        result = run.result
        noise, wall = self._measure_noise(head, before, result)
        wanted = self.settings.lower_is_better
        if wanted is not None and wanted != result.lower_is_better:
            self.art.end()
            raise ExperimentError(f"the evaluator reports lower_is_better={result.lower_is_better}"
                                  f" but the run was started with lower_is_better={wanted}")
        engine = {"lower_is_better": result.lower_is_better, "evaluator_sha256": self.digest,
                  "evaluator_files": self.files,
                  "reported": {k: result.metrics[k] for k in REPORTED_PINS if k in result.metrics}}
        if noise is not None:
            engine["noise"] = noise
        metrics = {**result.metrics, ENGINE_KEY: engine}
        self._append(LedgerRow(0, "keep", base_commit=head, candidate_commit=head,
                               head_commit=head, scalar=result.scalar, vetoes=result.vetoes,
                               metrics=metrics, seeds=result.seeds, wall_s=run.wall_s + wall,
                               noise_margin=None if noise is None else noise["margin"],
                               note="baseline", log=self.art.rel(run.log)))
        self.art.end()

    def _measure_noise(self, head: str, before: list[str], result: EvalResult
                       ) -> tuple[dict | None, float]:
        """The baseline's repeats (engine contract): ``({"scalars", "margin"}, wall_s)``, or
        ``(None, 0.0)`` when a fixed margin or per-seed scalars make them unnecessary."""
        s = self.settings
        if s.noise_margin is not None or len(result.per_seed()) >= 2 or s.noise_repeats <= 0:
            return None, 0.0
        scalars, wall = [result.scalar], 0.0
        for repeat in range(1, s.noise_repeats + 1):
            run = self._evaluate(0, 1 + repeat, repeat=repeat)
            self.git.restore(head, before)
            wall += run.wall_s
            if run.outcome != "ok":
                self._append(LedgerRow(0, "crash", base_commit=head, head_commit=head,
                                       wall_s=run.wall_s, note=f"noise repeat {repeat}: "
                                       f"{run.problem}", log=self.art.rel(run.log)))
                self.art.end()
                raise ExperimentError(f"noise repeat {repeat} of the baseline failed: "
                                      f"{run.problem}; the evaluator must run again with "
                                      f"{REPEAT_ENV}={repeat} (or pass --noise-margin)")
            scalars.append(run.result.scalar)
        margin = repeat_noise(scalars)
        log.info("baseline noise over %d evaluations: margin %.6g", len(scalars), margin)
        return {"scalars": scalars, "margin": margin}, wall

    def _check_frozen(self) -> None:
        """``EvaluatorChanged`` naming every evaluator file that differs from the pinned ones."""
        changed = self.evaluator.changed(self.files)
        if changed:
            raise EvaluatorChanged(f"the evaluator's file(s) {', '.join(changed)} changed since "
                                   f"{self.branch} started; the yardstick is frozen: restore "
                                   "them, or start a new experiment (--name)")

    def _moved_yardstick(self, result: EvalResult) -> list[str]:
        """Vetoes for the self-reported hashes that differ from the baseline's (``REPORTED_PINS``)."""
        pinned = self._pinned().get("reported") or {}
        return [f"the evaluator reports {key} {str(result.metrics.get(key))[:16]}, not the "
                f"baseline's {str(value)[:16]}: the candidate changed the evaluator's code or "
                "the config it resolves" for key, value in sorted(pinned.items())
                if result.metrics.get(key) != value]

    def _evaluate(self, iteration: int, try_no: int, repeat: int = 0) -> EvalRun:
        self._check_frozen()
        s = self.settings
        per_experiment = (s.eval_timeout_s if s.eval_timeout_s is not None
                          else s.budget_s * DEFAULT_EVAL_SHARE)
        return run_evaluator(self.evaluator.command, self.repo,
                             self.art.log_path(iteration, try_no),
                             min(self._remaining(), per_experiment),
                             on_start=self.art.record_evaluator,
                             env={REPEAT_ENV: str(repeat)} if repeat else None)
