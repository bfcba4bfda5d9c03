"""Pieces of the SWE-bench grader that hold no grading logic: the instance log, the instance
deadline, report files and the patch-apply fallbacks. A report is one object, put atomically (a
reader sees the old report, the new one, or none).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shlex
import threading
import time
from pathlib import Path
from typing import Callable, TypeVar

from ratchet_ray.storage.artifacts import Artifacts
from ratchet_ray.suites.swebench.imports import serial_imports
from ratchet_ray.suites.swebench.docker.infra import InfraFailure, within

TRACE_TAIL_CHARS = 2000
T = TypeVar("T")


def git_apply_commands() -> list[str]:
    """The harness's patch-apply fallbacks."""
    with serial_imports:
        from swebench.harness.run_evaluation import GIT_APPLY_CMDS
    return list(GIT_APPLY_CMDS)


SKIPPED_STEP = 200
# A patch longer than this is put into the container by itself rather than written by a
# here-document: the whole batched script is one argument of the exec, and Linux refuses an
# argument longer than 128 KiB (MAX_ARG_STRLEN).
INLINE_PATCH_BYTES = 96_000


def inline_patch(patch: str) -> bool:
    """Whether ``apply_steps`` can write ``patch`` itself (else put it first)."""
    return "\0" not in patch and len(patch.encode()) <= INLINE_PATCH_BYTES


def apply_steps(patch_file: str, timeout_s: float, patch: str | None = None) -> list[str]:
    """The shell steps (``run_steps``) of the harness's apply chain: the patch written to
    ``patch_file`` (a here-document, when ``patch`` is given), each fallback of
    ``git_apply_commands`` from a clean tree until one applies (each under ``timeout_s``), then
    the reverse check; a step that is not needed exits ``SKIPPED_STEP``, an applied attempt
    leaves ``$STEPS_DIR/applied``."""
    limit = max(1, int(timeout_s + 0.999))
    quoted = shlex.quote(patch_file)
    steps = []
    if patch is not None:
        end = f"RATCHET_PATCH_{secrets.token_hex(8)}"  # no line of the patch can end it early
        steps.append(f"cat > {quoted} <<'{end}'\n{patch}{end}\nchmod 0644 {quoted}")
    skip = f'[ -e "$STEPS_DIR/applied" ] && exit {SKIPPED_STEP}'
    for attempt, command in enumerate(git_apply_commands()):
        # A failed attempt (notably --reject) leaves partial state behind.
        reset = "{ git checkout -- . ; git clean -fd ; } >/dev/null 2>&1\n" if attempt else ""
        run = shlex.quote(f"{command} {quoted}")
        steps.append(f"{skip}\n{reset}timeout -s KILL {limit} /bin/bash -c {run} 2>&1\n"
                     f'rc=$?; [ $rc = 0 ] && touch "$STEPS_DIR/applied"; exit $rc')
    check = shlex.quote(f"git apply --check --reverse {quoted}")
    steps.append(f"{skip}\ntimeout -s KILL {limit} /bin/bash -c {check} 2>&1")
    return steps


def patch_key(patch: str) -> str:
    return hashlib.sha1(patch.encode()).hexdigest()[:12]


class InstanceLog:
    """Lines stamped ``HH:MM:SS.mmm`` (local time) appended to ``run_instance.log``
    (thread-safe, flushed per line)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._fh = path.open("a", encoding="utf-8")

    def __call__(self, message: str) -> None:
        now = time.time()  # milliseconds: a grade's steps take tenths of a second
        with self._lock:
            self._fh.write(f"{time.strftime('%H:%M:%S', time.localtime(now))}"
                           f".{int(now * 1000) % 1000:03d} {message}\n")
            self._fh.flush()

    def close(self) -> None:
        self._fh.close()


class Deadline:
    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def remaining(self) -> float:
        return self.end - time.monotonic()

    def check(self, stage: str) -> None:
        if self.remaining() <= 0:
            raise InfraFailure("setup_timeout", f"instance deadline of {self.seconds:g}s passed "
                                                f"before {stage}")

    def run(self, stage: str, fn: Callable[[], T]) -> T:
        """``fn()`` unless it outlives the deadline (it then finishes in the background)."""
        self.check(stage)
        done, value = within(fn, self.remaining(), f"deadline-{stage}")
        if not done:
            raise InfraFailure("setup_timeout", f"{stage} did not finish within the instance "
                                                f"deadline of {self.seconds:g}s")
        return value


def tail(text: str, limit: int = TRACE_TAIL_CHARS) -> str:
    return text if len(text) <= limit else f"...[{len(text) - limit} chars cut]\n{text[-limit:]}"


def report_bytes(data: dict) -> bytes:
    """A report as it is kept (``read_report`` reads it back)."""
    return json.dumps(data, indent=2).encode("utf-8")


def read_report(store: Artifacts, key: str) -> dict | None:
    """The ``grade`` dict of a finished report, or None when it is absent, truncated or not a
    report (a broken one is deleted so the instance is graded again)."""
    data = store.get(key)
    if data is None:
        return None
    try:
        grade = json.loads(data.decode("utf-8"))["grade"]
        if not isinstance(grade, dict) or "passed" not in grade or "trace" not in grade:
            raise ValueError("no grade in it")
        return grade
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        store.delete(key)  # a torn write from before reports were atomic, or a damaged file
        return None


def publish_folder(folder: Path, store: Artifacts, last: list[tuple[str, bytes]] = ()) -> None:
    """Put every file under ``folder`` into ``store`` at its relative path (the instance's
    scratch logs, written on the grader's node, reach the run's artifacts), then ``last`` (a
    report, which marks the logs complete), in one ``put_many``."""
    items = [(path.relative_to(folder).as_posix(), path.read_bytes())
             for path in sorted(p for p in folder.rglob("*") if p.is_file())]
    store.put_many(items + list(last))
