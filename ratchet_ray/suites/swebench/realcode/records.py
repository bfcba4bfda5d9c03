"""One kept bug as an instance record in SWE-bench's fields.

Contracts:
- ``instance_record(project, tree, bug, f2p, p2p, image_tag, reasons)`` works with git in a
  scratch copy of ``tree``: the base is the tree with the bug applied and every file holding a
  FAIL_TO_PASS test deleted (as in Verified, the agent never sees those tests), committed as a
  root commit with a fixed identity and date (``base_commit``, the same on the host and in the
  image, whose ``dockerfile`` fails unless git arrives at that hash); ``test_patch`` adds those
  files back; ``patch`` (gold) is the bug's reverse; ``eval_script`` applies the test patch and
  runs the test command on its files between swebench's markers; ``problem_statement`` is
  written from the failures and never quotes a test file; FAIL_TO_PASS / PASS_TO_PASS are JSON
  lists as SWE-bench stores them.
- The record is a function of its inputs only: no clock, no host path.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from ratchet_ray.suites.swebench.realcode.bugs import Bug
from ratchet_ray.suites.swebench.realcode.projects import Project, RealcodeError, test_file
from ratchet_ray.suites.swebench.realcode.runner import END, START, test_args

GIT_ENV = {"GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
           "GIT_AUTHOR_NAME": "ratchet", "GIT_AUTHOR_EMAIL": "ratchet@localhost",
           "GIT_COMMITTER_NAME": "ratchet", "GIT_COMMITTER_EMAIL": "ratchet@localhost"}
HEREDOC = "EOF_114329324912"
_MAX_LISTED = 5
_QUOTE = 12


def _git(cwd: Path, *argv: str, stdin: str | None = None) -> str:
    proc = subprocess.run(["git", *argv], cwd=cwd, input=stdin, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV, "GIT_CONFIG_GLOBAL": os.devnull,
                               "GIT_CONFIG_NOSYSTEM": "1"})
    if proc.returncode != 0:
        raise RealcodeError(f"git {argv[0]} failed in the scratch tree: {proc.stderr.strip()}")
    return proc.stdout


def instance_id(project: Project, bug: Bug) -> str:
    owner, name = project.repo.split("/")
    return f"{owner}__{name}-{project.version}-{bug.modifier}-{bug.key}"


def test_files(project: Project, f2p: list[str]) -> list[str]:
    return sorted({test_file(project, test) or "" for test in f2p} - {""})


def _why(reason: str, test_text: str) -> str:
    """The failure's reason without test code: an assertion's text is the test's own line."""
    kind, _, message = reason.partition(":")
    if not re.fullmatch(r"[A-Za-z_][\w.]*", kind.strip()):
        return "the test fails"
    if kind.strip().endswith("AssertionError"):
        return f"{kind.strip()} (an expectation about the result does not hold)"
    if not message.strip():
        return f"{kind.strip()} is raised"
    message = message.strip()[:200]
    # Any 12 characters the test file also holds may be its code: then only the kind is told.
    if any(message[i:i + _QUOTE] in test_text for i in range(max(0, len(message) - _QUOTE + 1))):
        return kind.strip()
    return f"{kind.strip()}: {message}"


def problem_statement(project: Project, bug: Bug, f2p: list[str], reasons: dict[str, str],
                      test_text: str) -> str:
    """The issue text: which behaviour broke and how it fails (module contract)."""
    listed = [f"- `{test.split('::', 1)[-1]}` ({test_file(project, test)}): "
              f"{_why(reasons.get(test, ''), test_text)}" for test in f2p[:_MAX_LISTED]]
    more = f"\n- ... and {len(f2p) - _MAX_LISTED} more" if len(f2p) > _MAX_LISTED else ""
    return (f"{project.repo} {project.version}: {len(f2p)} test(s) of the project's own suite "
            f"fail after a recent change to the library code.\n\nFailures seen when running "
            f"`{project.test_command}`:\n" + "\n".join(listed) + more +
            "\n\nThe tests are correct; the library is not. Fix the library so that these "
            "tests pass again and every other test keeps passing.\n")


def eval_script(project: Project, test_patch: str, files: list[str]) -> str:
    return "\n".join(["#!/bin/bash", "set -uxo pipefail", "cd /testbed",
                      f"git apply -v - <<'{HEREDOC}'", test_patch.rstrip("\n"), HEREDOC,
                      f": '{START}'",
                      f"{project.test_command} {test_args(project, files)}",
                      f": '{END}'", ""])


def instance_dockerfile(image_tag: str, bug: Bug, files: list[str], commit: str) -> str:
    env = " ".join(f"{k}={v}" for k, v in GIT_ENV.items())
    payload = base64.b64encode(bug.diff.encode()).decode()
    return (f"FROM {image_tag}\n"
            f"RUN cd /testbed && echo {payload} | base64 -d | git apply - "
            f"&& rm -f -- {' '.join(shlex.quote(f) for f in files)} "
            f"&& git init -q && git add -A && {env} git commit -q -m base "
            f"&& test \"$(git rev-parse HEAD)\" = {commit}\n"
            "WORKDIR /testbed\n")


def instance_record(project: Project, tree: Path, bug: Bug, f2p: list[str], p2p: list[str],
                    image_tag: str, reasons: dict[str, str]) -> dict:
    """The SWE-bench record of ``bug`` (module contract)."""
    files = test_files(project, f2p)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "testbed"
        shutil.copytree(tree, work, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        _git(work, "apply", "-", stdin=bug.diff)
        test_text = "\n".join((work / f).read_text(errors="replace") for f in files)
        for f in files:
            (work / f).unlink()
        _git(work, "init", "-q")
        _git(work, "add", "-A")
        _git(work, "commit", "-q", "-m", "base")
        commit = _git(work, "rev-parse", "HEAD").strip()
        _git(work, "apply", "-R", "-", stdin=bug.diff)
        gold = _git(work, "diff")
        _git(work, "checkout", "-q", "--", ".")
        for f in files:
            shutil.copy2(tree / f, work / f)
        _git(work, "add", "-A")
        test_patch = _git(work, "diff", "--cached")
    return {
        "instance_id": instance_id(project, bug), "repo": project.repo, "base_commit": commit,
        "version": project.version,
        "problem_statement": problem_statement(project, bug, f2p, reasons, test_text),
        "hints_text": "", "created_at": "2024-01-01T00:00:00Z",
        "environment_setup_commit": commit, "patch": gold, "test_patch": test_patch,
        "FAIL_TO_PASS": json.dumps(f2p), "PASS_TO_PASS": json.dumps(p2p),
        "eval_script": eval_script(project, test_patch, files), "log_parser": project.log_parser,
        "eval_type": "pass_and_fail",
        "dockerfile": instance_dockerfile(image_tag, bug, files, commit),
        "realcode": {"modifier": bug.modifier, "file": bug.file, "entity": bug.entity,
                     "project_image": image_tag},
    }
