"""The harness guard inside an instance container: what a patch changed, and the harness put back.

Contracts (policy and path list: ``harness_paths``):
- ``HarnessGuard(box, instance, timeout_s)``: ``snapshot()`` before the patch is applied,
  ``restore(patch)`` after; either may be handed the output of ``state_command(instance)`` the
  caller ran at that moment in a batch of its own (``listed``). ``restore`` -> ``GuardOutcome``:
  ``restored`` lists ``(path, reason)`` put back to the base commit or deleted; ``tampering``,
  a message when the attempt must fail instead (a path in ``.git``/outside the tree, a harness
  file untracked before the patch, so without a base version, or a restore that did not hold).
- Only git, ``cat`` and ``rm`` run as root: nothing of the repository runs before the tests, so
  nothing the patch added can undo the restore.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from ratchet_ray.suites.swebench.docker.container import InstanceContainer
from ratchet_ray.suites.swebench.docker.infra import InfraFailure
from ratchet_ray.suites.swebench.integrity.harness_paths import (
    CONTENT_CHECKED, harness_reason, import_roots, patch_paths, shadowed_module, test_files,
    unsafe_paths)
from ratchet_ray.suites.swebench.integrity.verdict import runner_files


@dataclass
class GuardOutcome:
    restored: list[tuple[str, str]] = field(default_factory=list)
    tampering: str | None = None

    def describe(self) -> str:
        if not self.restored:
            return ""
        listed = "; ".join(f"{path} ({reason})" for path, reason in self.restored)
        return (f"harness restored: the patch changed {len(self.restored)} path(s) that decide "
                f"how tests run or report, put back as at the base commit before grading: {listed}")


class HarnessGuard:
    def __init__(self, box: InstanceContainer, instance: dict, timeout_s: float):
        self.box = box
        self.base = instance["base_commit"]
        self.tests = test_files(instance)
        self.runners = runner_files(instance.get("eval_script") or "")
        # where a new module shadows pytest or the standard library: the tree's root, and its
        # folders the image's PYTHONPATH puts first (a new src/pytest.py replaced pytest)
        config = (getattr(getattr(box, "container", None), "attrs", None) or {}).get("Config") or {}
        self.roots = ("", *import_roots(config.get("Env") or [], getattr(box, "workdir", "")))
        self.timeout_s = timeout_s
        self._changed0: set[str] = set()
        self._untracked0: set[str] = set()

    @staticmethod
    def locked_files(instance: dict, eval_script: str | None = None) -> set[str]:
        """The files that decide the verdict, kept root's during the test run with their
        folders (``lockdown.lockdown_command``, run by ``InstanceContainer.untrusted_setup(lockdown=...)``):
        the graded test files and the files the test command names."""
        script = eval_script if eval_script is not None else instance.get("eval_script") or ""
        return test_files(instance) | runner_files(script)

    @staticmethod
    def state_command(instance: dict) -> str:
        """The root command that lists the tree's state (what ``snapshot``/``restore`` read)."""
        return (f"git -c core.quotepath=off diff --name-only --no-renames -z "
                f"{instance['base_commit']} && printf '\\0' && git ls-files --others -z")

    def _state(self, listed: Any = None) -> tuple[set[str], set[str]]:
        """(tracked paths differing from the base commit, untracked paths, ignored ones too),
        from one exec (``listed``: its result, when the caller ran ``state_command``): both
        NUL-terminated lists, an empty entry between them."""
        if listed is None:
            listed = self.box.run(self.state_command({"base_commit": self.base}), self.timeout_s,
                                  user="root")
        entries = listed.stdout.split("\0")
        if listed.exit_code != 0 or "" not in entries:
            why = getattr(listed, "output", None) or getattr(listed, "stderr", "")
            raise InfraFailure("docker_error", f"container {self.box.name}: listing the changed "
                               f"paths failed (exit {listed.exit_code}): {why[-500:]}")
        cut = entries.index("")  # no path is empty: the first empty entry is the separator
        return ({p for p in entries[:cut] if p.strip()},
                {p for p in entries[cut + 1:] if p.strip()})

    def snapshot(self, listed: Any = None) -> None:
        self._changed0, self._untracked0 = self._state(listed)

    def _read(self, command: str) -> str | None:
        result = self.box.run(command, self.timeout_s, user="root")
        return result.output if result.exit_code == 0 else None

    def _harness(self, paths: set[str]) -> list[tuple[str, str]]:
        found = []
        for path in sorted(paths):
            quoted = shlex.quote(path)
            before = after = None
            if path.rsplit("/", 1)[-1] in CONTENT_CHECKED:
                before = self._read(f"git show {self.base}:{quoted} 2>/dev/null")
                after = self._read(f"cat -- {quoted} 2>/dev/null")
            elif shadowed_module(path, self.roots) is not None:  # only one the patch creates
                before = self._read(f"git cat-file -e {self.base}:{quoted} 2>/dev/null")
            reason = harness_reason(path, self.tests, before, after, self.runners, self.roots)
            if reason:
                found.append((path, reason))
        return found

    def _touched(self, named: set[str], listed: Any = None) -> set[str]:
        changed, untracked = self._state(listed)
        return ((changed - self._changed0) | (untracked - self._untracked0)
                | (named & self._untracked0))

    def restore(self, patch: str, listed: Any = None) -> GuardOutcome:
        named = patch_paths(patch)
        bad = unsafe_paths(named)
        if bad:
            return GuardOutcome(tampering=f"the patch writes outside the work tree or into .git: "
                                          f"{', '.join(bad[:10])}")
        harness = self._harness(self._touched(named, listed))
        if not harness:
            return GuardOutcome()
        untracked_before = [p for p, _ in harness if p in self._untracked0]
        if untracked_before:
            return GuardOutcome(tampering="the patch changed harness files that are not in the "
                                          "repository's history, so they cannot be restored: "
                                          + ", ".join(untracked_before[:10]))
        steps = []
        for path, _ in harness:
            q = shlex.quote(path)
            steps.append(f"if git cat-file -e {self.base}:{q} 2>/dev/null; then rm -rf -- {q}; "
                         f"git checkout -q {self.base} -- {q}; else rm -rf -- {q}; fi")
        result = self.box.run(" && ".join(f"( {s} )" for s in steps), self.timeout_s, user="root")
        left = self._harness(self._touched(set()))
        if result.exit_code != 0 or left:
            return GuardOutcome(restored=harness, tampering=(
                f"harness paths could not be restored ({', '.join(p for p, _ in left[:10]) or 'git'}"
                f" failed): {result.output[-300:]}"))
        return GuardOutcome(restored=harness)
