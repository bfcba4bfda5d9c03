"""The grader's layers inside one session: the graded test files written by root, and the
sentinel plugin (the static screen, a suspicion only, is ``screen``'s).

Contracts:
- ``Protections.prepare(box, instance, eval_script, markers, runner, log, plant=...)``, after
  the restore and before the eval script: reads the graded tests' files at the base commit in
  one exec, applies the test patch on the host (``texts``), and stages what root writes into
  each just before the tests, ``plant(texts)`` (default unchanged): every session writes the
  same files the same way, a canary session's with one test mutated. ``files`` (the staged
  texts, 0600 under ``<root>/stage-<random>/``, a folder of mode ``folders`` names: 0700, and
  the sentinel's module) go in with the eval script in one archive; ``extras`` is what
  ``verdict.instrument`` adds. The sentinel is pytest's alone. ``tracked_conftests``: the
  tracked conftests the lockdown listed (``lockdown.listed_conftests``; None: no listing, no
  check), which with the test patch's make ``conftests``, the legitimate ones.
- ``judge(result, statuses, exit_code, log, test_log)``: a sentinel finding is
  ``test_tampering`` whatever the tests said, and so is a conftest pytest loaded that is not
  in ``conftests`` (checked here, on the host); a resolution the sentinel cannot vouch for is
  ``results_mismatch``, and so, for a log runner, is a test the log reports failed and then
  passed (``log_canaries.contradictions``). The trace names what was detected, by which layer.
"""

from __future__ import annotations

import base64
import posixpath
import secrets
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable

from ratchet_ray.suites.swebench.integrity import graded_tests, log_canaries
from ratchet_ray.suites.swebench.integrity.lockdown import conftest_paths, unexpected_conftests
from ratchet_ray.suites.swebench.integrity.sentinel import (
    HARNESS_REPOS, MAX_RESULT_BYTES, Sentinel, judge as sentinel_judge)
from ratchet_ray.suites.swebench.integrity.verdict import MAX_JUNIT_BYTES, RunExtras, command_words
from ratchet_ray.types import GradeResult

STAGE_ROOT = "/var/lib/ratchet"


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


def _located(instance: dict[str, Any], eval_script: str,
             runner: str | None) -> dict[str, tuple[str, str]]:
    """The graded tests a session writes the files of (``graded_tests.locate``)."""
    if runner is None:
        return {}
    return graded_tests.locate(instance, runner, command_words(eval_script))


@dataclass
class Protections:
    runner: str | None = None
    sentinel: Sentinel | None = None
    stage: str = ""
    workdir: str = ""
    junit_path: str = ""
    texts: dict[str, str] = field(default_factory=dict)
    """The files that hold graded tests, as the test patch leaves them (read at the base commit)."""
    written: dict[str, str] = field(default_factory=dict)
    """What root writes into each just before the tests (``plant(texts)``)."""
    located: dict[str, tuple[str, str]] = field(default_factory=dict)
    files: dict[str, tuple[str, int]] = field(default_factory=dict)
    """What ``prepare`` planned to stage: ``{absolute path: (text, mode)}``, root-owned."""
    results: list[dict] = field(default_factory=list)
    conftests: set[str] | None = None
    """The conftests pytest may load, relative to the tree (``lockdown.conftest_paths``; None:
    not checked)."""

    @staticmethod
    def read_step(instance: dict[str, Any], eval_script: str, runner: str | None) -> str | None:
        """The root command ``prepare`` would run to read the graded test files at the base
        commit (None when it reads none), for a caller that batches it with other steps and
        hands its stdout to ``prepare`` (``read``)."""
        files = graded_tests.files_of(_located(instance, eval_script, runner))
        return _base_texts_command(instance["base_commit"], files) if files else None

    @classmethod
    def prepare(cls, box: Any, instance: dict[str, Any], eval_script: str, markers: Any,
                runner: str | None, log: Callable[[str], None],
                root: str = STAGE_ROOT, read: str | None = None,
                plant: Callable[[dict[str, str]], dict[str, str]] | None = None,
                tracked_conftests: list[str] | None = None) -> "Protections":
        found = cls(workdir=box.workdir, junit_path=markers.junit_path, runner=runner)
        if tracked_conftests is not None:
            found.conftests = conftest_paths(tracked_conftests, instance.get("test_patch") or "")
        if runner is None:
            return found
        located = _located(instance, eval_script, runner)
        files = graded_tests.files_of(located)
        if files:
            texts = graded_tests.after_test_patch(_base_texts(box, instance["base_commit"], files, read),
                                              instance.get("test_patch") or "")
            found.located = graded_tests.settle(located, texts)
            homes = sorted({f for f, _ in found.located.values()})
            # a file that does not decode as UTF-8 is not written back (it would change)
            found.texts = {f: texts[f] for f in homes
                           if texts.get(f) is not None and "\ufffd" not in texts[f]}
            found.located = {t: v for t, v in found.located.items() if v[0] in found.texts}
            found.written = plant(dict(found.texts)) if plant else dict(found.texts)
        if found.written:
            found.stage = f"{root}/stage-{secrets.token_hex(8)}"
            for i, path in enumerate(sorted(found.written)):
                found.files[f"{found.stage}/{i}"] = (found.written[path], 0o600)
            log(f"graded files written by root before the tests: {', '.join(sorted(found.written))}")
        if runner == "pytest" and instance.get("repo") not in HARNESS_REPOS:
            found.sentinel = Sentinel.fresh(markers.junit_dir, box.workdir, root)
            found.files.update(found.sentinel.files())
        return found

    def root_steps(self) -> list[str]:
        """Root writes each graded file in place (``cat >``: same inode, owner and mode); a
        write that fails ends the script before the tests start."""
        return [f"cat {self.stage}/{i} > {shlex.quote(f'{self.workdir}/{path}')} || exit 97"
                for i, path in enumerate(sorted(self.written))]

    @property
    def folders(self) -> dict[str, int]:
        """The folders ``files`` go in whose mode matters: the stage, root's alone (0700), so
        the tests' uid cannot list or ``stat`` what root writes from."""
        return {self.stage: 0o700} if self.stage else {}

    @property
    def extras(self) -> RunExtras:
        steps = tuple(self.root_steps())
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
            strangers = (unexpected_conftests(seen.conftests, self.conftests, self.workdir)
                         if self.conftests is not None and seen.conftests is not None else [])
            if strangers:
                problems.append(("test_tampering", "pytest loaded a conftest.py that the tree "
                                 "does not track and the test patch does not add (the grader's "
                                 "pytest plugin listed what pytest loaded): "
                                 + ", ".join(strangers[:10])))
        if not problems:
            return result
        status = "test_tampering" if any(s == "test_tampering" for s, _ in problems) else problems[0][0]
        why = "\n".join(f"{s}: {w}" for s, w in problems)
        log(why)
        return GradeResult(passed=False, exit_status=status, trace=f"{why}\n{result.trace}")
