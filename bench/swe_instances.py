"""N SWE-bench-format instances on local repositories, for ``bench/swe_throughput.py``.

The test fixture's approach (``tests/suites/swebench/swebench_instances.py``) at a larger scale: each
repository is committed with fixed dates (``base_commit`` is the real hash inside its image), its
image builds locally from ``ratchet-swe-base`` through the instance's ``dockerfile``, and every
instance has a real gold ``patch`` and ``test_patch`` made with ``git diff``.

- ``REPOS`` repositories: ``fast`` (60 quick tests), ``medium`` (120 quick tests over two files),
  ``slow`` (40 tests, 8 of which sleep 0.25 s each: 2 s of test time per run).
- Instance ``i`` lives in repository ``REPOS[i % 3]``; its bug is ``bug_<i>`` returning ``x - 1``
  instead of ``x + i``; the gold patch fixes that line; its FAIL_TO_PASS test
  (``tests/test_fix_<i>.py``, added by the test patch) calls it; PASS_TO_PASS is every test of
  the repository's test files.
- With ``hang=True`` the last instance's test patch adds a second test that never returns, gold
  patch or not: its eval runs into the per-command timeout, as a hanging SWE-bench test does.

``make_instances(n, hang=True)`` returns the instance dicts (gold ``patch`` included).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "suites" / "swebench"))
from swebench_instances import _GIT_ENV, dockerfile  # noqa: E402  (the fixture's identity)

REPOS = ("fast", "medium", "slow")
TEST_COUNTS = {"fast": (60,), "medium": (60, 60), "slow": (40,)}
SLOW_TESTS, SLOW_SLEEP_S = 8, 0.25
MARK = "EOF_114329324912"


def _tests(repo: str, number: int, count: int) -> str:
    lines = [f"from {repo}.core import helper", "import time", ""]
    for k in range(count):
        sleep = (f"    time.sleep({SLOW_SLEEP_S})\n" if repo == "slow" and k < SLOW_TESTS else "")
        lines.append(f"\ndef test_helper_{number}_{k}():\n{sleep}"
                     f"    assert helper({k}) == {2 * k}\n")
    return "\n".join(lines)


def _files(repo: str, bugs: list[int]) -> dict[str, str]:
    core = ['"""Generated module of a throughput benchmark repository."""', "", "",
            "def helper(x):", "    return 2 * x", ""]
    for i in bugs:
        core += ["", f"def bug_{i}(x):", "    return x - 1", ""]
    files = {f"{repo}/__init__.py": "", f"{repo}/core.py": "\n".join(core) + "\n",
             "README.md": f"{repo}: a generated repository of the SWE-bench throughput bench.\n"}
    for number, count in enumerate(TEST_COUNTS[repo]):
        files[f"tests/test_core_{number}.py"] = _tests(repo, number, count)
    return files


def _git(cwd: str, *argv: str) -> str:
    return subprocess.run(["git", *argv], cwd=cwd, env={**os.environ, **_GIT_ENV}, check=True,
                          capture_output=True, text=True).stdout


def _diff(tmp: str, edit: dict[str, str]) -> str:
    """The ``git diff`` of writing ``edit`` over the base commit (then reset)."""
    for rel, text in edit.items():
        (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
        (Path(tmp) / rel).write_text(text)
    _git(tmp, "add", "-A")
    diff = _git(tmp, "diff", "--cached")
    _git(tmp, "reset", "-q", "--hard")
    _git(tmp, "clean", "-fdq")
    return diff


def _dockerfile(files: dict[str, str], commit: str) -> str:
    return dockerfile(commit, dict(sorted(files.items())))  # the fixture's, on these files


def _eval_script(commit: str, existing: list[str], new: str, test_patch: str) -> str:
    reset = f"git checkout {commit} -- {' '.join(existing)}"
    return "\n".join(["#!/bin/bash", "set -uxo pipefail", "cd /testbed", reset,
                      f"git apply -v - <<'{MARK}'", test_patch.rstrip("\n"), MARK,
                      ": '>>>>> Start Test Output'",
                      f"python3 -m pytest -rA -p no:cacheprovider {' '.join([*existing, new])}",
                      ": '>>>>> End Test Output'", reset, ""])


def make_instances(n: int, hang: bool = True) -> list[dict]:
    """``n`` instances over ``REPOS`` (module docstring)."""
    if n < 1:
        raise ValueError(f"make_instances: n must be >= 1, got {n}")
    by_repo = {repo: [i for i in range(n) if REPOS[i % len(REPOS)] == repo] for repo in REPOS}
    instances = []
    for repo, ids in by_repo.items():
        if not ids:
            continue
        files = _files(repo, ids)
        with tempfile.TemporaryDirectory() as tmp:
            for rel, text in files.items():
                (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
                (Path(tmp) / rel).write_text(text)
            _git(tmp, "init", "-q")
            _git(tmp, "add", "-A")
            _git(tmp, "commit", "-q", "-m", "base")
            commit = _git(tmp, "rev-parse", "HEAD").strip()
            existing = sorted(p for p in files if p.startswith("tests/"))
            p2p = [f"{path}::test_helper_{number}_{k}"
                   for number, path in enumerate(existing)
                   for k in range(TEST_COUNTS[repo][number])]
            for i in ids:
                core = files[f"{repo}/core.py"].replace(
                    f"def bug_{i}(x):\n    return x - 1", f"def bug_{i}(x):\n    return x + {i}")
                gold = _diff(tmp, {f"{repo}/core.py": core})
                test = (f"from {repo}.core import bug_{i}\n\n\ndef test_fix():\n"
                        f"    assert bug_{i}(1) == {1 + i}\n")
                hangs = hang and i == n - 1
                if hangs:
                    test += "\n\ndef test_hangs():\n    import time\n    while True:\n" \
                            "        time.sleep(0.1)\n"
                new = f"tests/test_fix_{i}.py"
                test_patch = _diff(tmp, {new: test})
                instance_id = f"bench__{repo}-{i}"
                f2p = [f"{new}::test_fix"] + ([f"{new}::test_hangs"] if hangs else [])
                instances.append({
                    "instance_id": instance_id, "repo": f"bench/{repo}", "base_commit": commit,
                    "version": "0.1", "problem_statement": f"`{repo}.core.bug_{i}(x)` must "
                    f"return x + {i}.", "hints_text": "", "created_at": "2024-01-01T00:00:00Z",
                    "environment_setup_commit": commit, "patch": gold, "test_patch": test_patch,
                    "FAIL_TO_PASS": json.dumps(f2p), "PASS_TO_PASS": json.dumps(p2p),
                    "eval_script": _eval_script(commit, existing, new, test_patch),
                    "log_parser": "parse_log_pytest", "eval_type": "pass_and_fail",
                    "dockerfile": _dockerfile(files, commit)})
    return sorted(instances, key=lambda i: int(i["instance_id"].rsplit("-", 1)[1]))
