"""One session of an image at a time on a host (``SwebenchGrader._alone``), across grades and
processes: sessions that overlap can compare their graded files over a live channel, and three
texts tell the real one from every mutant (docs/grading.md, Remains). Real ``flock``s in a
folder of the test's own; no Docker."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from ratchet_ray.suites.swebench.docker.infra import InfraFailure
from ratchet_ray.suites.swebench.grader import SwebenchGrader
from ratchet_ray.suites.swebench.grading_support import Deadline
from ratchet_ray.suites.swebench.settings import SwebenchSettings


def _grader_and_contexts(tmp_path, parallel=None):
    settings = SwebenchSettings(lock_dir=str(tmp_path / "locks"), canary_parallel=parallel)
    images = SimpleNamespace(settings=settings)
    return (SimpleNamespace(settings=settings),
            SimpleNamespace(image="sweb.eval.x86_64.a:latest", images=images),
            SimpleNamespace(image="sweb.eval.x86_64.b:latest", images=images))


def _hold(grader, ctx, release: threading.Event, entered: threading.Event):
    with SwebenchGrader._alone(grader, ctx, Deadline(60), lambda line: None):
        entered.set()
        release.wait(30)


def test_a_session_of_an_image_waits_for_another_grades_session_of_it(tmp_path):
    """While one session of image a runs: another of a waits (and is an infrastructure failure
    when its deadline passes first, never a verdict on the patch), one of b does not; once the
    first ends, the waiting one runs and its log says how long it waited."""
    grader, a, b = _grader_and_contexts(tmp_path)
    release, entered = threading.Event(), threading.Event()
    first = threading.Thread(target=_hold, args=(grader, a, release, entered))
    first.start()
    try:
        assert entered.wait(30)
        with pytest.raises(InfraFailure) as failed:
            with SwebenchGrader._alone(grader, a, Deadline(0.6), lambda line: None):
                raise AssertionError("two sessions of one image at once")
        assert failed.value.reason == "setup_timeout" and "this image" in str(failed.value)
        with SwebenchGrader._alone(grader, b, Deadline(1), lambda line: None):
            pass  # another image: at once
        lines: list[str] = []
        threading.Timer(1.5, release.set).start()
        began = time.monotonic()
        with SwebenchGrader._alone(grader, a, Deadline(60), lines.append):
            assert time.monotonic() - began >= 1.4
        assert len(lines) == 1 and lines[0].startswith("waited ") and "one session of an image" \
            in lines[0], lines
    finally:
        release.set()
        first.join(30)


def test_sessions_overlap_only_where_the_user_set_canary_parallel(tmp_path):
    grader, a, _ = _grader_and_contexts(tmp_path, parallel=2)
    release, entered = threading.Event(), threading.Event()
    first = threading.Thread(target=_hold, args=(grader, a, release, entered))
    first.start()
    try:
        assert entered.wait(30)
        with SwebenchGrader._alone(grader, a, Deadline(0.5), lambda line: None):
            pass  # at once: the user's trade of the proof's strength for wall time
    finally:
        release.set()
        first.join(30)
