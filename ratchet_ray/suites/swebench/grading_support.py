"""Pieces of the SWE-bench grader that hold no grading logic: the instance log, the instance
deadline, report files and the patch-apply fallbacks.

Contracts:
- ``write_report(store, key, data)`` puts JSON in an ``Artifacts`` store in one atomic put: a
  reader sees the old report, the new one, or none, never a torn one.
- ``read_report(store, key)`` returns the ``grade`` dict of a finished report, or None when it is
  absent, truncated or not a report; a broken one is deleted so the instance is graded again.
- ``publish_folder(folder, store)`` copies a local scratch folder into the store.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

from ratchet_ray.artifacts import Artifacts
from ratchet_ray.suites.swebench.infra import InfraFailure

TRACE_TAIL_CHARS = 2000
T = TypeVar("T")


def git_apply_commands() -> list[str]:
    """The harness's patch-apply fallbacks (their home moved from constants in swebench 5)."""
    try:
        from swebench.harness.constants import GIT_APPLY_CMDS  # type: ignore[attr-defined]
    except ImportError:
        from swebench.harness.run_evaluation import GIT_APPLY_CMDS
    return list(GIT_APPLY_CMDS)


def patch_key(patch: str) -> str:
    return hashlib.sha1(patch.encode()).hexdigest()[:12]


class InstanceLog:
    """Timestamped lines appended to ``run_instance.log`` (thread-safe, flushed per line)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._fh = path.open("a", encoding="utf-8")

    def __call__(self, message: str) -> None:
        with self._lock:
            self._fh.write(f"{time.strftime('%H:%M:%S')} {message}\n")
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
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=target, name=f"deadline-{stage}", daemon=True)
        worker.start()
        worker.join(max(0.0, self.remaining()))
        if worker.is_alive():
            raise InfraFailure("setup_timeout", f"{stage} did not finish within the instance "
                                                f"deadline of {self.seconds:g}s")
        if "error" in box:
            raise box["error"]
        return box["value"]


def tail(text: str, limit: int = TRACE_TAIL_CHARS) -> str:
    return text if len(text) <= limit else f"...[{len(text) - limit} chars cut]\n{text[-limit:]}"


def write_report(store: Artifacts, key: str, data: dict) -> None:
    """Publish the report at ``key`` of ``store`` in one atomic put."""
    store.put(key, json.dumps(data, indent=2).encode("utf-8"))


def read_report(store: Artifacts, key: str) -> dict | None:
    data = store.get(key)
    if data is None:
        return None
    try:
        grade = json.loads(data.decode("utf-8"))["grade"]
        if not isinstance(grade, dict) or "passed" not in grade or "trace" not in grade:
            raise ValueError("no grade in it")
        return grade
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        # A torn write from before reports were atomic, or a damaged file: grade again.
        store.delete(key)
        return None


def publish_folder(folder: Path, store: Artifacts) -> list[str]:
    """Put every file under ``folder`` into ``store`` at its relative path (the instance's
    scratch logs, written on the grader's node, reach the run's artifacts); the keys put."""
    keys = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        key = path.relative_to(folder).as_posix()
        store.put(key, path.read_bytes())
        keys.append(key)
    return keys
