"""Gold records and the differential's judgement of canary sessions, without Docker: which
mutants a grade draws, how records are kept, outcomes compared with gold, and what a canary
session's report makes of a would-be resolution (the sessions run for real in
test_swebench_differential.py)."""

from __future__ import annotations

import random

import pytest
from pydantic import ValidationError

import swebench_instances as fixture
from ratchet_ray.suites.swebench.integrity import graded_tests
from ratchet_ray.suites.swebench.proof.differential import (
    Session, compare_with_gold, draw, judge_canaries)
from ratchet_ray.suites.swebench.proof.gold import GoldRecord, GoldStore, record_key
from ratchet_ray.suites.swebench.proof.mutants import Mutant
from ratchet_ray.suites.swebench.settings import SwebenchSettings
from ratchet_ray.types import GradeResult

F2P, P2P = fixture.TESTS["ratchet__calc-1"]
INSTANCE = {"FAIL_TO_PASS": F2P, "PASS_TO_PASS": P2P}
AFTER = graded_tests.after_test_patch({"tests/test_ops.py": fixture.BASE_FILES["tests/test_ops.py"]},
                                  fixture.TEST_PATCH["ratchet__calc-1"])["tests/test_ops.py"]


def _record(**kw) -> GoldRecord:
    kept = [Mutant(t, "tests/test_ops.py", i + 5, 20, "5", "7", "", (i + 5, i + 5)).as_dict()
            for i, t in enumerate([*F2P, *P2P])]
    return GoldRecord("ratchet__calc-1", "sha256:" + "ab" * 32,
                      statuses={t: "PASSED" for t in [*F2P, *P2P]}, resolved=True,
                      kept=kw.pop("kept", kept), **kw)


def test_each_grade_draws_its_canary_sessions_a_fail_to_pass_mutant_first():
    for seed in range(40):
        chosen = draw(_record(), INSTANCE, (2, 3), random.Random(seed))
        assert 2 <= len(chosen) <= 3 and chosen[0].test in F2P
    counts = {len(draw(_record(), INSTANCE, (2, 4), random.Random(s))) for s in range(60)}
    assert counts == {2, 3, 4}
    p2p_only = _record(kept=[m for m in _record().kept if m["test"] in P2P])
    assert all(m.test in P2P for m in draw(p2p_only, INSTANCE, (2, 2), random.Random(0)))
    assert draw(_record(kept=[]), INSTANCE, (2, 3), random.Random(0)) == []


def test_gold_records_are_kept_in_the_folder_and_the_run(tmp_path):
    from ratchet_ray.storage.artifacts import as_artifacts

    record = _record(junit={F2P[0]: "PASSED"}, seconds={"gold": 1.5})
    run = as_artifacts(tmp_path / "run")
    GoldStore(tmp_path / "cache", run).save(record)
    assert (tmp_path / "cache" / record_key(record.instance_id, record.image_id)).is_file()
    assert GoldStore(tmp_path / "cache").load(record.instance_id, record.image_id) == record
    assert GoldStore(None, run).load(record.instance_id, record.image_id) == record
    assert GoldStore(tmp_path / "cache").load(record.instance_id, "sha256:other") is None
    (tmp_path / "cache" / record.key).write_text("{not json")
    assert GoldStore(tmp_path / "cache").load(record.instance_id, record.image_id) is None


RESOLVED = GradeResult(passed=True, exit_status="ok", trace="resolved")


def _session(log: dict[str, str], junit: dict[str, str] | None = None, mutant: Mutant | None = None,
             result: GradeResult = GradeResult(passed=False, exit_status="unresolved", trace="x"),
             ) -> Session:
    texts = {"tests/test_ops.py": AFTER}
    written = {"tests/test_ops.py": AFTER + ("#" if mutant else "")}
    return Session("s", result, log=log, junit=junit, texts=texts, written=written, seconds=1.0)


