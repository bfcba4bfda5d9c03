"""One iteration of the experiment loop (a mixin of ``ExperimentEngine``; see ``engine``).

propose -> apply -> vet the changed paths (``policy_violation``: restored, no commit) -> commit
the candidate -> evaluator unchanged? -> evaluate (crash/timeout: up to ``max_fix_attempts``
fixes, then ``crash``) -> keep (no veto, a gain beyond the noise margin) / ``needs_review`` /
revert / veto / crash -> the ledger row. Every path out of an attempt leaves the worktree equal
to HEAD, and HEAD equal to the last kept commit.
"""

from __future__ import annotations

import logging
import time

from ratchet_ray.experiment.contract import improves, max_adjusted_margin, noise_margin
from ratchet_ray.experiment.evaluator import EvalRun, EvaluatorChanged
from ratchet_ray.experiment.ledger import LedgerRow
from ratchet_ray.experiment.paths import PolicyError, matches_any
from ratchet_ray.experiment.proposals import (Proposal, ProposalContext, ProposalError,
                                              ProposerUnavailable, apply_proposal)
from ratchet_ray.experiment.state import Attempt

log = logging.getLogger(__name__)
MAX_FILE_CHARS = 20_000
"""Editable files are shown to the proposer up to this many characters each."""


class IterationSteps:
    """The per-iteration steps; the engine supplies git, policy, ledger, artifacts, proposer."""

    def _context(self, iteration: int) -> ProposalContext:
        files = {path: (self.repo / path).read_text(errors="replace")[:MAX_FILE_CHARS]
                 for path in sorted(self.git.tracked()) if self.policy.allows(path)}
        spec = (self.repo / self.spec_path).read_text() if self.spec_path else ""
        best = self._best()
        return ProposalContext(iteration, spec, files, self._rows()[-self.settings.recent_rows:],
                               best.scalar if best else None, self.direction)

    def _apply(self, proposal: Proposal) -> str:
        """Apply and vet ``proposal``; '' when it is allowed, else the violation text."""
        try:
            apply_proposal(self.repo, proposal, self.git.apply_diff)
        except PolicyError as exc:
            return str(exc)
        return "; ".join(self.policy.violations(self.git.changed_paths()))

    def _iterate(self, iteration: int) -> None:
        started = time.monotonic()
        base, before = self.git.head(), sorted(self.git.untracked())
        attempt = Attempt(iteration, base, before)
        ctx = self._context(iteration)
        row = LedgerRow(iteration, "discard", base_commit=base, head_commit=base)
        try:
            proposal = self.proposer.propose(ctx)
        except ProposalError as exc:
            row.note = f"no usable proposal: {exc}"
            self._finish(row, started)
            return
        row.reasoning = proposal.reasoning
        row.metrics = {"proposal": proposal.extra} if proposal.extra else {}
        self.art.begin(attempt)
        try:
            self._attempt(proposal, attempt, row)
        except EvaluatorChanged as exc:
            self.git.restore(attempt.base, before)
            row.status, row.note = "discard", f"run stopped: {exc}"
            self._finish(row, started)
            raise
        self._finish(row, started)

    def _attempt(self, proposal: Proposal, attempt: Attempt, row: LedgerRow) -> None:
        iteration, before = attempt.iteration, attempt.untracked_before
        if self._candidate(proposal, attempt, row, try_no=1):
            run = self._evaluate(iteration, 1)
            row.log = self.art.rel(run.log)
            unasked = ""  # why the proposer gave no fix (recorded in the row's note)
            while run.outcome != "ok" and row.fix_attempts < self.settings.max_fix_attempts:
                row.fix_attempts += 1
                try:
                    fix = self.proposer.fix(self._context(iteration),
                                            f"{run.problem}\n{run.tail()}", row.fix_attempts)
                except (ProposalError, ProposerUnavailable) as exc:
                    # The candidate is committed and in flight: end it as a crash; an unavailable
                    # backend then stops the run at the next proposal.
                    log.warning("iteration %d: no fix proposal: %s", iteration, exc)
                    unasked, fix = f"fix {row.fix_attempts} not proposed: {exc}", None
                if fix is None:
                    break
                row.reasoning = f"{row.reasoning} [fix {row.fix_attempts}: {fix.reasoning}]"
                self.git.restore(attempt.candidate, before)  # drop the crashed run's leftovers
                if not self._candidate(fix, attempt, row, try_no=row.fix_attempts + 1):
                    if row.status == "crash":  # the fix itself was unusable
                        row.note = (f"after {row.fix_attempts} fix attempt(s): {run.problem}; "
                                    f"last fix {row.note}")
                    return
                run = self._evaluate(iteration, row.fix_attempts + 1)
                row.log = self.art.rel(run.log)
            self._decide(run, attempt, row)
            if unasked:
                row.note = f"{row.note}; {unasked}" if row.note else unasked

    def _candidate(self, proposal: Proposal, attempt: Attempt, row: LedgerRow, try_no: int) -> bool:
        """Apply ``proposal`` and commit it; False (row filled, tree restored) when it failed."""
        try:
            violation = self._apply(proposal)
            problem = violation or ("" if self.git.changed_paths() else "the change is empty")
        except ProposalError as exc:
            violation, problem = "", f"not applied: {exc}"
        if problem:  # an unusable first proposal is a discard, an unusable fix a crash
            self.git.restore(attempt.base, attempt.untracked_before)
            row.status = ("policy_violation" if violation
                          else "discard" if try_no == 1 else "crash")
            row.note = problem
            return False
        first_line = (proposal.reasoning.strip().splitlines() or ["(no reasoning)"])[0][:72]
        tag = f"#{attempt.iteration}" + (f" fix {try_no - 1}" if try_no > 1 else "")
        # A fix amends the candidate: a kept iteration is one commit on the branch.
        attempt.candidate = self.git.commit_all(f"experiment {self.settings.name} {tag}: "
                                                f"{first_line}", amend=try_no > 1)
        self.art.begin(attempt)
        patch = self.art.save_patch(attempt.iteration, try_no,
                                    self.git.diff(attempt.base, attempt.candidate))
        row.candidate_commit, row.patch = attempt.candidate, self.art.rel(patch)
        return True

    def _decide(self, run: EvalRun, attempt: Attempt, row: LedgerRow) -> None:
        if run.outcome != "ok":
            row.status = "crash"
            row.note = (f"after {row.fix_attempts} fix attempt(s): " if row.fix_attempts else "") \
                + run.problem
            self.git.restore(attempt.base, attempt.untracked_before)
            return
        result, best = run.result, self._best()
        row.scalar, row.vetoes, row.seeds = result.scalar, result.vetoes, result.seeds
        row.metrics = {**row.metrics, **result.metrics}
        row.best_scalar = best.scalar
        if result.lower_is_better != self.direction:
            row.status, row.note = "crash", "the evaluator changed its metric direction"
            self.git.restore(attempt.base, attempt.untracked_before)
            return
        row.noise_margin = self._margin(best, result)
        vetoes = list(result.vetoes) + self._moved_yardstick(result)
        cost, cap = result.metrics.get("cost_usd"), self.settings.eval_cost_usd
        if cap is not None and isinstance(cost, (int, float)) and cost > cap:
            vetoes.append(f"cost ${cost:.4f} is over the per-experiment budget ${cap:.4f}")
        review = self._review(attempt, result)
        if vetoes:
            row.vetoes = vetoes
            row.status, row.note = "veto", "vetoed: " + "; ".join(vetoes)
        elif not improves(result.scalar, best.scalar, row.noise_margin, self.direction):
            row.status = "revert"
            row.note = f"no improvement beyond the noise margin {row.noise_margin:.6g}"
        elif review:
            ref = f"review/{self.settings.name}/iter{attempt.iteration:03d}"
            self.git.run("branch", "-f", ref, attempt.candidate)
            row.status = "needs_review"
            row.note = (f"improves, but a human must review it before it is merged ({ref}): "
                        + "; ".join(review))
        else:
            row.status = "keep"
        kept = row.status == "keep"
        self.git.restore(attempt.candidate if kept else attempt.base, attempt.untracked_before)

    def _margin(self, best, result) -> float:
        """The noise margin a gain must beat (``engine`` contract: fixed, per-seed, baseline),
        a measured one widened for the best being the maximum of the evaluations so far."""
        if self.settings.noise_margin is not None:
            return self.settings.noise_margin
        if len(best.per_seed()) >= 2 and len(result.per_seed()) >= 2:
            margin = noise_margin(best, result)
        else:
            measured = self._pinned().get("noise") or {}
            margin = float(measured.get("margin") or 0.0)
        competed = sum(1 for r in self._final_rows()
                       if r.status in ("keep", "revert", "needs_review") and r.scalar is not None)
        return max_adjusted_margin(margin, competed)

    def _review(self, attempt: Attempt, result) -> list[str]:
        """Why this candidate needs a human: review paths it changed, the evaluator's reasons."""
        changed = self.git.run("diff", "--name-only", attempt.base, attempt.candidate
                               ).stdout.split()
        paths = [p for p in changed if matches_any(p, self.settings.review)]
        return ([f"changes review path(s) {', '.join(paths)}"] if paths else []) + result.review()

    def _finish(self, row: LedgerRow, started: float) -> None:
        row.head_commit = self.git.head()
        row.wall_s = time.monotonic() - started
        self._append(row)
        self.art.end()

