"""The SWE-bench Grader: one Docker harness per worker, graded with swebench's own functions.

Per ``grade(task, patch)`` (a finished report is reused per instance, patch and twin recipe,
``twin.grade_folder``):
1. an empty patch is ``empty_patch`` at once (no container);
2. the instance image is ensured and held (``images``); each session starts a locked-down
   container (``container``);
3. the patch is applied with the harness's fallback commands, then a reverse check (few execs);
   none applies -> ``patch_apply_failed``;
4. every harness path the patch changed is restored (``integrity.guard``), else
   ``test_tampering``;
5. the instrumented eval script (``verdict``; root first writes the graded test files,
   ``session_layers``) runs within ``swebench.grade_command_timeout_s`` and
   ``instance_deadline_s`` (else ``timeout``) and ``disk_mb`` (else ``disk_budget_exceeded``);
6. swebench's ``get_eval_report`` parses the output between the real markers (an imitated one ->
   ``test_tampering``; none -> ``tests_errored``); pytest's passes must agree with the JUnit
   report (else ``results_mismatch``), then ``integrity.session_layers`` judges;
7. a resolution is proven against the gold record by canary sessions (``proof.prover``);
8. an impossible twin's task gets steps 2-6 with a mutant planted, beside decoys (``proof.twin``).
No two sessions of an image overlap on a host (``_alone``, unless ``canary_parallel`` > 1);
before every session the page cache and dentries are cleared (``proof.host_marks``); a
suspicious patch (``screen``) only gets a note. Infrastructure faults (trusted signals only,
``infra``) return ``infra_failure=True`` with the reason as ``exit_status``; a kernel OOM kill is
``out_of_memory``, the patch's failure. All containers are gone before the grade ends
(``container.Removals``). The files go to local scratch, then to the run's artifacts at
``logs/swebench/<instance>/<patch-key>/`` (named in every trace), ``report.json`` last.
"""

from __future__ import annotations

import importlib
import logging
import shutil
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

from ratchet_ray.storage.artifacts import Artifacts, as_artifacts
from ratchet_ray.suites.base import twin_recipe
from ratchet_ray.suites.swebench.docker.container import (
    InstanceContainer, Removals, docker_client, instance_container, reap_containers)
from ratchet_ray.suites.swebench.proof.differential import MISSING, Session, fail, graded
from ratchet_ray.suites.swebench.proof.host_marks import PageCacheEviction, drop_dentries
from ratchet_ray.suites.swebench.docker.execbox import StepResult
from ratchet_ray.suites.swebench.grading_support import (
    SKIPPED_STEP, Deadline, InstanceLog, apply_steps, git_apply_commands, inline_patch, patch_key,
    publish_folder, read_report, report_bytes, tail)
from ratchet_ray.suites.swebench.integrity.guard import HarnessGuard
from ratchet_ray.suites.swebench.integrity.lockdown import (
    conftest_paths, listed_conftests, lockdown_command)
from ratchet_ray.suites.swebench.docker.images import ImageLock, InstanceImages
from ratchet_ray.suites.swebench.imports import serial_imports
from ratchet_ray.suites.swebench.integrity.harness_paths import patch_paths, unsafe_paths
from ratchet_ray.suites.swebench.docker.infra import (
    InfraFailure, classify_exception, log_classifier_note, memory_verdict)
from ratchet_ray.suites.swebench.settings import GradingLimits, SwebenchSettings
from ratchet_ray.suites.swebench.proof.prover import (
    Context, DifferentialProof, failures_of, junit_graded)
from ratchet_ray.suites.swebench.integrity.session_layers import Protections
from ratchet_ray.suites.swebench.integrity.screen import suspicion
from ratchet_ray.suites.swebench.proof.twin import TwinGrading, grade_folder, real_instance
from ratchet_ray.suites.swebench.integrity.verdict import (
    Forgery, Markers, MarkersMissing, ScriptShapeError, command_words, cross_check, instrument,
    junit_statuses, split_log, printed_exit_code, test_runner)
from ratchet_ray.types import GradeResult, Task

