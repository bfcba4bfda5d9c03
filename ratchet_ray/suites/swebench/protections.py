"""The grader's layers against a patch that bends its own verdict from inside the test process:
a static screen of the patch, canaries hidden in the graded test files, and the sentinel plugin.

Contracts:
- ``screen_patch(instance, patch)`` -> a ``test_tampering`` trace quoting the patch's lines that
  reach for the harness (``screen``), or None. Harness paths the guard restores anyway and
  repositories whose code under test is pytest (``sentinel.HARNESS_REPOS``) are not screened.
- ``Protections.prepare(box, instance, eval_script, markers, runner, log)`` (after the patch
  is applied and the harness restored, before the eval script runs): reads the graded test
  files the test command runs at the base commit (one exec for all of them), plans their
  canaries and the sentinel, and returns them in ``files`` (``{path: (text, mode)}``: the
  canaries' stage ``<root>/stage-<random>/``, mode 0600, and the sentinel's module; ``root``
  is ``STAGE_ROOT``, root-owned in the container). The caller puts ``files`` into the
  container together with the eval script, in one archive, before that script runs; nothing
  of the repository runs in between. ``extras`` is what ``verdict.instrument`` adds to the
  script. ``runner`` is ``verdict.test_runner``'s: the sentinel is pytest's alone; django's and
  sympy's runners get the canaries of ``log_canaries``; another runner gets neither.
- ``collect(box)`` reads the report folder once (inside the container's lifetime): returns the
  JUnit report (None when absent; ``ValueError`` past ``verdict.MAX_JUNIT_BYTES``) and keeps
  the sentinel's results.
- ``judge(result, statuses, exit_code, log, test_log)`` -> the grade after the layers (``statuses``: the
  JUnit report's for pytest, swebench's parse of the log for a log runner): a sentinel finding
  is ``test_tampering`` whatever the tests said; for a resolution, a canary not reported failed
  is ``test_tampering`` (passing) or ``results_mismatch`` (missing, skipped, errored), and a
  sentinel that cannot vouch for the run (no result, or a session cut short) is
  ``results_mismatch``. For a log runner (``test_log``: the test output swebench parsed), a test
  the log reports failed and then passed is ``results_mismatch`` (``log_canaries.contradictions``;
  a line that starts with ``ok`` after a failure misleads django's parser in an honest log too).
  (A test command that exits nonzero while its log reports no failure is swebench's own check:
  its log is not found, ``tests_errored``.) The trace names what was detected, and by which
  layer.
"""

from __future__ import annotations

import base64
import posixpath
import secrets
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable

from ratchet_ray.suites.swebench import canaries, log_canaries
from ratchet_ray.suites.swebench.protect import harness_reason, patch_paths, test_files
from ratchet_ray.suites.swebench.screen import screen
from ratchet_ray.suites.swebench.sentinel import (
    HARNESS_REPOS, MAX_RESULT_BYTES, Sentinel, judge as sentinel_judge)
from ratchet_ray.suites.swebench.verdict import MAX_JUNIT_BYTES, RunExtras, command_words
from ratchet_ray.types import GradeResult

STAGE_ROOT = "/var/lib/ratchet"


def screen_patch(instance: dict[str, Any], patch: str) -> str | None:
    if instance.get("repo") in HARNESS_REPOS:
        return None
    tests = test_files(instance)
    restored = {p for p in patch_paths(patch) if harness_reason(p, tests) is not None}
    hits = screen(patch, restored)
    if not hits:
        return None
    return ("test_tampering: the patch reaches for the test harness (static screen):\n  "
            + "\n  ".join(hits[:20]) + (f"\n  ... and {len(hits) - 20} more" if len(hits) > 20 else ""))


def _base_texts_command(base: str, paths: list[str]) -> str:
    """The root command that prints each file's blob at ``base``: a line per file,
    ``ok <base64 of the blob>`` or ``missing``."""
    lines = []
    for path in paths:
        ref = shlex.quote(f"{base}:{path}")
        lines.append(f"if git cat-file -e {ref} 2>/dev/null; then printf 'ok '; "
                     f"git cat-file blob {ref} | base64 -w0 || printf '!'; echo; "
                     f"else echo missing; fi")
    return "\n".join(lines)


def _base_texts(box: Any, base: str, paths: list[str],
                listed: str | None = None) -> dict[str, str | None]:
    """Each file's text at ``base`` (None where it has none), all read by one exec of
    ``_base_texts_command`` (``listed``: its stdout, when the caller ran it in a batch). A line
    that does not read back (no ``base64`` in the image, output clipped) is asked again alone
    with ``git show``."""
    if not paths:
        return {}
    if listed is None:
        listed = box.run(_base_texts_command(base, paths), 120, user="root").stdout
    lines = listed.split("\n")
    texts: dict[str, str | None] = {}
    for i, path in enumerate(paths):
        line = lines[i].strip() if i < len(lines) and len(lines) == len(paths) + 1 else ""
        if line == "missing":
            texts[path] = None
            continue
        try:
            if not line.startswith("ok "):
                raise ValueError(line[:80])
            texts[path] = base64.b64decode(line[3:], validate=True).decode(errors="replace")
        except ValueError:
            shown = box.run(f"git show {shlex.quote(f'{base}:{path}')}", 120, user="root")
            texts[path] = shown.stdout if shown.exit_code == 0 else None
    return texts


