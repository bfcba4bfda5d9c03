"""The phases of one round, in order: eval, rollback, train, critic, metasynth, synth, curate,
snapshot. Each is ``phase(ctx, round_, summary) -> note`` and fills its part of the
``RoundSummary``; what each skips on a rerun: docs/architecture.md, the phase table.

Contracts:
- Snapshots: ``checkpoints/round_NN`` is the bank round NN starts from (the driver writes round
  00; round R's snapshot writes R+1), so the bank that earned a round's eval pass@1 is exactly
  that round's checkpoint.
- Rollback reads this round's eval pass@1, so it runs right after eval; on firing it restores
  the best round's bank, which train then uses, and skips this round's metasynth, synth and
  curate. Its decision is a pure function of the eval history. Only that snapshot is ever read:
  others may be pruned; firing with it missing, or damaged (``checkpoints.snapshot_problem``:
  files its manifest lists missing, the manifest garbled or another run's, a file where it
  belongs), is a ``RunStopped`` naming it and the fix.
- Resume: metasynth, synth and curate (not idempotent) write their output file last and are
  skipped, the summary refilled from it, when it exists; metasynth and synth mark their start
  first, so a crashed attempt is replayed from the bank's events (``replay``), never rerun.
- Curate applies the Curator's score rule, its tampering rule (a skill retires in the round its
  routed train attempt is first graded as tampering) and the cheat rule (a skill whose routed
  attempt passed an impossible twin, ``loop.twins``, ``governance.cheat_probe``).
- ``llm_call`` rows are written for every reply of every role.
- ``LoopContext`` lives in ``loop.context`` (the steps the phases call import it too).
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

import ray

from actors.draining import call_one, drain
from actors.pools import PoolResult, ResilientPool
from actors.synthesizer import SynthesizerProcess
from ratchet_ray.bank.checkpoints import (CheckpointError, available_rounds, checkpoint_dir,
                                          snapshot_problem)
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.queries import recent_verdicts
from ratchet_ray.evidence.tampering import TAMPERING_REASON
from ratchet_ray.governance.cheat_probe import CHEAT_REASON
from ratchet_ray.llm.accounting import llm_call_row
from ratchet_ray.loop.context import LoopContext
from ratchet_ray.loop import replay
from ratchet_ray.loop.execute import EvidenceSink, SplitRunner
from ratchet_ray.loop.breaker import RunStopped
from ratchet_ray.loop.rundir import bench_json, resume_advice
from ratchet_ray.loop.twins import grade_twins
from ratchet_ray.roles.critic import CriticWorker, is_critiquable
from ratchet_ray.roles.solver import BankSnapshot
from ratchet_ray.types import BenchResult, Capsule, RoundSummary, SkillStatus, Task

CRITIC_BATCH = 4
ROLLBACK_FILE = "rollback.json"
META_FILE, SYNTH_FILE, CURATE_FILE = "synth_metaskills.json", "synth_skills.json", "curate.json"
log = logging.getLogger(__name__)


# ---- eval / rollback / train ------------------------------------------------------------------
def routable_skills(ctx: LoopContext, split: str, round_: int) -> list:
    """ACTIVE skills; on a train pass during the bootstrap period (``router.bootstrap_rounds``)
    CANDIDATE skills too, so they accumulate evidence. Eval only ever routes ACTIVE skills."""
    active = ray.get(ctx.actors.bank.active.remote())
    if split != "train" or round_ >= ctx.config.router.bootstrap_rounds:
        return active
    every = ray.get(ctx.actors.bank.all.remote())
    return [*active, *(s for s in every if s.status is SkillStatus.CANDIDATE)]


def _run_split(ctx: LoopContext, tasks: list[Task], split: str, round_: int) -> BenchResult:
    # The snapshot travels with every Solver call (one ``ray.put``), so no Solver holds state a
    # replacement would need. Actors that died idle are replaced now, before a job reaches them
    # (a job lost that way would be booked as a lost attempt).
    bank = ray.put(BankSnapshot.of(routable_skills(ctx, split, round_)))
    ctx.actors.solvers.heal()
    ctx.actors.graders.heal()
    ctx.progress.set_total(len(tasks))

    def shown(capsule: Capsule) -> None:
        ctx.progress.advance(passed=capsule.passed, failed=capsule.infra_failure,
                             tokens=capsule.input_tokens + capsule.output_tokens,
                             cost_usd=capsule.cost_usd)

    runner = SplitRunner(run_id=ctx.run.run_id, arm=ctx.config.arm, seed=ctx.config.seed,
                         store=ctx.store, solvers=ctx.actors.solvers, graders=ctx.actors.graders,
                         on_capsule=shown, max_failure_rate=ctx.config.infra.max_failure_rate,
                         probe_fraction=(ctx.config.curator.counterfactual.fraction
                                         if split == "train" else 0.0),
                         budget=ctx.budget, flush_every=ctx.config.infra.evidence_flush_every,
                         bank=bank, shared_inputs=ctx.shared_inputs)
    try:
        bench = runner.run(tasks, split, round_)
    finally:
        record_lost_attempts(ctx, round_, ctx.actors.solvers)
        ctx.actors.graders.take_lost()  # no LLM call to book: each capsule notes its lost grades
    ctx.run.write_round_json(round_, f"{split}.json", bench_json(bench))
    return bench


def record_lost_attempts(ctx: LoopContext, round_: int, pool: ResilientPool) -> None:
    """One failed ``llm_call`` row (role: the pool's name) per attempt ``pool``, the solvers or
    the critics, lost with its actor: what it spent died with the process, but the attempt (and
    that it was lost) stays in the evidence."""
    lost = pool.take_lost()
    if not lost:
        return
    backend, model = ctx.config.llm.backend, ctx.config.llm.model or ""
    rows = [llm_call_row(None, run_id=ctx.run.run_id, round_=round_, role=pool.name, ok=False,
                         backend=backend, model=model,
                         error=f"lost: the {pool.name} actor died running "
                               f"{_lost_work(a.item)} (attempt {a.attempt}); "
                               f"tokens unknown: {a.error}")
            for a in lost]
    ctx.store.append("llm_call", round_, rows)


def _lost_work(item: Any) -> Any:
    """A solver's task id, or the task ids of a critic batch's ``(task, capsule, skill)``s."""
    if isinstance(item, list):
        return ", ".join(capsule.task_id for _task, capsule, _skill in item)
    return getattr(item, "task_id", item)


def evaluate(ctx: LoopContext, round_: int, summary: RoundSummary) -> str:
    summary.eval = _run_split(ctx, ctx.eval_tasks, "eval", round_)
    return f"pass@1 {summary.eval.pass_at_1:.3f}"


def rollback_check(ctx: LoopContext, round_: int, summary: RoundSummary) -> str:
    decision = ctx.gate.observe(round_, summary.eval.pass_at_1 if summary.eval else 0.0)
    record: dict[str, Any] = asdict(decision)
    if decision.fire:
        try:
            record["changed"] = ray.get(ctx.actors.bank.restore.remote(
                decision.restore_round, current_round=round_, reason="rollback"))
        except FileNotFoundError as exc:  # Ray's error is also the cause's class
            if decision.restore_round in available_rounds(ctx.run.path):
                raise  # something else went missing (the run dir itself: RunDir.lost says)
            raise RunStopped(missing_snapshot(ctx.run.path, round_, decision.restore_round)
                             ) from exc
        except CheckpointError as exc:  # files missing, a manifest garbled or another run's
            raise RunStopped(damaged_snapshot(ctx.run.path, round_, decision.restore_round,
                                              getattr(exc, "cause", None) or exc)) from exc
        summary.rollback_fired, summary.restored_round = True, decision.restore_round
        log.warning("round %d: rollback fired; restored the bank of round %d",
                    round_, decision.restore_round)
    ctx.run.write_round_json(round_, ROLLBACK_FILE, record)
    if decision.fire:
        return f"FIRED: restored round {decision.restore_round}"
    return f"regressed streak {decision.regressed_streak}"


def missing_snapshot(run: Path, round_: int, restore_round: int) -> str:
    """Why the rollback gate of ``round_`` cannot restore ``restore_round``'s bank, and the fix.
    Only the best round's snapshot is ever restored, so pruning the others is harmless."""
    return (f"round {round_}: the rollback gate fired and must restore the bank of round "
            f"{restore_round} (the best round), but its snapshot "
            f"{checkpoint_dir(run, restore_round)} is missing (snapshots left: rounds "
            f"{available_rounds(run) or 'none'}); put it back from a copy of the run dir and "
            f"continue with {resume_advice(run)} (other rounds' snapshots may be pruned: only "
            "the best round's is restored)")


def damaged_snapshot(run: Path, round_: int, restore_round: int, error: BaseException) -> str:
    """Why the rollback gate of ``round_`` cannot restore ``restore_round``'s damaged snapshot
    (``error``: the ``CheckpointError``, as raised in the bank), and the fix, on one line."""
    problem = snapshot_problem(run, restore_round, run.name) or " ".join(str(error).split())
    return (f"round {round_}: the rollback gate fired and must restore the bank of round "
            f"{restore_round} (the best round), but {problem}; a restore from it would bring "
            f"back another bank than that round's, so put the snapshot back from a copy of the "
            f"run dir and continue with {resume_advice(run)}")


def train(ctx: LoopContext, round_: int, summary: RoundSummary) -> str:
    summary.train = _run_split(ctx, ctx.train_tasks, "train", round_)
    twins = grade_twins(ctx, round_)  # the cheat probe (loop.twins), after the split
    return f"pass@1 {summary.train.pass_at_1:.3f}" + (f", {twins} impossible twins" if twins
                                                      else "")


# ---- critic ----------------------------------------------------------------------------------
class CriticIncomplete(RuntimeError):
    """Train failures left without a verdict for a reason outside the model's answer (its actor
    died ``max_attempts`` times, or the backend failed); the verdicts written stay, and running
    the phase again reviews exactly the rest."""


def _capsules(ctx: LoopContext, query: str, **params: Any) -> list[Capsule]:
    with ctx.store.connect() as con:
        return [Capsule(**row) for row in nq.fetch_dicts(con, query, **params)]


def critic(ctx: LoopContext, round_: int, summary: RoundSummary) -> str:
    # First attempts only: a counterfactual probe measures a skill, it is not substrate.
    pending = [c for c in _capsules(ctx, "unreviewed_train_failures", round=round_)
               if is_critiquable(c)]
    skills = {s.id: s for s in ray.get(ctx.actors.bank.all.remote())}
    items = [(ctx.task(c.task_id), c, skills.get(c.skill_id)) for c in pending]
    ctx.progress.set_total(len(items))
    errors: list[str] = []  # refusals: the model answered, and no verdict could be read
    unreviewed: list[str] = []  # no answer at all (module contracts): the phase must run again
    # Verdicts and their calls are written in parts of ``infra.evidence_flush_every`` verdicts
    # (and whatever is left when the phase ends, even on an error): a killed driver redoes at
    # most one part's reviews on resume (it skips capsules that have a verdict).
    sink = EvidenceSink(ctx.store, round_, flush_every=ctx.config.infra.evidence_flush_every,
                        kind="verdict")

    def handle(_pool: ResilientPool, result: PoolResult) -> None:
        if not result.ok:  # the batch's actor died max_attempts times
            unreviewed.extend(f"{item[1].capsule_id} ({item[1].task_id}): {result.exit_status}: "
                              f"{result.error}" for item in result.item)
            for _ in result.item:
                ctx.progress.advance(failed=True)
            return
        errors.extend(r.error for r in result.value if r.verdict is None and not r.retryable)
        unreviewed.extend(f"{item[1].capsule_id} ({item[1].task_id}): {r.error}"
                          for item, r in zip(result.item, result.value) if r.retryable)
        sink.add_calls(ctx.charge_calls(round_, "critic",
                                        [reply for r in result.value for reply in r.replies]))
        for r in result.value:
            if r.verdict is not None:
                sink.add(r.verdict)
            ctx.progress.advance(failed=r.verdict is None)
        if ctx.budget is not None and ctx.budget.exhausted:  # batches in flight finish
            cancelled.extend(ctx.actors.critics.cancel_queued())

    cancelled: list[Any] = []
    for start in range(0, len(items), CRITIC_BATCH):
        ctx.actors.critics.submit(CriticWorker.critique_batch, items[start:start + CRITIC_BATCH])
    try:
        drain([ctx.actors.critics], handle)
    finally:
        sink.flush()
        record_lost_attempts(ctx, round_, ctx.actors.critics)
    if cancelled:  # resume reviews exactly the capsules without a verdict
        raise ctx.budget.error(f"in round {round_} critic ({sum(map(len, cancelled))} of "
                               f"{len(items)} failures not reviewed)")
    for error in errors:
        log.warning("round %d critic: %s", round_, error)
    if unreviewed:
        raise CriticIncomplete(f"{len(unreviewed)} of {len(items)} train failures got no "
                               f"verdict, e.g. {unreviewed[0][:1000]}")
    with ctx.store.connect() as con:
        summary.verdicts = nq.fetch_one(con, "verdicts_of_round", round=round_)[0]
    return f"{summary.verdicts} verdicts, {len(errors)} without one"


# ---- metasynth / synth / curate / snapshot ---------------------------------------------------
def _window(ctx: LoopContext, round_: int) -> list:
    with ctx.store.connect() as con:
        return recent_verdicts(con, round_, ctx.config.synth.window_rounds)


def metasynth_due(config: LoopConfig, round_: int, *, train_tasks: int = 0,
                  last_refresh: int = -1) -> bool:
    """Meta-synth runs after every ``meta.refresh_every_rounds`` rounds, or once
    ``meta.refresh_every_tasks`` train tasks have been attempted since the last meta-synth round
    ``last_refresh`` (-1: the start), ``train_tasks`` per round. Never in the Default."""
    if not config.meta.enabled:
        return False
    tasks_since = (round_ - last_refresh) * train_tasks
    return ((round_ + 1) % config.meta.refresh_every_rounds == 0
            or tasks_since >= config.meta.refresh_every_tasks)


def last_metasynth_round(ctx: LoopContext, round_: int) -> int:
    """The last round before ``round_`` whose meta-synth ran (its file exists), else -1."""
    return next((r for r in range(round_ - 1, -1, -1)
                 if ctx.run.read_round_json(r, META_FILE) is not None), -1)


def metasynth(ctx: LoopContext, round_: int, summary: RoundSummary) -> str:
    due = metasynth_due(ctx.config, round_, train_tasks=len(ctx.train_tasks),
                        last_refresh=last_metasynth_round(ctx, round_))
    if not due or summary.rollback_fired:
        return "not due" if not summary.rollback_fired else "skipped: rollback"
    done = (ctx.run.read_round_json(round_, META_FILE)
            or replay.recover_metasynth(ctx.run, ctx.store, round_, META_FILE))
    if done is None:
        replay.begin(ctx.run, round_, META_FILE)  # a cut attempt is replayed, never rerun
        bank, suite = ctx.actors.bank, ctx.config.suite
        current = ray.get(bank.ensure_default_metaskill.remote(suite, round_=round_))
        result = call_one(ctx.actors.synthesizer, SynthesizerProcess.refresh_metaskill, current,
                          _window(ctx, round_), round_)
        ctx.append_calls(round_, "metasynth", result.replies)  # before the bank changes
        replay.mark_calls_recorded(ctx.run, round_, META_FILE)
        created = None
        if result.metaskill is not None:
            ray.get(bank.add_metaskill.remote(result.metaskill, round_=round_))
            created = result.metaskill.id
        done = {"created": created, "replaced": current.id, "error": result.error}
        ctx.run.write_round_json(round_, META_FILE, done)
    summary.metaskill_created = done["created"]
    return f"new meta-skill {done['created']}" if done["created"] else f"none: {done['error']}"


def synth(ctx: LoopContext, round_: int, summary: RoundSummary) -> str:
    if not ctx.config.synth.enabled:
        return "disabled (--no-synth)"
    if summary.rollback_fired:
        return "skipped: rollback"
    done = (ctx.run.read_round_json(round_, SYNTH_FILE)
            or replay.recover_synth(ctx.run, ctx.store, round_, SYNTH_FILE))
    if done is None:
        replay.begin(ctx.run, round_, SYNTH_FILE)  # a cut attempt is never doubled
        bank = ctx.actors.bank
        verdicts = _window(ctx, round_)
        every = ray.get(bank.all.remote())
        meta = ray.get(bank.ensure_default_metaskill.remote(ctx.config.suite, round_=round_))
        ids = sorted({v.capsule_id for v in verdicts})
        capsules = {c.capsule_id: c for c in _capsules(
            ctx, "capsules_by_id", ids=ids)} if ids else {}
        outcome = replay.batched(  # its skills commit with their events and llm_calls, or not
            bank, ctx.run, round_, SYNTH_FILE, lambda: call_one(
                ctx.actors.synthesizer, SynthesizerProcess.run, verdicts, [s for s in every if s.is_active], meta,
                bank, round_, capsules=capsules, known_ids=[s.id for s in every]),
            lambda result: ctx.append_calls(round_, "synthesizer", result.replies))
        done = {k: v for k, v in asdict(outcome).items() if k != "replies"}
        done["verdicts_in_window"] = len(verdicts)
        ctx.run.write_round_json(round_, SYNTH_FILE, done)
    summary.skills_created = list(done["created"])
    summary.skills_evicted = list(done["evicted"])
    summary.skills_skipped = list(done["skipped_clusters"])
    refined = f" ({len(done['refined'])} revisions)" if done.get("refined") else ""
    return (f"+{len(done['created'])} skills{refined}, "
            f"{len(done['skipped_clusters'])} clusters already covered, "
            f"{len(done['duplicates'])} duplicates, {len(done['failed'])} failed")


def curate(ctx: LoopContext, round_: int, summary: RoundSummary) -> str:
    if summary.rollback_fired:
        return "skipped: rollback"
    done = ctx.run.read_round_json(round_, CURATE_FILE)
    if done is None:
        decisions = ray.get(ctx.actors.bank.curate.remote(round_))
        done = {"decisions": [d.to_dict() for d in decisions]}
        ctx.run.write_round_json(round_, CURATE_FILE, done)
    retired = [d for d in done["decisions"] if d["action"] == "retire"]
    summary.skills_retired = [d["skill_id"] for d in retired]
    # The Curator's tampering and cheat rules: said loudly, not just counted.
    tampered = [d for d in retired if d["reason"].startswith(f"{TAMPERING_REASON}:")]
    cheated = [d for d in retired if d["reason"].startswith(f"{CHEAT_REASON}:")]
    for d in [*tampered, *cheated]:
        log.warning("round %d: skill %s retired: %s", round_, d["skill_id"], d["reason"])
    extra = f" ({len(tampered)} for tampering)" if tampered else ""
    extra += f" ({len(cheated)} for passing an impossible twin)" if cheated else ""
    return f"{len(summary.skills_retired)} retired{extra} of {len(done['decisions'])} reviewed"


def snapshot(ctx: LoopContext, round_: int, summary: RoundSummary) -> str:
    ray.get(ctx.actors.bank.snapshot.remote(round_ + 1))  # the bank the next round starts from
    counts = ray.get(ctx.actors.bank.status_counts.remote())
    summary.active_skills, summary.deprecated_skills = counts["active"], counts["deprecated"]
    return f"{summary.active_skills} active, {summary.deprecated_skills} deprecated"
