"""The grader's layers against forgeries in the code under test, run for real without Docker: the
instrumented test block (the graded file written by root's step, the sentinel plugin loaded
first) runs under bash and this interpreter's pytest in a git repository of the calc fixture,
judged by the grader's own ``_judge``; a resolution is then proven as the grader proves it
(``differential``: outcomes compared with gold's, canary sessions with a graded test mutated in
place, each in a fresh tree). The Docker grades are in test_swebench_forgery.py and
test_swebench_differential.py; ``layer_of`` names which layer refused a grade."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import swebench_instances as fixture
from forgeries import FORGERIES, IN_PROCESS, MID_RUN, SWALLOWING_CONFTEST, new_file
from ratchet_ray.suites.swebench.proof.differential import (
    MISSING, Session, compare_with_gold, judge_canaries)
from ratchet_ray.suites.swebench.proof.gold import GoldRecord
from ratchet_ray.suites.swebench.grader import SwebenchGrader
from ratchet_ray.suites.swebench.integrity.graded_tests import locate
from ratchet_ray.suites.swebench.proof.mutants import Mutant, apply_all, candidates
from ratchet_ray.suites.swebench.integrity.session_layers import Protections
from ratchet_ray.suites.swebench.integrity.verdict import (
    Markers, instrument, junit_statuses, printed_exit_code, resolve, split_log)
from ratchet_ray.types import GradeResult

F2P, P2P = fixture.TESTS["ratchet__calc-1"]


class LocalBox:
    """Test fake of ``InstanceContainer``: commands run by bash on this machine, in ``workdir``."""

    def __init__(self, workdir: Path):
        self.workdir = str(workdir)

    def run(self, command: str, timeout_s: float, *, user: str | None = None,
            workdir: str | None = None) -> SimpleNamespace:
        done = subprocess.run(["bash", "-c", command], cwd=workdir or self.workdir, text=True,
                              capture_output=True, timeout=timeout_s)
        return SimpleNamespace(exit_code=done.returncode, stdout=done.stdout,
                               output=done.stdout + done.stderr)

    def put_files(self, files: dict[str, tuple[str, int]]) -> None:
        for path, (content, mode) in files.items():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(content)
            os.chmod(path, mode)

    def read_folder(self, folder: str, limit_of) -> tuple[dict[str, bytes], dict[str, int]]:
        found, too_big = {}, {}
        for file in Path(folder).iterdir() if Path(folder).is_dir() else []:
            limit = limit_of(file.name) if file.is_file() and not file.is_symlink() else None
            if limit is not None and file.stat().st_size > limit:
                too_big[file.name] = file.stat().st_size
            elif limit is not None:
                found[file.name] = file.read_bytes()
        return found, too_big


def _git(repo: Path, *args: str, stdin: str | None = None) -> str:
    env = {**os.environ, **fixture._GIT_ENV}
    return subprocess.run(["git", *args], cwd=repo, env=env, input=stdin, text=True,
                          capture_output=True, check=True).stdout


def _repo(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    for rel, text in fixture.BASE_FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    return repo, _git(repo, "rev-parse", "HEAD").strip()


def _eval_script(repo: Path, commit: str) -> str:
    return "\n".join([
        "#!/bin/bash", "set -uxo pipefail", f"cd {repo}", f"git checkout {commit} -- tests/test_ops.py",
        "git apply -v - <<'EOF_114329324912'", fixture.TEST_PATCH["ratchet__calc-1"].rstrip("\n"),
        "EOF_114329324912", ": '>>>>> Start Test Output'",
        f"{sys.executable} -m pytest -rA -p no:cacheprovider tests/test_ops.py",
        ": '>>>>> End Test Output'", ""])


def _log_statuses(section: str) -> dict[str, str]:
    statuses = {}
    for line in section.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR") and rest:
            statuses.setdefault(rest.split(" ")[0], word)
    return statuses


def session_locally(tmp_path: Path, patch: str, plant=None,
                    tracked_conftests: list[str] | None = None) -> Session:
    """One calc-1 session of ``patch`` on this machine: the instrumented eval (the graded file
    written by root's step: ``plant`` of its text, unchanged by default; the sentinel loaded
    first) and the session's own verdict by the grader's ``_judge``; ``tracked_conftests``: the
    lockdown's listing (None: the conftests are not checked)."""
    repo, commit = _repo(tmp_path)
    instance = {"repo": fixture.REPO, "base_commit": commit, "FAIL_TO_PASS": F2P,
                "PASS_TO_PASS": P2P, "test_patch": fixture.TEST_PATCH["ratchet__calc-1"]}
    _git(repo, "apply", "-", stdin=patch)
    script, markers, box, log = _eval_script(repo, commit), Markers.fresh(), LocalBox(repo), []
    layers = Protections.prepare(box, instance, script, markers, "pytest", log.append,
                                 root=str(tmp_path / "lib"), tracked_conftests=tracked_conftests,
                                 **({"plant": plant} if plant else {}))
    box.put_files(layers.files)
    run = subprocess.run(["bash", "-c", instrument(script, markers, None, layers.extras)],
                         capture_output=True, text=True, timeout=300)
    try:
        _, section = split_log(run.stdout, run.stdout + run.stderr, markers)
        junit = layers.collect(box)
    finally:
        shutil.rmtree(markers.junit_dir, ignore_errors=True)
    logged = _log_statuses(section)
    success = {kind: [t for t in tests if logged.get(t) == "PASSED"]
               for kind, tests in (("FAIL_TO_PASS", F2P), ("PASS_TO_PASS", P2P))}
    report = {"tests_status": {k: {"success": v} for k, v in success.items()}}
    resolved = all(logged.get(t) == "PASSED" for t in F2P + P2P)
    result = GradeResult(passed=resolved, exit_status="ok" if resolved else "unresolved",
                         trace="resolved" if resolved else f"unresolved\n{section[-1500:]}")
    result = SwebenchGrader._judge(result, report, junit, layers,
                                   printed_exit_code(run.stdout, markers), False, log.append)
    statuses = junit_statuses(junit) if junit else {}
    return Session("local", result, report, log={t: logged.get(t, MISSING) for t in F2P + P2P},
                   junit={t: resolve(t, statuses) or MISSING for t in F2P + P2P},
                   texts=layers.texts, written=layers.written, located=layers.located)


