"""The in-flight marker of an attempt and the run's artifact folder, for resuming after a kill.

Contracts:
- ``ARTIFACTS_DIR/<name>/`` (git-excluded) holds ``patches/`` (each committed candidate's
  diff), ``logs/`` (one per evaluator run) and ``attempt.json``.
- ``attempt.json`` exists exactly while an attempt may have changed the worktree (written
  atomically before the proposal is applied, removed after its ledger row): the iteration, base
  commit, untracked files then and the evaluator's process group, all a resume needs to stop
  a stray evaluator and undo the attempt. One that is not (damaged, edited, unreadable) is
  ``AttemptMarkerError``, naming it and the fix, never a guess at what to undo.
- A folder that cannot be made there (a file in its way, no permission) is
  ``ArtifactsDirError``: the ``fsutil.cannot_write`` line with the fix.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ratchet_ray.storage.fsutil import atomic_write_text, cannot_read, cannot_write

ARTIFACTS_DIR = ".ratchet-experiment"


class ArtifactsDirError(ValueError):
    """The run's artifact folder cannot be made; the message names the place and the fix."""


class AttemptMarkerError(ValueError):
    """``attempt.json`` cannot be read as this engine wrote it; the message names it and the
    fix."""


@dataclass
class Attempt:
    iteration: int
    base: str
    untracked_before: list[str] = field(default_factory=list)
    candidate: str = ""
    started: float = field(default_factory=time.time)
    evaluator_pgid: int = 0
    """Process group of the evaluator run in flight (0: none): a resumed run kills a stray one."""


class RunArtifacts:
    def __init__(self, repo: Path, name: str):
        self.repo = Path(repo)
        self.root = self.repo / ARTIFACTS_DIR / name
        self.patches = self.root / "patches"
        self.logs = self.root / "logs"
        self.marker = self.root / "attempt.json"
        for folder in (self.patches, self.logs):
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ArtifactsDirError(cannot_write(
                    f"the experiment's artifacts into {self.root}", exc, "move aside what is in "
                    f"the way (a file where a folder should be), or make {self.root.parent} a "
                    "writable folder")) from exc

    def begin(self, attempt: Attempt) -> None:
        atomic_write_text(self.marker, json.dumps(asdict(attempt)))

    def in_flight(self) -> Attempt | None:
        if not self.marker.exists():
            return None
        try:
            return Attempt(**json.loads(self.marker.read_text(encoding="utf-8")))
        except OSError as exc:
            raise AttemptMarkerError(f"{self.marker}: {cannot_read(self.marker, exc)}") from exc
        except (ValueError, TypeError) as exc:  # not JSON, not UTF-8, not an attempt's fields
            raise AttemptMarkerError(
                f"{self.marker} is not an attempt marker this engine wrote ({exc}), so what the "
                "interrupted attempt changed is unknown; fix: delete it, and the next run names "
                "what is left to undo (uncommitted changes, or the branch past its last keep)"
            ) from exc

    def record_evaluator(self, pgid: int) -> None:
        attempt = self.in_flight()
        if attempt is not None:
            attempt.evaluator_pgid = pgid
            self.begin(attempt)

    def end(self) -> None:
        self.marker.unlink(missing_ok=True)

    def log_path(self, iteration: int, try_no: int) -> Path:
        stamp = time.strftime("%Y%m%dT%H%M%S")
        return self.logs / f"iter{iteration:03d}_try{try_no}_{stamp}.log"

    def save_patch(self, iteration: int, try_no: int, diff: str) -> Path:
        path = self.patches / f"iter{iteration:03d}_try{try_no}.diff"
        path.write_text(diff)
        return path

    def rel(self, path: Path) -> str:
        return Path(path).relative_to(self.repo).as_posix()
