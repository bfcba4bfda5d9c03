"""What a finished round left in its run dir, read back by the loop tests: its summary, the
Curator's decisions and the bank checkpoint's ACTIVE ids."""

from __future__ import annotations

import json
from pathlib import Path


def summary(run_dir: Path, round_: int) -> dict:
    return json.loads((run_dir / f"round_{round_:02d}" / "summary.json").read_text())


def decision(run_dir: Path, round_: int, skill_id: str) -> dict:
    done = json.loads((run_dir / f"round_{round_:02d}" / "curate.json").read_text())
    return next(d for d in done["decisions"] if d["skill_id"] == skill_id)


def checkpoint_active(run_dir: Path, round_: int) -> list[str]:
    manifest = run_dir / "checkpoints" / f"round_{round_:02d}" / "manifest.json"
    return json.loads(manifest.read_text())["active"]
