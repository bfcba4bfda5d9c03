"""Resolutions proven by differential canary sessions, on the local images (issue 44): the gold
patch resolves with its canary sessions, gold records are made once and kept, no forgery of
``differential_forgeries`` resolves (the trace names the layer that refused it), and a forger
that records what it sees cannot tell a canary session from the real one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from differential_forgeries import FORGERIES, OBSERVER_PATCH
from ratchet_ray.suites.swebench.proof.gold import GoldStore
from ratchet_ray.suites.swebench.grader import GOLD_SUBDIR, SwebenchGrader
from ratchet_ray.suites.swebench.settings import GradingLimits
from test_swebench_layers import layer_of

pytestmark = pytest.mark.docker
CALC = "ratchet__calc-1"


@pytest.fixture
def grader(docker_client, local_settings, limits, tmp_path):
    return SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)


def _logs(run_dir: Path, trace: str) -> Path:
    return Path(re.search(r"^log: (.+)$", trace, re.M).group(1))


def test_gold_records_are_made_once_then_resolutions_are_proven_by_canary_sessions(
        docker_client, local_settings, limits, tmp_path, tasks, gold, instances):
    """A fresh gold-record folder: the first would-be resolution makes the record (the trace and
    the log say so, with its cost); the next grade and ``grader.proof.gold_record`` find it stored."""
    local_settings.gold_records = str(tmp_path / "gold")
    grader = SwebenchGrader(local_settings, limits, tmp_path / "run", client=docker_client)
    instance = next(i for i in instances if i["instance_id"] == "ratchet__calc-2")
    first = grader.grade(tasks["ratchet__calc-2"], gold["ratchet__calc-2"])
    assert first.passed, first.trace
    log = (_logs(tmp_path, first.trace) / "run_instance.log").read_text()
    assert "gold record: none stored for this instance and image; making it now" in log
    # clamp(12, 0, 10) == 10 is mutated to the call's other argument, 12: what the unfixed
    # clamp returns, so the base-code session drops it (a patch fixing nothing would pass it),
    # and the test is drawn again (never 12 again): calc-2 keeps a FAIL_TO_PASS mutant
    assert re.search(r"gold record \S+: gold resolves, 3 mutant\(s\) it fails kept, 1 dropped "
                     r"\(made now in [\d.]+s\)", log), log
    assert "[gold mutants (redraw 1)] " in log and "[base mutants (redraw 1)] " in log, log
    assert "(made now)" in first.trace and re.search(r"cost: real session [\d.]+s; [23] canary", first.trace)
    lines = re.findall(r"canary session \d of (\d) \([\d.]+s\), mutant (\S+) .*: FAILED as it must",
                       first.trace)
    assert 2 <= len(lines) <= 3 and len(lines) == int(lines[0][0]), first.trace
    assert any(test == "tests/test_clamp.py::test_clamp_high" for _, test in lines), first.trace
    for i in range(1, len(lines) + 1):  # each canary session kept its own logs
        assert (_logs(tmp_path, first.trace) / f"canary-{i}" / "eval_output.txt").is_file()
    # the record: in the folder and in the run's artifacts, and grader.proof.gold_record finds it
    stored = list((tmp_path / "gold" / "ratchet__calc-2").glob("*.json"))
    assert len(stored) == 1 and list((tmp_path / "run" / GOLD_SUBDIR / "ratchet__calc-2").glob("*.json"))
    record = json.loads(stored[0].read_text())
    assert record["resolved"] and set(record["statuses"].values()) == {"PASSED"}
    assert record["dropped"] == ["tests/test_clamp.py::test_clamp_high (tests/test_clamp.py:5: 10 -> "
                                 "12): PASSED under the base code"], record["dropped"]
    again = grader.grade(tasks["ratchet__calc-2"], gold["ratchet__calc-2"].replace("hi, max", "hi,  max"))
    assert again.passed and "(stored)" in again.trace, again.trace
    ensured = grader.proof.gold_record(instance)
    assert ensured.key == GoldStore(tmp_path / "gold").load(
        "ratchet__calc-2", ensured.image_id).key and len(ensured.kept) == 3
    high, = [m for m in ensured.mutants() if m.test == "tests/test_clamp.py::test_clamp_high"]
    assert high.new not in ("10", "12"), high


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_no_forgery_resolves_and_the_trace_names_the_layer(grader, tasks, name):
    patch, layers = FORGERIES[name]
    result = grader.grade(tasks[CALC], patch)
    assert (result.passed, result.infra_failure) == (False, False), result.trace
    assert layer_of(result) in layers, (layer_of(result), result.trace)
    if layer_of(result) == "differential":  # the proof: which session, which test, what changed
        assert result.exit_status == "test_tampering"
        assert re.search(r"canary session \d of \d \([\d.]+s\), mutant tests/test_ops\.py::test_\w+ "
                         r"\(tests/test_ops\.py:\d+\): reported (PASSED|XFAIL)", result.trace)


def _observations(trace: str) -> dict[str, dict]:
    folder = _logs(Path("."), trace)
    found = {}
    for path in [folder / "eval_output.txt", *sorted(folder.glob("canary-*/eval_output.txt"))]:
        seen = re.findall(r"OPS-OBSERVED (\{.*\})", path.read_text())
        assert len(seen) == 1, path
        found[path.parent.name] = json.loads(seen[0])
    return found


def _masked(value: str) -> str:
    """Per-session random names (the container's host name, the sentinel's module, the report
    folder) differ between any two sessions, two real ones too: masked before comparing."""
    return re.sub(r"[0-9a-fA-F]{8,}", "<random>", value)


def test_no_session_shows_the_deadline_it_has_left(docker_client, local_settings, tasks, tmp_path):
    """The instance deadline is the host's alone. With limits of the defaults' shape (a
    command's as long as the instance's: 1800 s and 1800 s), the real session's deadline
    started before its gold record (made in this grade) and each canary session's with the
    session, so ``timeout``'s argument, in the process list every test process can read, told
    the real session from the canary ones (272 against 297-299 on calc-1). Now every session
    shows the command's limit, and the processes a test sees are the same in each, random
    names masked."""
    local_settings.gold_records = str(tmp_path / "gold")
    grader = SwebenchGrader(local_settings, GradingLimits(timeout_s=300, instance_deadline_s=300),
                            tmp_path / "run", client=docker_client)
    result = grader.grade(tasks[CALC], OBSERVER_PATCH)
    assert result.passed and "(made now)" in result.trace, result.trace
    seen = _observations(result.trace)
    real = [_masked(c) for c in seen.pop(next(k for k in seen if not k.startswith("canary-")))["processes"]]
    assert any(c.startswith("timeout -s KILL 300 /bin/bash -c /bin/bash ") for c in real), real
    assert 2 <= len(seen) <= 3
    for name, other in seen.items():
        assert [_masked(c) for c in other["processes"]] == real, name


def test_a_forger_cannot_tell_a_canary_session_from_the_real_one(grader, tasks, gold):
    """The gold fix plus code that, at its first call in every session, records what a test
    process can see (every file of the graded folder: size, owner, mode, text; the command; the
    environment; a record left by an earlier session in /tmp, /var/tmp, $HOME, the tree or
    /dev/shm) and prints it. No session finds an earlier record, and the sessions' observations
    are the same, random names masked, except the one literal each canary session mutated."""
    result = grader.grade(tasks[CALC], OBSERVER_PATCH)
    assert result.passed, result.trace
    seen = _observations(result.trace)
    real = seen.pop(next(k for k in seen if not k.startswith("canary-")))
    assert 2 <= len(seen) <= 3 and real["previous"] == [] and real["uid"] == 65534
    # each canary session's change is in the grade's log, never in the trace (the capsule's)
    log = (_logs(Path("."), result.trace) / "run_instance.log").read_text()
    mutated = dict(re.findall(r"canary (\d) \(\S+ \(tests/test_ops\.py:\d+: (\S+ -> \S+)\)\)", log))
    assert len(mutated) == len(seen) and not any(change in result.trace for change in mutated.values())
    for name, other in seen.items():
        assert other["previous"] == [], f"{name} found a record of another session"
        assert (other["argv"], other["cwd"], other["uid"]) == (real["argv"], real["cwd"], real["uid"])
        env = {k: _masked(v) for k, v in other["env"].items() if not k.startswith("RATCHET_SENTINEL_")}
        assert env == {k: _masked(v) for k, v in real["env"].items()
                       if not k.startswith("RATCHET_SENTINEL_")}
        assert [k for k in other["env"] if k.startswith("RATCHET_SENTINEL_")] != []
        assert other["files"].keys() == real["files"].keys()
        for path, info in other["files"].items():
            mine = real["files"][path]
            assert (info["size"], info["uid"], info["mode"]) == (mine["size"], mine["uid"], mine["mode"])
            if path != "tests/test_ops.py":
                assert info["text"] == mine["text"], path
        old, new = mutated[name.split("-")[1]].split(" -> ")
        diff = [(a, b) for a, b in zip(real["files"]["tests/test_ops.py"]["text"].split("\n"),
                                       other["files"]["tests/test_ops.py"]["text"].split("\n")) if a != b]
        # The expectation is the line's last literal (``mul(0, 7) == 0`` -> ``== 9``).
        head, _, tail = diff[0][0].rpartition(old) if len(diff) == 1 else ("", "", "")
        assert len(diff) == 1 and head + new + tail == diff[0][1], diff
