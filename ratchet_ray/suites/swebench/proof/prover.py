"""How the SWE-bench grader proves a resolution (``differential``): the instance's gold record,
the outcomes compared with it, and canary sessions, each in a fresh container run by the
session runner the grader hands over.

``DifferentialProof.grade(ctx, patch, log_dir, log, deadline)`` -> ``(grade, real session,
proven)``: the gold record first (made now when none is stored), then the real session and
``k`` canary sessions in a random order, started together (``order``: those not yet started are
skipped once one shows the real session cannot resolve). A resolution is compared with gold and
proven by the canaries (``differential.judge_canaries``; disagreements on other tests refereed,
``spread.settle``); an unresolved real session is still ``test_tampering`` when a canary beside
it is caught. The gold patch itself (trusted) runs its real session first, which makes a missing
record. No runner the grader reads, a gold record that does not resolve or keeps no mutant, no
gold patch: the real session alone (its resolution then ``gold_unresolved`` /
``gold_unavailable``). ``proven``: whether canary sessions ran. ``record_for``,
``outside_a_grade``, ``store()`` and ``records_lock`` are what ``twin.TwinGrading`` builds on.
"""

from __future__ import annotations

import itertools
import random
import secrets
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

from ratchet_ray.storage.artifacts import Artifacts
from ratchet_ray.suites.swebench.dataset import load_instances, normalize_instance
from ratchet_ray.suites.swebench.proof.differential import (
    MISSING, PASSING, Session, compare_with_gold, draw, graded, judge_canaries, judge_grade,
    planted, seen, with_unproven)
from ratchet_ray.suites.swebench.proof.order import Plan, primary_blocked, run_in_order, shuffled
from ratchet_ray.suites.swebench.proof.spread import settle
from ratchet_ray.suites.swebench.proof.twin_record import BASE_PATCH
from ratchet_ray.suites.swebench.proof.gold import GoldRecord, GoldStore, default_folder
from ratchet_ray.suites.swebench.grading_support import Deadline, InstanceLog, publish_folder
from ratchet_ray.suites.swebench.docker.images import InstanceImages
from ratchet_ray.suites.swebench.docker.infra import InfraFailure
from ratchet_ray.suites.swebench.proof.mutants import (
    Final, Misplaced, Mutant, apply_all, at_check, draw_kept)
from ratchet_ray.suites.swebench.integrity.verdict import (
    Forgery, junit_failures, junit_statuses, resolve)
from ratchet_ray.suites.swebench.settings import GradingLimits, SwebenchSettings
from ratchet_ray.types import GradeResult


@dataclass(frozen=True)
class Context:
    """What every session of one grade shares: the instance, its image (held by the grade) and
    swebench's test spec; ``removals``: a ``docker.container.Removals`` the sessions hand their
    containers to (waited for before the grade ends), None to remove each as it ends."""

    instance: dict
    images: InstanceImages
    image: str
    spec: Any
    runner: str | None
    options_form: bool
    removals: Any = None


def _settle_cost(sessions: list[Session]) -> str:
    """The cost line's part for the referee and replacement sessions a grade's settling ran."""
    if not sessions:
        return ""
    return (f"; {len(sessions)} referee and replacement session(s) "
            f"{sum(x.seconds for x in sessions):.1f}s summed")


def junit_graded(junit: bytes | None, tests: list[str], options_form: bool) -> dict[str, str]:
    """Each graded test's status in the JUnit report (``MISSING`` without one; a non-JUnit report
    reads as none: the session's own verdict has refused it)."""
    try:
        statuses = junit_statuses(junit) if junit is not None else {}
    except Forgery:
        statuses = {}
    return {t: resolve(t, statuses, options_form) or MISSING for t in tests}


def failures_of(runner: str | None, junit: bytes | None, test_log: str, tests: list[str],
                options_form: bool) -> dict[str, str]:
    """Each graded test -> its failure's text (``Session.failures``). Under pytest, its traceback
    in the JUnit report, for the tests that failed there (none without a report, or for one
    that is not JUnit XML). Under a runner read from its log alone (django's, sympy's), the
    session's whole test log when it holds a Python traceback: the log names tests in the
    runner's own spelling, not by graded id, and ``mutants.failing_lines`` keeps only the frames
    within a test's own lines."""
    if runner != "pytest":
        return ({t: test_log for t in tests}
                if "Traceback (most recent call last)" in test_log else {})
    try:
        failures = junit_failures(junit) if junit is not None else {}
    except Forgery:
        return {}
    found = {t: resolve(t, failures, options_form) for t in tests}
    return {t: text for t, text in found.items() if text}


