"""Where a SWE-bench grade's time goes, measured inside the Grader actors of a bench run.

- ``install(worker)``: run in a Grader actor's process (``actor.__ray_call__``, before the
  clock): wraps, in that process only, the grader's steps with timers that record spans
  ``(phase, session, start, end)`` (epoch seconds), found through the grader module's own names
  (``SwebenchGrader``, ``instance_container``, ``InstanceContainer``, ``HarnessGuard``,
  ``Protections``, ``publish_folder``, swebench's ``get_eval_report``), so the same code measures
  the tree of any commit. Nothing a grade decides changes: each wrapper calls the original and
  records the time.
- ``spans(worker)``: the spans recorded so far in that process, and the grades' own
  ``(start, end)``.
- ``breakdown(per_actor, clock)``: seconds per grade in each phase, summed over every
  actor's grades: ``ray dispatch`` (an actor idle between the clock's start or its previous grade
  and its next grade, while work was queued), ``image`` (readiness: ensure, hold, release),
  ``container up`` / ``container down`` (create + start + the keep-alive probe; remove),
  ``pre-eval execs`` (apply, restore, hand-over, the put), ``eval`` (the eval script's exec),
  ``after eval`` (disk, OOM and report reads in the container), ``report parse`` (swebench's
  parse and the cross-checks), ``canary sessions`` (the proof less the gold record: every
  canary session's own phases are listed under ``canary:`` too), ``artifact put`` and ``other``
  (the rest of a grade).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import time
from collections import defaultdict
from typing import Any, Callable

class Recorder:
    """The spans of one process, kept on the Grader worker object (a bench module pickled by
    value has no module state that two calls into the actor share)."""

    def __init__(self):
        self.spans: list[tuple[str, str, float, float]] = []
        self.grades: list[tuple[float, float]] = []
        self.local = threading.local()

    def session(self) -> str:
        return getattr(self.local, "session", "real")

    def timed(self, phase: str, fn: Callable) -> Callable:
        """``fn`` timed as ``phase``; a step inside another timed step of a session (an exec of
        the apply step, say) counts in the outer one only."""
        leaf = phase in _REAL

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            depth = getattr(self.local, "depth", 0)
            if leaf and depth:
                return fn(*args, **kwargs)
            started = time.time()
            self.local.depth = depth + leaf
            try:
                return fn(*args, **kwargs)
            finally:
                self.local.depth = depth
                self.spans.append((phase, self.session(), started, time.time()))
        return wrapper

    def in_session(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            label = kwargs.get("label", "real")
            kind = ("canary" if label.startswith("canary")
                    else "gold" if "gold" in label else "real")
            before, self.local.session = self.session(), kind
            try:
                return fn(*args, **kwargs)
            finally:
                self.local.session = before
        return wrapper

    def grade(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            started = time.time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.grades.append((started, time.time()))
        return wrapper

    def container(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        @contextlib.contextmanager
        def wrapper(*args, **kwargs):
            started = time.time()
            manager = fn(*args, **kwargs)
            self.local.depth = 1  # the keep-alive probe's exec is part of the start
            try:
                box = manager.__enter__()
            finally:
                self.local.depth = 0
            self.spans.append(("container up", self.session(), started, time.time()))
            down = None
            try:
                yield box
            except BaseException:
                down = time.time()
                self.local.depth = 1
                if not manager.__exit__(*sys.exc_info()):
                    raise
            else:
                down = time.time()
                self.local.depth = 1
                manager.__exit__(None, None, None)
            finally:
                self.local.depth = 0
                self.spans.append(("container down", self.session(), down or time.time(),
                                   time.time()))
        return wrapper


def install(worker: Any) -> bool:
    """Wrap this process's grader steps with timers (module contract); idempotent."""
    if getattr(worker, "_bench_recorder", None) is not None:
        return False
    rec = worker._bench_recorder = Recorder()
    grader_module = sys.modules[type(worker.grader).__module__]
    names = vars(grader_module)
    grader = names["SwebenchGrader"]
    grader.grade = rec.grade(grader.grade)
    grader._session = rec.in_session(grader._session)
    grader._context = rec.timed("image", grader._context)
    for method in ("_apply", "_hand_over"):
        setattr(grader, method, rec.timed("pre-eval execs", getattr(grader, method)))
    # The proof: a part the grader holds (``grader.proof``), or its own methods in the trees
    # before that (11a7c6f), which the bench also measures.
    proof = grader if hasattr(grader, "_prove") else names["DifferentialProof"]
    for method, phase in (("_prove", "proof"), ("prove", "proof"),
                          ("_gold_record", "gold record"), ("record_for", "gold record")):
        if method in vars(proof) or (proof is grader and hasattr(proof, method)):
            setattr(proof, method, rec.timed(phase, getattr(proof, method)))
    images = type(worker.grader._harness())
    images.release = rec.timed("image", images.release)
    grader_module.instance_container = rec.container(names["instance_container"])
    box = names["InstanceContainer"]
    box.put_files = rec.timed("pre-eval execs", box.put_files)
    box.run = rec.timed("eval", box.run)
    box.writable_bytes = rec.timed("after eval", box.writable_bytes)
    box.oom_kills_since_start = rec.timed("after eval", box.oom_kills_since_start)
    guard = names["HarnessGuard"]
    guard.restore = rec.timed("pre-eval execs", guard.restore)
    layers = names["Protections"]
    layers.collect = rec.timed("after eval", layers.collect)
    grader._judge = staticmethod(rec.timed("report parse", grader._judge))
    grader_module.publish_folder = rec.timed("artifact put", names["publish_folder"])
    import swebench.harness.grading as grading  # the grader imports these at call time
    grading.get_eval_report = rec.timed("report parse", grading.get_eval_report)
    grading.get_logs_eval = rec.timed("report parse", grading.get_logs_eval)
    return True


def spans(worker: Any) -> dict:
    """What this process recorded (module contract)."""
    rec = worker._bench_recorder
    return {"spans": list(rec.spans), "grades": list(rec.grades)}


# Phases whose spans nest inside others: counted by what they add, not twice.
_REAL = ("image", "container up", "pre-eval execs", "eval", "after eval", "report parse",
         "container down", "artifact put")


def breakdown(per_actor: list[dict], clock: float) -> dict[str, float]:
    """Seconds per grade in each phase, every actor's grades together (module contract)."""
    totals: dict[str, float] = defaultdict(float)
    grades = 0
    for got in per_actor:
        mine = sorted(g for g in got["grades"] if g[0] >= clock)
        grades += len(mine)
        previous = clock
        for start, end in mine:
            totals["ray dispatch"] += start - previous
            previous = end
        for phase, session, start, end in got["spans"]:
            if start < clock:
                continue
            if session == "real" and phase in _REAL:
                totals[phase] += end - start
            elif session == "canary" and phase in _REAL:
                totals[f"canary: {phase}"] += end - start
            elif phase == "proof":
                totals["canary sessions"] += end - start
            elif phase == "gold record":
                totals["canary sessions"] -= end - start
                totals["gold record"] += end - start
        graded = sum(end - start for start, end in mine)
        accounted = sum(end - start for phase, session, start, end in got["spans"]
                        if start >= clock and ((session == "real" and phase in _REAL)
                                               or phase == "proof"))
        totals["other"] += graded - accounted
    return {phase: round(seconds / max(grades, 1), 3) for phase, seconds in totals.items()}
