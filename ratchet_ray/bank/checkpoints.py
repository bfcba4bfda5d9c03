"""Bank snapshots: ``checkpoints/round_NN/{skills/, meta-skills/, manifest.json}``.

Contracts:
- ``write_snapshot`` builds the snapshot in a hidden temp folder and renames it into place, so a
  reader sees either the previous snapshot of that round or the new one, never half of one.
  Re-snapshotting a round (a resumed run) replaces that round's checkpoint only.
- ``read_snapshot`` returns the skills and meta-skills of a round, or raises ``FileNotFoundError``
  naming the available rounds.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Iterable

from ratchet_ray.bank.metaskills import dump_metaskill, load_metaskill
from ratchet_ray.bank.skill_io import dump_skill, load_skill_folder
from ratchet_ray.types import MetaSkill, Skill

CHECKPOINTS_DIR = "checkpoints"


def checkpoint_dir(run_dir: Path, round_: int) -> Path:
    return Path(run_dir) / CHECKPOINTS_DIR / f"round_{round_:02d}"


def available_rounds(run_dir: Path) -> list[int]:
    root = Path(run_dir) / CHECKPOINTS_DIR
    if not root.is_dir():
        return []
    return sorted(int(p.name.split("_", 1)[1]) for p in root.glob("round_*")
                  if p.is_dir() and p.name.split("_", 1)[1].isdigit())


def write_snapshot(run_dir: Path, round_: int, skills: Iterable[Skill],
                   metas: Iterable[MetaSkill], run_id: str) -> Path:
    target = checkpoint_dir(run_dir, round_)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
    skills, metas = list(skills), list(metas)
    try:
        (temp / "skills").mkdir(parents=True)
        (temp / "meta-skills").mkdir()
        for skill in skills:
            (temp / "skills" / f"{skill.id}.yaml").write_text(dump_skill(skill), encoding="utf-8")
        for meta in metas:
            (temp / "meta-skills" / f"{meta.id}.md").write_text(dump_metaskill(meta), encoding="utf-8")
        manifest = {"round": round_, "run_id": run_id, "created_at": time.time(),
                    "active": sorted(s.id for s in skills if s.is_active),
                    "skills": len(skills), "meta_skills": len(metas)}
        (temp / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        if target.exists():
            retired = target.parent / f".{target.name}.{uuid.uuid4().hex}.old"
            os.rename(target, retired)
            os.rename(temp, target)
            shutil.rmtree(retired)
        else:
            os.rename(temp, target)
    finally:
        if temp.exists():
            shutil.rmtree(temp)
    return target


def read_snapshot(run_dir: Path, round_: int) -> tuple[list[Skill], list[MetaSkill]]:
    folder = checkpoint_dir(run_dir, round_)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"no bank snapshot for round {round_} at {folder}; available rounds: "
            f"{available_rounds(run_dir) or 'none'}")
    skills = load_skill_folder(folder / "skills")
    metas = [load_metaskill(p) for p in sorted((folder / "meta-skills").glob("*.md"))]
    return skills, metas