class SessionRunner(Protocol):
    """One session in a fresh container (``grader.SwebenchGrader._session``)."""

    def __call__(self, ctx: Context, patch: str, log_dir: Path, log: Callable[[str], None],
                 deadline: Deadline, plant: Callable[[dict[str, str]], dict[str, str]] | None = None,
                 label: str = "real") -> Session: ...


class DifferentialProof:
    """The grader's proof of a would-be resolution (module contract)."""

    def __init__(self, settings: SwebenchSettings, limits: GradingLimits, logs: Artifacts,
                 gold_store: Artifacts,
                 context: Callable[[dict, Callable[[str], None], Deadline], Context],
                 session: SessionRunner):
        self.settings, self.limits = settings, limits
        self.logs, self.gold_store = logs, gold_store
        self.context, self.session = context, session
        self.records_lock = threading.Lock()
        """Held while a gold or twin record is loaded or made: one grader makes each once."""
        self._patches_lock = threading.Lock()
        self._gold_patches: dict[str, str] | None = None

    def store(self) -> GoldStore:
        """``swebench.gold_records`` (or the user's cache) and the run's ``gold/swebench/``."""
        return GoldStore(self.settings.gold_records or default_folder(), self.gold_store)

    def grade(self, ctx: Context, patch: str, log_dir: Path, log: InstanceLog,
              deadline: Deadline) -> tuple[GradeResult, Session, bool]:
        """The grade's sessions and its verdict (module contract)."""
        def real_session() -> Session:
            return self.session(ctx, patch, log_dir, log, deadline)

        if ctx.runner is None:
            real = real_session()
            return real.result, real, False
        gold = self._gold_patch(ctx.instance, required=False)
        if gold is not None and gold.rstrip("\n") == patch.rstrip("\n"):  # trusted gold
            real = real_session()
            if not real.result.passed:
                return real.result, real, False
            return self._prove_after(ctx, patch, real, log_dir, log), real, True
        started = time.monotonic()
        try:
            record, made = self.record_for(ctx, log, None)
        except InfraFailure as exc:
            if exc.reason != "gold_unavailable":
                raise
            real = real_session()  # no gold to prove a resolution with: only one is refused
            if real.result.passed:
                raise
            return real.result, real, False
        gold_s = time.monotonic() - started
        chosen = self._draw(ctx, record)
        if not chosen:
            real = real_session()
            if not real.result.passed:
                return real.result, real, False
            return self._without_canaries(ctx, real, record), real, False
        real, canaries, parallel, wall = self.beside(
            ctx, patch, log_dir, log, Plan("real", primary=True), real_session, chosen,
            record.statuses, f"differential: the real session and {len(chosen)} canary "
            "session(s) in a random order")
        skipped = len(chosen) - len(canaries)
        cost = (f"cost: real session {real.seconds:.1f}s; {len(canaries)} canary session(s) "
                f"{wall:.1f}s wall with the real one ({sum(x.seconds for _, x in canaries):.1f}s "
                f"summed, {parallel} at once, in a random order"
                + (f", {skipped} skipped once the real session could not resolve" if skipped else "")
                + f"); gold record {gold_s:.1f}s" + (" (made now)" if made else " (stored)"))
        verdict = judge_grade(real, canaries, record, ctx.instance, parallel)
        if real.result.passed:
            verdict, settled = self._settle(
                ctx, patch, log_dir, log, real, canaries, record, verdict,
                lambda c: judge_grade(real, c, record, ctx.instance, parallel))
            cost += _settle_cost(settled)
        verdict = with_unproven(verdict, record, ctx.instance, log)
        log(cost)
        verdict.trace = f"{verdict.trace}\n{cost}"
        return verdict, real, True

    def beside(self, ctx: Context, patch: str, log_dir: Path, log: InstanceLog, primary: Plan,
               run_primary: Callable[[], Session], chosen: list[Mutant],
               statuses: dict[str, str], intro: str
               ) -> tuple[Session, list[tuple[Mutant, Session]], int, float]:
        """``primary``'s session and a canary session per mutant of ``chosen``, in a random order,
        started together (``order``; ``statuses``: gold's, for ``primary_blocked``), logged after
        ``intro``: ``(primary's session, the canaries that ran, sessions at once, wall s)``."""
        plans = [primary, *(Plan(f"canary {i}", (m,)) for i, m in enumerate(chosen, 1))]
        order = shuffled(plans)
        parallel = self.sessions_at_once(len(plans))
        log(f"{intro}, {parallel} at once: " + "; ".join(
            p.label + (f" ({p.mutants[0].describe()})" if p.mutants else "") for p in order))
        began = time.monotonic()

        def run(plan: Plan) -> Session:
            return run_primary() if plan.primary else self.canary(ctx, patch, log_dir, log, plan)

        sessions = run_in_order(order, run, parallel, primary_blocked(primary, statuses))
        ran = [(m, sessions[p.label]) for p, m in zip(plans[1:], chosen) if p.label in sessions]
        return sessions[primary.label], ran, parallel, time.monotonic() - began

    def sessions_at_once(self, n: int) -> int:
        return max(1, min(self.settings.parallel_canaries(), n))

    def canary(self, ctx: Context, patch: str, log_dir: Path, log: InstanceLog,
               plan: Plan) -> Session:
        """``plan``'s session (``canary <n>``), its logs in ``canary-<n>/``."""
        return self.side_session(ctx, patch, log_dir / plan.label.replace(" ", "-"), log,
                                 plan.label, list(plan.mutants))

    def side_session(self, ctx: Context, patch: str, folder: Path, log: Callable[[str], None],
                     label: str, mutants: list[Mutant] | None = None) -> Session:
        """A session beside a grade's real one (``label``: a canary, a referee, a record's):
        logs in ``folder``, lines prefixed ``[label]``, its own deadline, ``mutants`` planted."""
        folder.mkdir(exist_ok=True)
        return self.session(ctx, patch, folder, lambda message: log(f"[{label}] {message}"),
                            Deadline(self.limits.instance_deadline_s),
                            plant=None if mutants is None else (
                                lambda texts: apply_all(texts, mutants)), label=label)

    def _canaries(self, ctx: Context, patch: str, log_dir: Path, log: InstanceLog,
                  chosen: list[Mutant], numbers: Iterator[int],
                  parallel: int) -> list[tuple[Mutant, Session]]:
        """A canary session per mutant of ``chosen`` (numbered by ``numbers``), none skipped."""
        plans = [Plan(f"canary {i}", (m,)) for m, i in zip(chosen, numbers)]
        log(f"canary sessions, {parallel} at once: " + "; ".join(
            f"{p.label} ({p.mutants[0].describe()})" for p in plans))
        sessions = run_in_order(plans, lambda p: self.canary(ctx, patch, log_dir, log, p),
                                parallel, lambda plan, session: False)
        return [(m, sessions[p.label]) for p, m in zip(plans, chosen)]

    def _draw(self, ctx: Context, record: GoldRecord) -> list[Mutant]:
        """The grade's canary mutants, from the OS's entropy (none for an unresolved record)."""
        return draw(record, ctx.instance, self.settings.canary_sessions,
                    secrets.SystemRandom()) if record.resolved else []

    def _settle(self, ctx: Context, patch: str, log_dir: Path, log: InstanceLog, real: Session,
                canaries: list[tuple[Mutant, Session]], record: GoldRecord, verdict: GradeResult,
                judge: Callable[[list[tuple[Mutant, Session]]], GradeResult]
                ) -> tuple[GradeResult, list[Session]]:
        """``spread.settle`` with this grade's referees, record and fresh canaries; the verdict
        and the sessions it ran (for the cost line)."""
        numbers = itertools.count(len(canaries) + 1)
        gold = self._gold_patch(ctx.instance)
        ran: list[Session] = []

        def referee(mutant: Mutant) -> Session:
            n = next(numbers)
            ran.append(self.side_session(ctx, gold, log_dir / f"referee-{n}", log,
                                         f"referee {n}", [mutant]))
            return ran[-1]

        def forget(spread: list[tuple[Mutant, str]]) -> GoldRecord:
            store = self.store()
            with self.records_lock:
                current = store.load(record.instance_id, record.image_id) or record
                gone = {m for m, _ in spread}
                current.kept = [m for m in current.kept if Mutant.from_dict(m) not in gone]
                current.dropped += [f"{m.describe()}: {why}" for m, why in spread]
                store.save(current)
            return current

        def replace(current: GoldRecord, n: int) -> list[tuple[Mutant, Session]]:
            chosen = draw(current, ctx.instance, (n, n), secrets.SystemRandom())
            fresh = self._canaries(ctx, patch, log_dir, log, chosen, numbers,
                                   self.sessions_at_once(len(chosen)))
            ran.extend(session for _, session in fresh)
            return fresh

        return (settle(verdict, real, canaries, ctx.instance, referee, forget, replace, judge,
                       log), ran)

    def _without_canaries(self, ctx: Context, real: Session, record: GoldRecord) -> GradeResult:
        """A resolution with no canary session to prove it: compared with gold only."""
        if not record.resolved:
            raise InfraFailure("gold_unresolved", f"instance {ctx.instance['instance_id']}: the gold "
                               f"patch does not resolve on image {ctx.image} ({record.key}); run "
                               "`ratchet swe validate` on it and leave it out of the run")
        result = compare_with_gold(real.result, real, record, ctx.instance)
        if not result.passed:
            return result
        note = ("differential: no canary session: no graded test has a literal expectation "
                f"that the gold patch fails ({record.describe()})")
        return GradeResult(passed=True, exit_status=result.exit_status,
                           trace=f"{result.trace}\n{note}")

    def _prove_after(self, ctx: Context, patch: str, real: Session, log_dir: Path,
                     log: InstanceLog) -> GradeResult:
        """The gold patch's resolution (trusted, so its real session ran first and makes a
        missing record) compared with gold's outcomes, then proven by canary sessions."""
        started = time.monotonic()
        record, made = self.record_for(ctx, log, real)
        gold_s = time.monotonic() - started
        chosen = self._draw(ctx, record)
        if not chosen:
            return self._without_canaries(ctx, real, record)
        result = compare_with_gold(real.result, real, record, ctx.instance)
        if not result.passed:
            return result
        parallel = self.sessions_at_once(len(chosen))
        began = time.monotonic()
        canaries = self._canaries(ctx, patch, log_dir, log, chosen, itertools.count(1),
                                  parallel)
        verdict = judge_canaries(result, real, canaries, ctx.instance, parallel)
        verdict, settled = self._settle(
            ctx, patch, log_dir, log, real, canaries, record, verdict,
            lambda c: judge_canaries(result, real, c, ctx.instance, parallel))
        verdict = with_unproven(verdict, record, ctx.instance, log)
        cost = (f"cost: real session {real.seconds:.1f}s; {len(chosen)} canary session(s) "
                f"{time.monotonic() - began:.1f}s wall ({sum(x.seconds for _, x in canaries):.1f}s "
                f"summed, {parallel} at once, after the real one: the gold patch is trusted); "
                f"gold record {gold_s:.1f}s" + (" (made now)" if made else " (stored)")
                + _settle_cost(settled))
        log(cost)
        verdict.trace = f"{verdict.trace}\n{cost}"
        return verdict

    def _gold_patch(self, instance: dict, *, required: bool = True) -> str | None:
        """The instance's gold patch: its own ``patch`` field, else the configured dataset's
        (read once per grader; a dataset that cannot be read is an infrastructure failure when
        ``required``)."""
        if instance.get("patch"):
            return instance["patch"]
        with self._patches_lock:
            if self._gold_patches is None:
                try:
                    self._gold_patches = {i["instance_id"]: i.get("patch") or ""
                                          for i in load_instances(self.settings)}
                except Exception as exc:  # noqa: BLE001 - said below, with the fix
                    if not required:
                        return None
                    raise InfraFailure("gold_unavailable", f"instance {instance['instance_id']}: "
                                       f"no gold record and the dataset {self.settings.dataset_name!r} "
                                       f"cannot be read for its gold patch ({type(exc).__name__}: "
                                       f"{exc}); run `ratchet swe validate` to fill "
                                       "swebench.gold_records, or point swebench.dataset_name at "
                                       "the dataset") from exc
        gold = self._gold_patches.get(instance["instance_id"])
        if not gold and required:
            raise InfraFailure("gold_unavailable", f"instance {instance['instance_id']} has no gold "
                               f"patch in {self.settings.dataset_name!r}, so its resolutions cannot "
                               "be compared with gold; fix the dataset or leave the instance out")
        return gold or None

    def gold_record(self, instance: dict) -> GoldRecord:
        """The instance's gold record, made now (logs: ``logs/swebench/<id>/gold/``) if none."""
        return self.outside_a_grade(
            instance, "gold", lambda ctx, log_dir, log: self.record_for(ctx, log, None,
                                                                        log_dir)[0])

    def outside_a_grade(self, instance: dict, kind: str,
                        make: Callable[[Context, Path, InstanceLog], Any]) -> Any:
        """``make(ctx, log_dir, log)`` on the instance's image, outside any grade (a record made
        ahead of a run): its own log folder, published to ``logs/swebench/<instance>/<kind>/``
        and removed however ``make`` ends."""
        instance = normalize_instance(dict(instance)) if isinstance(
            instance.get("FAIL_TO_PASS"), str) else instance
        log_dir = Path(tempfile.mkdtemp(prefix=f"ratchet-{kind}-"))
        log = InstanceLog(log_dir / "run_instance.log")
        try:
            ctx = self.context(instance, log, Deadline(self.limits.instance_deadline_s))
            try:
                with ctx.images.use(instance, log):
                    return make(ctx, log_dir, log)
            finally:
                ctx.images.release(ctx.image, log)
        finally:
            log.close()
            try:
                publish_folder(log_dir, self.logs.sub(f"{instance['instance_id']}/{kind}"))
            finally:
                shutil.rmtree(log_dir, ignore_errors=True)

    def record_for(self, ctx: Context, log: Callable[[str], None], real: Session | None,
                   log_dir: Path | None = None) -> tuple[GoldRecord, bool]:
        """The stored record for this instance and image, or one made now (``gold``'s module
        contract), and whether it was made now: ``real`` is the gold patch's own real session
        when that is being graded."""
        instance_id = ctx.instance["instance_id"]
        image_id = ctx.images.client.images.get(ctx.image).id
        store = self.store()
        with self.records_lock:
            record = store.load(instance_id, image_id)
            if record is not None:
                log(f"{record.describe()} (stored)")
                return record, False
            gold = self._gold_patch(ctx.instance)
            folder = Path(tempfile.mkdtemp(prefix="ratchet-gold-")) if log_dir is None else log_dir
            try:
                record = self._make_gold_record(ctx, gold, image_id, folder, log, real)
            finally:
                if log_dir is None:
                    shutil.rmtree(folder, ignore_errors=True)
            store.save(record)
            log(f"{record.describe()} (made now in {sum(record.seconds.values()):.1f}s)")
            return record, True

    def _make_gold_record(self, ctx: Context, gold: str, image_id: str, folder: Path,
                          log: Callable[[str], None], real: Session | None) -> GoldRecord:
        log("gold record: none stored for this instance and image; making it now (the gold "
            "patch graded, then every candidate mutant planted under it)")
        seconds = {"gold": 0.0}
        if real is None:
            real = self.side_session(ctx, gold, folder / "gold-session", log, "gold")
            seconds["gold"] = real.seconds
        tests = graded(ctx.instance)
        record = GoldRecord(ctx.instance["instance_id"], image_id,
                            statuses={t: (real.log or {}).get(t, MISSING) for t in tests},
                            junit=dict(real.junit or {}),
                            resolved=bool(real.report and real.report.get("resolved")))
        passing = [t for t in tests if record.statuses[t] == "PASSED"
                   and (real.junit is None or real.junit.get(t) == "PASSED")]
        located = {t: real.located[t] for t in passing if t in real.located}
        draws = itertools.count()
        f2p = set(ctx.instance.get("FAIL_TO_PASS") or [])

        def judge(found: dict[str, Mutant]) -> dict[str, str | None]:
            return self._judge_mutants(ctx, gold, found, folder, log, seconds, next(draws))

        # one secret draw per record; every redraw follows from it (mutants.draw_kept)
        kept, record.dropped = draw_kept(located, real.texts, random.Random(secrets.randbits(128)),
                                         judge, f2p, failures=self._base_failures(
                                             ctx, [t for t in located if t in f2p], folder, log,
                                             seconds))
        record.kept = [m.as_dict() for m in kept]
        record.seconds = seconds
        return record

    def _base_failures(self, ctx: Context, tests: list[str], folder: Path,
                       log: Callable[[str], None], seconds: dict[str, float]) -> dict[str, str]:
        """Each FAIL_TO_PASS test of ``tests`` -> how the base code fails it in one session of
        the base code (``Session.failures``; ``""`` where none is read): where
        ``mutants.candidates`` puts its mutant, at the expectation the bug breaks, which code
        that forces outcomes must force (docs/grading.md, threat model)."""
        if not tests or ctx.runner is None:
            return {t: "" for t in tests}
        base = self.side_session(ctx, BASE_PATCH, folder / "base-code", log, "base code")
        seconds["base"] = seconds.get("base", 0.0) + base.seconds
        return {t: base.failures.get(t, "") for t in tests}

    def _judge_mutants(self, ctx: Context, gold: str, found: dict[str, Mutant], folder: Path,
                       log: Callable[[str], None], seconds: dict[str, float],
                       redraw: int) -> dict[str, str | None]:
        """Each of ``found``'s tests -> None when its mutant is kept, else why it is dropped: the
        gold patch again with every one planted at once (a mutant is kept only if its test is
        reported FAILED, by an assertion at its check: ``mutants.at_check``), then the base code
        with those planted (``_fail_under_base``);
        ``redraw``: 0 for the first draw, n for the n-th redraw (its own log folders)."""
        tag, name = (f" (redraw {redraw})", f"gold-mutants-redraw-{redraw}") if redraw else (
            "", "gold-mutants")
        planted = self.side_session(ctx, gold, folder / name, log, f"gold mutants{tag}",
                                    list(found.values()))
        seconds["mutants"] = seconds.get("mutants", 0.0) + planted.seconds
        verdicts: dict[str, str | None] = {}
        for test, mutant in sorted(found.items()):
            in_log = seen(mutant, planted)[0]
            in_junit = (planted.junit or {}).get(test) if planted.junit is not None else None
            failed = in_log == "FAILED" and in_junit in (None, "FAILED")
            why = in_log + (f" (JUnit {in_junit})" if in_junit else "")
            verdicts[test] = None if failed else why if planted.log is not None else Final(
                f"{why} (the session did not complete: not drawn again)")
            # raised, not failed (django's and sympy's ERROR), or not by an assertion at its check:
            # e.g. a compared call's argument that makes gold raise
            elsewhere = at_check(mutant, planted.failures.get(test, "")) if failed else (
                why if in_log == "ERROR" else None)
            if elsewhere:
                verdicts[test] = Misplaced(elsewhere)
        survivors = [found[t] for t, why in verdicts.items() if why is None]
        verdicts.update(self._fail_under_base(ctx, survivors, folder, log, seconds, redraw))
        return verdicts

    def _fail_under_base(self, ctx: Context, kept: list[Mutant], folder: Path,
                         log: Callable[[str], None], seconds: dict[str, float],
                         redraw: int = 0) -> dict[str, str | None]:
        """Each of ``kept``'s tests -> None when the base code fails its mutant too (one session
        of the base code with all planted), else why it is dropped: a FAIL_TO_PASS mutant may
        expect exactly what the bug returns, which a patch that fixes nothing would pass (why:
        docs/grading.md, "Gold records"). A mutant root could not plant in the base session
        (``differential.planted``: the graded file was not the text it was made from) is
        dropped: its test ran unmutated there, so its failure says nothing of the mutant. Where
        the base session does not complete, only the PASS_TO_PASS mutants stay."""
        if not kept:
            return {}
        tag, name = (f" (redraw {redraw})", f"base-mutants-redraw-{redraw}") if redraw else (
            "", "base-mutants")
        base = self.side_session(ctx, BASE_PATCH, folder / name, log, f"base mutants{tag}", kept)
        seconds["base"] = seconds.get("base", 0.0) + base.seconds
        f2p = set(ctx.instance.get("FAIL_TO_PASS") or [])
        verdicts: dict[str, str | None] = {}
        for mutant in kept:
            if base.log is not None and not planted(mutant, base):
                verdicts[mutant.test] = ("not planted under the base code (the graded file was "
                                         "not the text it was made from): its failure there "
                                         "proves nothing")
                continue
            in_log, in_junit, _ = seen(mutant, base)
            failed = base.log is not None and in_log not in PASSING and in_junit not in PASSING
            keep = failed or (base.log is None and mutant.test not in f2p)
            verdicts[mutant.test] = None if keep else f"{in_log} under the base code" if (
                base.log is not None) else Final(f"{in_log} under the base code (its session did "
                                                 "not complete: not drawn again)")
        return verdicts