def _mutants(text: str) -> list[Mutant]:
    """The F2P test's mutant and one P2P test's, as a gold record of calc-1 keeps them."""
    found = candidates(locate({"FAIL_TO_PASS": F2P, "PASS_TO_PASS": P2P}, "pytest", []),
                       {"tests/test_ops.py": text}, random.Random(7))
    return [found[F2P[0]], found[P2P[0]]]


def grade_locally(tmp_path: Path, patch: str) -> GradeResult:
    """The calc-1 grade of ``patch`` on this machine, as the grader proves it: the real session,
    its outcomes compared with gold's (every graded test PASSED), then one canary session per
    mutant of ``_mutants`` (the F2P test's and a P2P test's), each in a fresh tree."""
    real = session_locally(tmp_path / "real", patch)
    if not real.result.passed:
        return real.result
    record = GoldRecord("ratchet__calc-1", "local", statuses={t: "PASSED" for t in F2P + P2P},
                        junit={t: "PASSED" for t in F2P + P2P}, resolved=True)
    result = compare_with_gold(real.result, real, record, {"FAIL_TO_PASS": F2P, "PASS_TO_PASS": P2P})
    if not result.passed:
        return result
    sessions = [(m, session_locally(tmp_path / f"canary-{i}", patch, lambda t, m=m: apply_all(t, [m])))
                for i, m in enumerate(_mutants(real.texts["tests/test_ops.py"]))]
    return judge_canaries(result, real, sessions, {"FAIL_TO_PASS": F2P, "PASS_TO_PASS": P2P}, 1)


def layer_of(result: GradeResult) -> str:
    """Which layer a not-resolved grade names first (for the detection tables)."""
    for phrase, layer in (("differential:", "differential"), ("compared with gold", "gold comparison"),
                          ("grader's pytest plugin", "sentinel"),
                          ("the JUnit report disagree", "junit cross-check")):
        if phrase in result.trace.split("\nsuspicion (not a verdict)")[0]:
            return layer
    return "tests (unresolved)" if result.exit_status == "unresolved" else result.exit_status


GOLD = fixture.GOLD["ratchet__calc-1"]


def test_the_gold_patch_resolves_with_every_layer_on(tmp_path):
    result = grade_locally(tmp_path, GOLD)
    assert result.passed, result.trace
    assert result.trace.count("FAILED as it must") == 2, result.trace