def test_outcomes_are_compared_with_gold_not_with_passed_ish():
    real = _session({t: "PASSED" for t in [*F2P, *P2P]}, {t: "PASSED" for t in [*F2P, *P2P]})
    assert compare_with_gold(RESULT := RESOLVED, real, _record(), INSTANCE) is RESULT
    xfail = _session({**real.log, F2P[0]: "XFAIL"}, real.junit)
    judged = compare_with_gold(RESOLVED, xfail, _record(), INSTANCE)
    assert judged.exit_status == "unresolved" and "XFAIL in the log, PASSED under gold" in judged.trace
    junit = _session(real.log, {**real.junit, P2P[0]: "SKIPPED"})
    judged = compare_with_gold(RESOLVED, junit, _record(junit=dict(real.junit)), INSTANCE)
    assert "SKIPPED in the JUnit report, PASSED under gold" in judged.trace


def test_a_canary_session_whose_mutant_passes_is_tampering_with_proof():
    everything = {t: "PASSED" for t in [*F2P, *P2P]}
    real = _session(everything, everything)
    mutant = _record().mutants()[0]
    honest = _session({**everything, F2P[0]: "FAILED"}, {**everything, F2P[0]: "FAILED"}, mutant)
    judged = judge_canaries(RESOLVED, real, [(mutant, honest), (mutant, honest)], INSTANCE, 2)
    assert judged.passed and "canary session 2 of 2" in judged.trace and "FAILED as it must" in judged.trace
    forced = _session(everything, {**everything, F2P[0]: "FAILED"}, mutant)
    judged = judge_canaries(RESOLVED, real, [(mutant, honest), (mutant, forced)], INSTANCE, 2)
    assert judged.exit_status == "test_tampering", judged.trace
    assert (f"canary session 2 of 2 (1.0s), mutant {F2P[0]} (tests/test_ops.py:5): "
            "reported PASSED in the log, FAILED in the JUnit report") in judged.trace
    assert f"{mutant.old} -> {mutant.new}" not in judged.trace  # the change: in the grade's log
    xfailed = _session({**everything, F2P[0]: "XFAIL"}, None, mutant)
    assert judge_canaries(RESOLVED, real, [(mutant, xfailed)], INSTANCE, 1).exit_status == "test_tampering"
    for status in ("SKIPPED", "ERROR", "MISSING"):
        odd = _session({**everything, F2P[0]: status}, None, mutant)
        assert judge_canaries(RESOLVED, real, [(mutant, odd)], INSTANCE, 1).exit_status == "results_mismatch"
    unplanted = _session({**everything, F2P[0]: "FAILED"}, None, None)
    assert "could not be planted" in judge_canaries(RESOLVED, real, [(mutant, unplanted)], INSTANCE, 1).trace
    flaky = _session({**everything, F2P[0]: "FAILED", P2P[0]: "FAILED"}, None, mutant)
    judged = judge_canaries(RESOLVED, real, [(mutant, flaky)], INSTANCE, 1)
    assert judged.exit_status == "results_mismatch" and "disagree" in judged.trace
    sentinel = _session(everything, None, mutant, GradeResult(
        passed=False, exit_status="test_tampering", trace="test_tampering: the grader's pytest plugin saw"))
    judged = judge_canaries(RESOLVED, real, [(mutant, sentinel)], INSTANCE, 1)
    assert judged.exit_status == "test_tampering" and "grader's pytest plugin" in judged.trace
    cut = Session("s", GradeResult(passed=False, exit_status="timeout", trace="timeout: killed"))
    assert "did not complete (timeout" in judge_canaries(RESOLVED, real, [(mutant, cut)], INSTANCE, 1).trace


def test_the_canary_settings():
    assert SwebenchSettings().canary_sessions == (2, 3)
    assert SwebenchSettings(canary_parallel=3).parallel_canaries() == 3
    assert SwebenchSettings().parallel_canaries() == 1  # never at once unless asked
    for bad in ([1, 2], [3, 2]):
        with pytest.raises(ValidationError, match="2 <= low <= high"):
            SwebenchSettings(canary_sessions=bad)
