"""Bank snapshots: ``checkpoints/round_NN/{skills/, meta-skills/, manifest.json}``.

``write_snapshot`` builds the snapshot in a hidden, fsynced temp folder and swaps it in with
``fsutil.swap_dir``: a crash leaves that round's previous or new snapshot, never half or none
(between the swap's renames the previous one is ``round_NN.prev``, which the readers use and the
next write moves back); a resumed run's re-snapshot replaces that round's only.
``read_snapshot`` returns a round's skills and meta-skills, or raises ``FileNotFoundError``
naming the available rounds.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Iterable

from ratchet_ray.bank.metaskills import dump_metaskill, load_metaskill
from ratchet_ray.bank.skill_io import dump_skill, load_skill_folder
from ratchet_ray.storage.fsutil import PREV_SUFFIX, swap_dir, temp_path, write_tree
from ratchet_ray.types import MetaSkill, Skill

CHECKPOINTS_DIR = "checkpoints"
MANIFEST = "manifest.json"


def checkpoint_dir(run_dir: Path, round_: int) -> Path:
    return Path(run_dir) / CHECKPOINTS_DIR / f"round_{round_:02d}"


def available_rounds(run_dir: Path) -> list[int]:
    numbers = (p.name.split("_", 1)[1].removesuffix(PREV_SUFFIX)
               for p in (Path(run_dir) / CHECKPOINTS_DIR).glob("round_*") if p.is_dir())
    return sorted({int(n) for n in numbers if n.isdigit()})


def write_snapshot(run_dir: Path, round_: int, skills: Iterable[Skill],
                   metas: Iterable[MetaSkill], run_id: str) -> Path:
    target = checkpoint_dir(run_dir, round_)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = temp_path(target)
    skills, metas = list(skills), list(metas)
    manifest = {"round": round_, "run_id": run_id, "created_at": time.time(),
                "active": sorted(s.id for s in skills if s.is_active),
                "skills": len(skills), "meta_skills": len(metas)}
    files = {f"skills/{s.id}.yaml": dump_skill(s).encode("utf-8") for s in skills}
    files.update({f"meta-skills/{m.id}.md": dump_metaskill(m).encode("utf-8") for m in metas})
    files[MANIFEST] = json.dumps(manifest, indent=2).encode("utf-8")
    try:
        temp.mkdir()
        (temp / "skills").mkdir()
        (temp / "meta-skills").mkdir()
        write_tree(temp, files)
        swap_dir(temp, target)
    finally:
        if temp.exists():
            shutil.rmtree(temp)
    return target


def read_snapshot(run_dir: Path, round_: int) -> tuple[list[Skill], list[MetaSkill]]:
    folder = checkpoint_dir(run_dir, round_)
    prev = folder.with_name(folder.name + PREV_SUFFIX)  # left by a crash that cut a swap
    folder = prev if not folder.is_dir() and prev.is_dir() else folder
    if not folder.is_dir():
        raise FileNotFoundError(
            f"no bank snapshot for round {round_} at {folder}; available rounds: "
            f"{available_rounds(run_dir) or 'none'}")
    try:
        skills = load_skill_folder(folder / "skills")
        metas = [load_metaskill(p) for p in sorted((folder / "meta-skills").glob("*.md"))]
    except ValueError as exc:  # SkillFileError / MetaSkillFileError, naming file and field
        raise CheckpointError(
            f"the bank snapshot of round {round_} is damaged: {exc}\nsnapshots are written "
            f"whole, so something else changed {folder}: restore it from a copy of the run dir "
            "(the bank files under skills/ and the skill_event evidence are unaffected)") from exc
    return skills, metas


class CheckpointError(ValueError):
    """A snapshot folder holds a malformed file; the message names it and the fix."""