@pytest.mark.parametrize("name", sorted(IN_PROCESS))
def test_the_sentinel_sees_each_in_process_forgery_in_the_real_session(tmp_path, name):
    """Each forgery of the code under test is refused by the real session alone, and the trace
    names the sentinel (the screen is only a suspicion; no canary session is needed)."""
    result = session_locally(tmp_path, FORGERIES[name]).result
    assert not result.passed and result.exit_status == "test_tampering", result.trace
    assert layer_of(result) == "sentinel", result.trace


@pytest.mark.parametrize("name", sorted(MID_RUN))
def test_the_sentinel_sees_machinery_changed_during_a_test(tmp_path, name):
    """Changed from inside a test (and for some undone in a later one, before the session
    ends): the check after that test names the change, even though the checks after most tests
    are the quick ones (nothing changed since the last full comparison)."""
    patch, what = MID_RUN[name]
    result = session_locally(tmp_path, patch).result
    assert not result.passed and result.exit_status == "test_tampering", result.trace
    assert "grader's pytest plugin" in result.trace, result.trace
    assert f"after tests/test_ops.py::test_add: {what}" in result.trace, result.trace


def test_blanket_forgers_fail_on_the_differential_alone(tmp_path, monkeypatch):
    """Sentinel off: the canary sessions (a mutant only a real fix fails, in place) catch a
    forger that forces outcomes, and the gold comparison one whose outcomes are not gold's."""
    monkeypatch.setattr("ratchet_ray.suites.swebench.integrity.session_layers.HARNESS_REPOS",
                        frozenset({fixture.REPO}))
    for name in ("spare_env_canary", "spare_untracked_canary", "junit_and_summary_rewrite",
                 "forge_only_graded"):
        result = grade_locally(tmp_path / name, FORGERIES[name])
        assert result.exit_status == "test_tampering" and layer_of(result) == "differential", \
            result.trace
        assert f"mutant {F2P[0]}" in result.trace, result.trace
    assert grade_locally(tmp_path / "gold", GOLD).passed


def test_a_hook_on_an_object_that_claims_to_be_a_conftest_is_seen(tmp_path):
    """A module object whose ``__file__`` ends in conftest.py, registered by the code under test,
    is no conftest: pytest never loaded it as one."""
    from differential_forgeries import FORGERIES as AGAINST_THE_DIFFERENTIAL

    patch, _ = AGAINST_THE_DIFFERENTIAL["claimed_conftest_pyfunc_call"]
    result = session_locally(tmp_path, patch).result
    assert result.exit_status == "test_tampering" and layer_of(result) == "sentinel", result.trace
    assert "a pytest_pyfunc_call implementation was registered by tests.conftest" in result.trace


def _added(body: str) -> str:
    return "".join(f"+{line}\n" for line in body.splitlines())


def test_a_conftest_the_tree_does_not_track_is_refused_by_the_host(tmp_path):
    """A conftest.py pytest loads though the tree does not track it (here the patch adds it, as
    the patch's build code may write one into a sticky folder) swallows failed assertions: the
    sentinel trusts a conftest pytest loaded, the conftests pytest loaded checked against the
    lockdown's listing refuse it. Unchecked, the same session resolves."""
    forgery = new_file("conftest.py", _added(SWALLOWING_CONFTEST))
    checked = session_locally(tmp_path / "checked", forgery, tracked_conftests=[]).result
    assert (checked.passed, checked.exit_status) == (False, "test_tampering"), checked.trace
    assert ("pytest loaded a conftest.py that the tree does not track and the test patch does "
            "not add (the grader's pytest plugin listed what pytest loaded): conftest.py"
            in checked.trace), checked.trace
    assert session_locally(tmp_path / "unchecked", forgery).result.passed


def test_the_tree_s_own_conftests_still_resolve(tmp_path):
    """The gold patch beside a nested conftest the lockdown lists as tracked (with a hook the
    sentinel watches) resolves as it did unchecked."""
    honest = new_file("tests/conftest.py", _added(
        "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n    yield\n"))
    for tracked in (["tests/conftest.py", "docs/conftest.py"], None):
        result = session_locally(tmp_path / str(bool(tracked)), GOLD + honest,
                                 tracked_conftests=tracked).result
        assert result.passed and "conftest" not in result.trace, result.trace