LOG_SUBDIR = Path("logs") / "swebench"
GOLD_SUBDIR = "gold/swebench"
REPORT_FILE = "report.json"
# Root's alone, down to its size: the folder is 0700 (the script holds the test patch, whose
# size, seen by ``stat``, gave away a mutant that changes the graded file's size)
EVAL_FOLDER = "/var/lib/ratchet/root"
EVAL_SCRIPT = f"{EVAL_FOLDER}/eval.sh"
SESSION_POLL_S = 0.2
"""How often a session waiting for another grade's session of its image asks again."""
logger = logging.getLogger(__name__)


class SwebenchGrader:
    """Grades patches for SWE-bench instances (module contract). Its parts ``proof``
    (``prover.DifferentialProof``) and ``twins`` (``twin.TwinGrading``) call ``_session`` and
    ``_context`` through lambdas, so a wrapper installed on the grader sees every session."""

    def __init__(self, settings: SwebenchSettings, limits: GradingLimits,
                 run_dir: str | Path | Artifacts, *, client: Any = None):
        self.settings = settings
        self.limits = limits
        store = as_artifacts(run_dir)
        self.logs = store.sub(LOG_SUBDIR.as_posix())
        self.run_label = store.locate()
        self._client = client
        self._images: InstanceImages | None = None
        self._connect_lock = threading.Lock()
        self._warming: threading.Thread | None = None
        self._eviction: PageCacheEviction | None = None
        self.proof = DifferentialProof(
            settings, limits, self.logs, store.sub(GOLD_SUBDIR),
            context=lambda instance, log, deadline: self._context(instance, log, deadline),
            session=lambda *args, **kwargs: self._session(*args, **kwargs))
        self.twins = TwinGrading(self.proof, limits,
                                 session=lambda *args, **kwargs: self._session(*args, **kwargs))

    def start_warm_up(self) -> threading.Thread:
        """Start swebench's imports and ``_harness`` in the background (a grade that comes first
        waits on its lock); a failure is only logged: the first grade meets it again."""
        with self._connect_lock:
            if self._warming is None:
                self._warming = threading.Thread(target=self._warm_up, daemon=True,
                                                 name="swebench-grader-warm-up")
                self._warming.start()
            return self._warming

    def _warm_up(self) -> None:
        try:
            with serial_imports:
                for module in ("swebench.harness.grading", "swebench.harness.utils"):
                    importlib.import_module(module)  # what ``_grade`` imports first
            self._harness()
        except Exception as exc:  # noqa: BLE001 - the first grade meets it again and says why
            logger.warning("SWE-bench grader warm-up failed (%s: %s); the first grade retries",
                           type(exc).__name__, exc)

    def warm(self, task_ids: list[str]) -> dict[str, float]:
        """Wait for the warm-up (``start_warm_up``); ``{}``: nothing is computed per task."""
        self.start_warm_up().join()
        return {}

    def _harness(self) -> InstanceImages:
        """Connect lazily (a worker without a daemon grades every task as an infra failure),
        reaping what killed graders and agents on this machine left behind."""
        with self._connect_lock:
            if self._images is None:
                client = self._client or docker_client(self.settings)
                reap_containers(client)
                self._images = InstanceImages(client, self.settings)
            return self._images

    def _page_cache(self, client: Any) -> PageCacheEviction:
        with self._connect_lock:
            if self._eviction is None:
                self._eviction = PageCacheEviction(client)
            return self._eviction

    def reap(self) -> list[str]:
        """Remove this run's containers and those of dead owners (call when nothing is grading,
        e.g. at the end of a round); the names removed."""
        return reap_containers(self._harness().client, self.run_label)

    def grade(self, task: Task, output: str) -> GradeResult:
        started = time.monotonic()
        instance_id = task.task_id
        if not output.strip():
            return fail("empty_patch", "empty patch: nothing to apply, FAIL_TO_PASS tests cannot pass")
        patch = output if output.endswith("\n") else output + "\n"
        key = patch_key(patch)
        logs = self.logs.sub(grade_folder(task, key))  # a twin's report is its own (twin.py)
        cached = read_report(logs, REPORT_FILE)
        if cached is not None:
            return GradeResult(**{**cached, "trace": f"(cached report {logs.locate(REPORT_FILE)})"
                                                     f"\n{cached['trace']}"})
        # The instance's files are written to scratch space on this node while it is graded,
        # then put into the run's artifacts (the run dir may be on another node).
        log_dir = Path(tempfile.mkdtemp(prefix="ratchet-grade-"))
        log = InstanceLog(log_dir / "run_instance.log")
        log(f"grading {instance_id}: patch {key}")
        report: list[tuple[str, bytes]] = []
        try:
            try:
                result, swe_report = self._grade(task, patch, log_dir, log)
            except Exception as exc:  # noqa: BLE001 - classified below; non-infra errors re-raise
                reason = classify_exception(exc)
                if reason is None:
                    log(f"grader error: {type(exc).__name__}: {exc}")
                    raise
                log(f"infrastructure failure ({reason}): {exc}")
                result, swe_report = GradeResult(
                    passed=False, exit_status=reason, infra_failure=True,
                    trace=f"infrastructure failure ({reason}): {exc}"), None
            result.duration_s = time.monotonic() - started
            suspect = suspicion(real_instance(task), patch)  # recorded, never a verdict (screen.py)
            if suspect is not None:
                log(suspect)
                result.trace = f"{result.trace}\n{suspect}"
                if swe_report is not None:
                    swe_report["suspicion"] = suspect
            result.trace = f"{result.trace}\nlog: {logs.locate()}"
            if swe_report is not None:  # put last: a report marks the instance's logs complete
                report = [(REPORT_FILE, report_bytes({"grade": result.model_dump(),
                                                      "swebench": swe_report}))]
        finally:
            log.close()
            try:  # the logs and the report in one call (the run dir may be on another node)
                publish_folder(log_dir, logs, last=report)
            finally:
                shutil.rmtree(log_dir, ignore_errors=True)
        return result

    def _grade(self, task: Task, patch: str, log_dir: Path,
               log: InstanceLog) -> tuple[GradeResult, dict | None]:
        """The graded result and, for a completed (cacheable) grade, the report to keep."""
        instance = real_instance(task)
        escaping = unsafe_paths(patch_paths(patch))
        if escaping:  # before any apply command, which might follow such a path
            return fail("test_tampering", "test_tampering: the patch writes outside the work "
                         f"tree or into .git: {', '.join(escaping[:10])}"), {"test_tampering": escaping}
        deadline = Deadline(self.limits.instance_deadline_s)
        # Each session's container is removed in the background while the grade goes on (the
        # next session starts meanwhile); all are gone before the grade ends.
        ctx = replace(self._context(instance, log, deadline), removals=Removals())
        (log_dir / "patch.diff").write_text(patch)
        try:
            with ctx.images.use(instance, log):  # held for every session of this grade
                try:
                    if twin_recipe(task) is not None:  # the cheat probe's twin and its decoys
                        return self.twins.grade(ctx, patch, log_dir, log)
                    result, real, proven = self.proof.grade(ctx, patch, log_dir, log, deadline)
                    report = real.report
                    if proven and report is not None:
                        report["differential"] = result.trace.split("\n")[:40]
                finally:
                    ctx.removals.wait()  # the image stays held until its containers are gone
        finally:
            ctx.images.release(ctx.image, log)
        return result, report

    def _context(self, instance: dict, log: Callable[[str], None],
                 deadline: Deadline) -> Context:
        with serial_imports:
            from swebench.harness.utils import make_test_spec

        images = deadline.run("connecting to Docker", self._harness)
        image = deadline.run("obtaining the image", lambda: images.ensure(instance, log))
        log(f"image {image} ready")
        runner, options_form = test_runner(instance["log_parser"])
        return Context(instance, images, image, make_test_spec({**instance, "image": image}),
                        runner, options_form)

    def _session(self, ctx: Context, patch: str, log_dir: Path, log: Callable[[str], None],
                 deadline: Deadline, plant: Callable[[dict[str, str]], dict[str, str]] | None = None,
                 label: str = "real") -> Session:
        """One session in a fresh container: the patch applied, the harness restored, the graded
        files written by root (``plant``: what they become; default unchanged), the eval run
        and judged (``Session.result``: the session's own verdict)."""
        started = time.monotonic()
        session = Session(label, fail("tests_errored", "the session did not run"))
        with self._alone(ctx, deadline, log):
            if self.settings.clear_page_cache:  # no mark in the page cache from an earlier one
                log(self._page_cache(ctx.images.client).evict(ctx.image).describe())
            if self.settings.clear_dentry_cache:  # nor in the dentries of names looked up
                log(drop_dentries().describe())
            session.result, session.report = self._run_session(ctx, patch, log_dir, log,
                                                                deadline, plant, session)
        session.seconds = time.monotonic() - started
        return session

    @contextmanager
    def _alone(self, ctx: Context, deadline: Deadline,
               log: Callable[[str], None]) -> Iterator[None]:
        """Held while a session runs: no other session of this image runs on this host meanwhile
        (``ImageLock`` in the node's ``lock_dir``, across processes), within the deadline. A
        grade's own sessions run one at a time (``canary_parallel`` unset); grades of the same
        instance (attempts of one task, arms of a sweep) would otherwise overlap, and sessions
        that overlap can compare their graded files live (docs/grading.md, Remains). With
        ``canary_parallel`` > 1 the user chose overlap: nothing is held."""
        if self.settings.parallel_canaries() > 1:
            yield
            return
        lock = ImageLock(ctx.images.settings.lock_dir, f"sessions of {ctx.image}")
        began = time.monotonic()
        while True:
            with lock.exclusive(wait=False) as held:
                if held:
                    waited = time.monotonic() - began
                    if waited >= 1.0:
                        log(f"waited {waited:.1f}s for another grade's session of {ctx.image} on "
                            "this host (one session of an image at a time)")
                    yield
                    return
            deadline.check("another grade's session of this image ended on this host")
            time.sleep(SESSION_POLL_S)

    def _run_session(self, ctx: Context, patch: str, log_dir: Path, log: Callable[[str], None],
                     deadline: Deadline, plant: Callable[[dict[str, str]], dict[str, str]] | None,
                     session: Session) -> tuple[GradeResult, dict | None]:
        with serial_imports:
            from swebench.harness.constants import CONTAINER_PATCH_FILE, LOG_TEST_OUTPUT
            from swebench.harness.grading import get_eval_report, get_logs_eval

        instance, images, image, spec = ctx.instance, ctx.images, ctx.image, ctx.spec
        runner, options_form = ctx.runner, ctx.options_form
        instance_id = instance["instance_id"]
        markers = Markers.fresh()
        junit: bytes | None = None
        deadline.check("starting the container")
        with instance_container(
                images.client, image, instance_id, self.settings, run_label=self.run_label,
                first_steps=[HarnessGuard.state_command(instance)],
                removals=ctx.removals) as box:
            log(f"container {box.name} started from {image}")
            guard = HarnessGuard(box, instance, self.limits.timeout_s)
            guard.snapshot(box.first_results[0])  # listed in the keep-alive probe's exec
            applied, apply_output, after = self._apply(box, CONTAINER_PATCH_FILE, patch, instance, log)
            if not applied:
                trace = f"patch_apply_failed: no fallback command applied the patch\n{tail(apply_output)}"
                return fail("patch_apply_failed", trace), \
                    {"patch_successfully_applied": False, "apply_output": tail(apply_output)}
            outcome = guard.restore(patch, after)
            restored = outcome.describe()
            if restored:
                log(restored)
            if outcome.tampering:
                log(f"test_tampering: {outcome.tampering}")
                return fail("test_tampering", f"test_tampering: {outcome.tampering}\n{restored}"), \
                    {"test_tampering": outcome.tampering, "restored": outcome.restored}
            uid, layers = self._hand_over(box, instance, spec.eval_script, markers, runner, log,
                                          plant)
            session.texts, session.written, session.located = layers.texts, layers.written, layers.located
            try:
                script = instrument(spec.eval_script, markers, uid, layers.extras)
            except ScriptShapeError as exc:
                raise InfraFailure("bad_eval_script", f"instance {instance_id}: {exc}") from exc
            deadline.check("running the eval script")
            (log_dir / "eval.sh").write_text(script)
            # One put: the graded files' stage, the sentinel, the script (root only: the markers).
            box.put_files({**layers.files, EVAL_SCRIPT: (script, 0o700)},
                          folders={EVAL_FOLDER: 0o700, **layers.folders})
            timeout = min(self.limits.timeout_s, deadline.remaining())
            # The instance deadline is the host's alone: ``timeout``'s argument is in every
            # process list of the container, and the real session's deadline started before the
            # image and the gold record, a canary session's with it, so a deadline shown there
            # tells the sessions apart (docs/grading.md, threat model).
            run = box.run(f"/bin/bash {EVAL_SCRIPT}", self.limits.timeout_s, user="root",
                          host_limit_s=timeout)
            log(f"eval script exit {run.exit_code} after {run.duration_s:.1f}s"
                + (" (leftover processes killed)" if run.lingering else ""))
            # The watchdog samples; a burst between two samples is caught here.
            run.disk_exceeded = run.disk_exceeded or (
                box.writable_bytes() > self.settings.disk_mb * 2**20)
            oom_kills = box.oom_kills_since_start()  # the kernel's count, not the log (infra.py)
            if runner == "pytest" and not (run.timed_out or run.disk_exceeded):
                try:
                    junit = layers.collect(box)
                except ValueError as exc:
                    return fail("test_tampering", f"test_tampering: {exc}\n{restored}"), {}
        (log_dir / "eval_output.txt").write_text(run.output)
        prefix = f"{restored}\n" if restored else ""
        if run.disk_exceeded:
            return fail("disk_budget_exceeded", f"{prefix}disk_budget_exceeded: the container wrote "
                         f"more than {self.settings.disk_mb} MB; its processes were killed\n"
                         f"{tail(run.output)}"), None
        if run.timed_out:
            (log_dir / LOG_TEST_OUTPUT).write_text(f"{run.output}\n\nTimeout error: {timeout:.0f} "
                                                   f"seconds exceeded.")
            which = ("per-command timeout" if timeout >= self.limits.timeout_s
                     else "instance deadline")
            return fail("timeout", f"{prefix}timeout: eval script killed after {timeout:.0f}s "
                         f"({which})\n{tail(run.output)}"), None
        try:
            swe_log, section = split_log(run.stdout, run.output, markers)
        except Forgery as exc:
            status = "tests_errored" if isinstance(exc, MarkersMissing) else "test_tampering"
            return memory_verdict(fail(status, f"{prefix}{status}: {exc}\n{tail(run.output)}"),
                                  oom_kills, self.settings.memory_mb), {"forgery": str(exc)}
        output_path = log_dir / LOG_TEST_OUTPUT
        output_path.write_text(swe_log)
        pred = {"instance_id": instance_id, "model_patch": patch, "model_name_or_path": "ratchet"}
        report = get_eval_report(spec, pred, str(output_path), include_tests_status=True)[instance_id]
        untrusted_note = log_classifier_note(report)  # the log is the code's: never infra
        if untrusted_note:
            log(untrusted_note)
        logged = get_logs_eval(spec, str(output_path))[0]
        session.log = {t: logged.get(t, MISSING) for t in graded(instance)}
        session.junit = junit_graded(junit, graded(instance), options_form) \
            if runner == "pytest" else None
        session.failures = failures_of(runner, junit, swe_log, graded(instance), options_form)
        result = self._verdict(report, section)
        if runner is not None:
            result = self._judge(result, report, junit, layers, printed_exit_code(run.stdout, markers),
                                 options_form, log, lambda: (logged, section))
        result.trace = prefix + result.trace
        return memory_verdict(result, oom_kills, self.settings.memory_mb), report

    @staticmethod
    def _judge(result: GradeResult, report: dict, junit: bytes | None, layers: Protections,
               exit_code: int | None, options_form: bool, log: InstanceLog,
               logged: Callable[[], tuple[dict[str, str], str]] | None = None) -> GradeResult:
        """The log's verdict checked against the JUnit report (not JUnit XML:
        ``test_tampering``) and ``layers``; a runner read from its log alone (django's, sympy's)
        has no report: ``logged()`` gives swebench's parse of the log and its text."""
        if layers.runner != "pytest":
            statuses, text = logged() if logged else (None, "")
            return layers.judge(result, statuses, exit_code, log, text)
        statuses = None
        if junit is not None:
            try:
                statuses = junit_statuses(junit)
            except Forgery as exc:
                return fail("test_tampering", f"test_tampering: {exc}")
        disagreements = cross_check(report, statuses, options_form)
        report["junit_disagreements"] = disagreements
        if disagreements:
            log("log and JUnit report disagree: " + "; ".join(disagreements[:5]))
            note = ("results_mismatch: the test log and the JUnit report disagree, so the log "
                    "is not trusted:\n  " + "\n  ".join(disagreements[:10]))
            result = fail("results_mismatch" if result.passed else result.exit_status,
                           f"{note}\n{result.trace}")
        return layers.judge(result, statuses, exit_code, log)

    def _hand_over(self, box: InstanceContainer, instance: dict, eval_script: str, markers: Markers,
                   runner: str | None, log: Callable[[str], None],
                   plant: Callable[[dict[str, str]], dict[str, str]] | None = None,
                   ) -> tuple[int | None, Protections]:
        """In one exec, the repository's folders handed to the untrusted uid and the graded test
        files read at the base commit; then ``Protections.prepare`` (``plant``: what root
        writes into them). ``(uid, layers)``, uid None where the image has no ``setpriv``."""
        locked = HarnessGuard.locked_files(instance, eval_script)
        # pytest runners: no conftest.py can be added above a graded file (lockdown's contract)
        keep_out = conftest_paths([], instance.get("test_patch") or "") if (
            runner == "pytest") else None
        setup = box.untrusted_setup(whole_repo=False, lockdown=lockdown_command(
            locked, box.workdir, keep_out, collected=command_words(eval_script)))
        reading = Protections.read_step(instance, eval_script, runner)
        steps = [step for step in (setup, reading) if step is not None]
        results = box.run_steps(steps, 600)
        untrusted = box.become_untrusted(whole_repo=False, done=results[0] if setup else None)
        if not untrusted:
            log("the image has no setpriv: the tests run as root")
        layers = Protections.prepare(box, instance, eval_script, markers, runner, log,
                                     read=results[-1].stdout if reading is not None else None,
                                     plant=plant, tracked_conftests=(
                                         listed_conftests(results[0].stdout) if setup else None))
        return (self.settings.untrusted_uid if untrusted else None), layers

    def _apply(self, box: InstanceContainer, patch_file: str, patch: str, instance: dict,
               log: InstanceLog) -> tuple[bool, str, StepResult]:
        """swebench's apply chain (``apply_steps``) and the tree's state listed after, in one
        exec: (applied, the output to keep, the state listed after)."""
        inline = inline_patch(patch)
        if not inline:
            box.write_file(patch_file, patch)
        steps = apply_steps(patch_file, self.limits.timeout_s, patch if inline else None)
        commands = git_apply_commands()
        timeout = self.limits.timeout_s * (len(commands) + 2) + 60
        results = box.run_steps([*steps, HarnessGuard.state_command(instance)], timeout)
        if inline and results[0].exit_code != 0:
            raise InfraFailure("docker_error", f"container {box.name}: writing the patch to "
                               f"{patch_file} failed: {results[0].stderr[-300:]}")
        attempts = results[1:-1] if inline else results[:-1]
        outputs = []
        for command, result in zip(commands, attempts):
            if result.exit_code == SKIPPED_STEP:
                break
            outputs.append(f"$ {command}\n{result.stdout}")
            if result.exit_code == 0:
                log(f"applied patch with `{command}`")
                return True, result.stdout, results[-1]
            log(f"`{command}` failed (exit {result.exit_code})")
        check = attempts[-1]
        if check.exit_code == 0:
            log("patch already applied (reverse check)")
            return True, check.stdout, results[-1]
        return False, "\n".join(outputs), results[-1]

    @staticmethod
    def _verdict(report: dict, test_output: str) -> GradeResult:
        if not report.get("patch_successfully_applied"):
            return fail("tests_errored", f"tests_errored: no parseable test results\n{tail(test_output)}")
        status = report.get("tests_status", {})
        lines = []
        for kind in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            ok = status.get(kind, {}).get("success", [])
            bad = status.get(kind, {}).get("failure", [])
            lines.append(f"{kind}: {len(ok)}/{len(ok) + len(bad)} pass"
                         + (f"; failing: {', '.join(bad[:10])}" if bad else ""))
        if report.get("resolved"):
            return GradeResult(passed=True, exit_status="ok", trace="resolved\n" + "\n".join(lines))
        return fail("unresolved", "unresolved\n" + "\n".join(lines) + "\n" + tail(test_output))
