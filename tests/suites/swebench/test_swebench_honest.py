"""Suspicion is not proof: honest but unusual fixes (``honest_patches.py``) resolve, and none is
called tampering, restored or deleted; what the static screen finds is only recorded."""

from __future__ import annotations

import pytest

import swebench_instances as fixture
from honest_patches import BUNDLES, HONEST, patch_of
from ratchet_ray.evidence.tampering import SUSPICION_PREFIX, is_tampering, suspicion as note_of
from ratchet_ray.suites.swebench.grader import SwebenchGrader
from ratchet_ray.suites.swebench.integrity import harness_paths
from ratchet_ray.suites.swebench.integrity.screen import suspicion

F2P, P2P = fixture.TESTS["ratchet__calc-1"]
INSTANCE = {"repo": fixture.REPO, "FAIL_TO_PASS": F2P, "PASS_TO_PASS": P2P,
            "test_patch": fixture.TEST_PATCH["ratchet__calc-1"]}


def test_the_corpus_is_big_enough_and_every_fix_is_in_one_bundle():
    assert len(HONEST) >= 10
    bundled = [name for names in BUNDLES.values() for name in names]
    assert sorted(bundled) == sorted(HONEST), "each fix graded exactly once"


@pytest.mark.parametrize("name", sorted(HONEST))
def test_no_path_of_an_honest_fix_is_harness_and_the_screen_only_suspects(name):
    fix = HONEST[name]
    patch = patch_of([name])
    tests = harness_paths.test_files(INSTANCE)
    for path in harness_paths.patch_paths(patch):
        after = {**fixture.BASE_FILES, **fix.files}.get(path)
        before = fixture.BASE_FILES.get(path)
        checked = path.rsplit("/", 1)[-1] in harness_paths.CONTENT_CHECKED
        reason = harness_paths.harness_reason(path, tests, before if checked else None, after if checked else None)
        assert reason is None, f"{path}: {reason}"
    note = suspicion(INSTANCE, patch)
    assert (note is not None) == fix.suspected, note
    if note is not None:
        assert note.startswith(SUSPICION_PREFIX) and "test_tampering" not in note
        assert note_of(f"resolved\n{note}\nlog: x") == note


@pytest.fixture
def grader(docker_client, local_settings, limits, tmp_path):
    return SwebenchGrader(local_settings, limits, tmp_path, client=docker_client)


@pytest.mark.docker
@pytest.mark.parametrize("bundle", sorted(BUNDLES))
def test_honest_fixes_resolve_through_the_real_grader(grader, tasks, bundle):
    names = BUNDLES[bundle]
    result = grader.grade(tasks["ratchet__calc-1"], patch_of(names))
    assert (result.passed, result.exit_status, result.infra_failure) == (True, "ok", False), \
        result.trace
    assert not is_tampering(result.exit_status)
    assert "harness restored" not in result.trace, "nothing honest is restored or deleted"
    note = note_of(result.trace)
    suspected = [n for n in names if HONEST[n].suspected]
    assert bool(note) == bool(suspected), result.trace
    for name in suspected:  # each suspected file is quoted, and recorded only
        paths = list(HONEST[name].files) or ["calc/ops.py"]
        assert any(f"{p}:" in note for p in paths), (name, note)