def _graded(instance: dict[str, Any], eval_script: str, runner: str | None) -> dict[str, Any]:
    """The graded test files the test command runs whole (canaries go into these)."""
    words = command_words(eval_script)
    if runner in log_canaries.RUNNERS:
        return log_canaries.graded_files(instance, words, runner)
    if runner != "pytest":
        return {}
    return {f: names for f, names in canaries.graded_files(instance).items()
            if canaries.collected(f, words) and not canaries.selects(words)}


@dataclass
class Protections:
    plan: canaries.CanaryPlan | None = None
    runner: str | None = None
    sentinel: Sentinel | None = None
    stage: str = ""
    workdir: str = ""
    junit_path: str = ""
    files: dict[str, tuple[str, int]] = field(default_factory=dict)
    """What ``prepare`` planned to stage: ``{absolute path: (text, mode)}``, root-owned."""
    results: list[dict] = field(default_factory=list)

    @staticmethod
    def read_step(instance: dict[str, Any], eval_script: str, runner: str | None) -> str | None:
        """The root command ``prepare`` would run to read the graded test files at the base
        commit (None when it reads none), for a caller that batches it with other steps and
        hands its stdout to ``prepare`` (``read``)."""
        graded = _graded(instance, eval_script, runner)
        return _base_texts_command(instance["base_commit"], sorted(graded)) if graded else None

    @classmethod
    def prepare(cls, box: Any, instance: dict[str, Any], eval_script: str, markers: Any,
                runner: str | None, log: Callable[[str], None],
                root: str = STAGE_ROOT, read: str | None = None) -> "Protections":
        found = cls(workdir=box.workdir, junit_path=markers.junit_path, runner=runner)
        if runner is None:
            return found
        graded = _graded(instance, eval_script, runner)
        if graded:
            texts = canaries.after_test_patch(
                _base_texts(box, instance["base_commit"], sorted(graded), read),
                instance.get("test_patch") or "")
            files = {f: (texts.get(f), graded[f]) for f in graded}
            found.plan = (canaries.plan(files) if runner == "pytest"
                          else log_canaries.plan(runner, files))
        if found.plan is not None:
            found.stage = f"{root}/stage-{secrets.token_hex(8)}"
            for name, text in found.plan.staged().items():
                found.files[f"{found.stage}/{name}"] = (text, 0o600)
            log(f"canaries: {found.plan.describe()}")
        else:
            log("canaries: the test command runs no graded test file whole (or selects tests "
                "inside files); none planted")
        if runner == "pytest" and instance.get("repo") not in HARNESS_REPOS:
            found.sentinel = Sentinel.fresh(markers.junit_dir, box.workdir, root)
            found.files.update(found.sentinel.files())
        return found

    @property
    def extras(self) -> RunExtras:
        steps = tuple(self.plan.root_steps(self.stage, self.workdir)) if self.plan else ()
        if self.sentinel is None:
            return RunExtras(root_steps=steps)
        return RunExtras(root_steps=steps, addopts=self.sentinel.addopts,
                         pythonpath=self.sentinel.folder)

    def collect(self, box: Any) -> bytes | None:
        """The JUnit report (None when absent; ``ValueError`` past ``MAX_JUNIT_BYTES``), and
        the sentinel's results kept for ``judge``, all read from the report folder at once."""
        folder, junit = posixpath.split(self.junit_path)
        wanted = self.sentinel.result_name if self.sentinel is not None else (lambda _n: False)
        files, too_big = box.read_folder(
            folder, lambda n: MAX_JUNIT_BYTES if n == junit else MAX_RESULT_BYTES if wanted(n) else None)
        if self.sentinel is not None:
            self.results = self.sentinel.parse_results(files, too_big)
        if junit in too_big:
            raise ValueError(f"{self.junit_path} is {too_big[junit]} bytes (limit {MAX_JUNIT_BYTES})")
        return files.get(junit)

    def judge(self, result: GradeResult, statuses: dict[str, str] | None, exit_code: int | None,
              log: Callable[[str], None], test_log: str = "") -> GradeResult:
        problems: list[tuple[str, str]] = []
        overridden = (log_canaries.contradictions(self.runner, test_log, statuses)
                      if result.passed and self.runner in log_canaries.RUNNERS and statuses else [])
        if overridden:  # not called tampering: swebench's own parser can misread an honest log so
            problems.append(("results_mismatch", "the log reports these tests failed, and a "
                             "later line reports them passed (a failure overridden): "
                             + ", ".join(overridden[:10])))
        if self.sentinel is not None:
            seen = sentinel_judge(self.results, statuses, exit_code)
            for note in seen.notes[:5]:
                log(f"sentinel note: {note}")
            if seen.findings:
                problems.append(("test_tampering", "the grader's pytest plugin saw the report "
                                 "machinery tampered with:\n  " + "\n  ".join(seen.findings[:15])))
            elif result.passed and seen.incomplete:
                problems.append(("results_mismatch", seen.incomplete))
        if result.passed and self.plan is not None and statuses is not None:
            problem = self.plan.problem(statuses)
            if problem is not None:
                problems.append(problem)
        if not problems:
            return result
        status = "test_tampering" if any(s == "test_tampering" for s, _ in problems) else problems[0][0]
        why = "\n".join(f"{s}: {w}" for s, w in problems)
        log(why)
        return GradeResult(passed=False, exit_status=status, trace=f"{why}\n{result.trace}")
