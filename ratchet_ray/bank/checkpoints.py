"""Bank snapshots: ``checkpoints/round_NN/{skills/, meta-skills/, manifest.json}``.

``write_snapshot`` builds the snapshot in a hidden, fsynced temp folder and swaps it in with
``fsutil.swap_dir``: a crash leaves that round's previous or new snapshot, never half or none
(between the swap's renames the previous one is ``round_NN.prev``, which the readers use and the
next write moves back); a resumed run's re-snapshot replaces that round's only. With ``root``
(the run dir, found at the writer's start) a run dir gone meanwhile is never made again: a
``FileNotFoundError`` naming it. A file where ``checkpoints/`` or the round's folder belongs is a
``NotADirectoryError`` naming it (ENOTDIR: the run's stop tells it as a write refused in the run
dir), never replaced.
The manifest lists the snapshot's round, run id, counts and ids (``skill_ids`` /
``meta_skill_ids`` since they were added; older snapshots hold the counts and ``active``).
``snapshot_problem`` checks a snapshot against its manifest (a file where it belongs, the
manifest missing, garbled, another round's or another run's, files missing or added) without
parsing the skills; ``read_snapshot`` returns a round's skills and meta-skills, raises
``FileNotFoundError`` naming the available rounds when there is none, and ``CheckpointError``
(one line: the snapshot, what is wrong, the fix) when ``snapshot_problem`` finds one or a file
does not parse: a rollback from it would restore fewer skills, silently.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Iterable

from ratchet_ray.bank.metaskills import dump_metaskill, load_metaskill
from ratchet_ray.bank.skill_io import dump_skill, load_skill_folder
from ratchet_ray.storage.fsutil import (PREV_SUFFIX, run_dir_gone, swap_dir, temp_path,
                                        write_tree)
from ratchet_ray.types import MetaSkill, Skill

CHECKPOINTS_DIR = "checkpoints"
MANIFEST = "manifest.json"
_MANIFEST_KEYS = ("round", "run_id", "skills", "meta_skills", "active")
RESTORE_FIX = ("snapshots are written whole, so something else changed it: put it back from a "
               "copy of the run dir (the bank files under skills/ and the skill_event evidence "
               "are unaffected)")


def checkpoint_dir(run_dir: Path, round_: int) -> Path:
    return Path(run_dir) / CHECKPOINTS_DIR / f"round_{round_:02d}"


def snapshot_folder(run_dir: Path, round_: int) -> Path:
    """Where round ``round_``'s snapshot is read: its folder, or the ``.prev`` a crash that cut
    a swap left when the folder itself is gone."""
    folder = checkpoint_dir(run_dir, round_)
    prev = folder.with_name(folder.name + PREV_SUFFIX)
    return prev if not folder.exists() and prev.is_dir() else folder


def available_rounds(run_dir: Path) -> list[int]:
    numbers = (p.name.split("_", 1)[1].removesuffix(PREV_SUFFIX)
               for p in (Path(run_dir) / CHECKPOINTS_DIR).glob("round_*") if p.is_dir())
    return sorted({int(n) for n in numbers if n.isdigit()})


def write_snapshot(run_dir: Path, round_: int, skills: Iterable[Skill],
                   metas: Iterable[MetaSkill], run_id: str, root: Path | None = None) -> Path:
    target = checkpoint_dir(run_dir, round_)
    if root is not None and not Path(root).is_dir():
        raise FileNotFoundError(run_dir_gone(root, f"the bank snapshot of round {round_} is "
                                                   "not written"))
    for place in (target.parent, target):  # a file where a folder belongs is never replaced
        if place.exists() and not place.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(place))
    # Below a root only checkpoints/ itself is made: never the run dir again.
    target.parent.mkdir(parents=root is None, exist_ok=True)
    temp = temp_path(target)
    skills, metas = list(skills), list(metas)
    manifest = {"round": round_, "run_id": run_id, "created_at": time.time(),
                "active": sorted(s.id for s in skills if s.is_active),
                "skills": len(skills), "meta_skills": len(metas),
                "skill_ids": sorted(s.id for s in skills),
                "meta_skill_ids": sorted(m.id for m in metas)}
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


def _stems(folder: Path, suffix: str) -> set[str]:
    """The ids of ``folder``'s files of ``suffix`` (hidden ones skipped), none when absent."""
    if not folder.is_dir():
        return set()
    return {p.name[:-len(suffix)] for p in folder.iterdir()
            if p.name.endswith(suffix) and not p.name.startswith(".")}


def _read_manifest(folder: Path) -> tuple[dict[str, Any] | None, str]:
    path = folder / MANIFEST
    if not path.is_file():
        return None, f"its manifest {path} is missing"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"its manifest {path} cannot be read ({' '.join(str(exc).split())})"
    absent = ([k for k in _MANIFEST_KEYS if k not in manifest] if isinstance(manifest, dict)
              else list(_MANIFEST_KEYS))
    if absent:
        return None, f"its manifest {path} lacks {', '.join(absent)}"
    return manifest, ""


def _count_problem(folder: Path, listed: int, ids: Any, found: set[str], what: str,
                   active: Any = ()) -> str:
    """How ``folder``'s ``found`` files differ from the manifest's count ``listed`` and ``ids``
    (None in an older manifest: then only the ACTIVE ids can be named), or ''."""
    named = set(ids) if isinstance(ids, list) else None
    missing = sorted((named if named is not None else set(active or ())) - found)
    extra = sorted(found - named) if named is not None else []
    if len(found) == listed and not missing and not extra:
        return ""
    said = f"{folder} holds {len(found)} {what} file(s) where its manifest lists {listed}"
    if missing:
        said += f" (missing: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''})"
    if extra:
        said += f" (not listed: {', '.join(extra[:5])}{' ...' if len(extra) > 5 else ''})"
    return said


def snapshot_problem(run_dir: Path, round_: int, run_id: str | None = None) -> str | None:
    """What is wrong with round ``round_``'s snapshot, as ``the bank snapshot of round N (PATH)
    ...: WHAT`` without a fix (each caller names its own); None when it is whole or absent
    (``read_snapshot`` tells an absent one). ``run_id``: the run it must belong to."""
    folder = snapshot_folder(run_dir, round_)
    if not folder.exists():
        return None
    head = f"the bank snapshot of round {round_} ({folder})"
    if not folder.is_dir():
        return f"{head} is a file, not a snapshot folder"
    manifest, why = _read_manifest(folder)
    if manifest is None:
        return f"{head} is damaged: {why}"
    if manifest["round"] != round_:
        return f"{head} is damaged: its manifest is round {manifest['round']}'s, not {round_}'s"
    if run_id is not None and manifest["run_id"] != run_id:
        return (f"{head} is another run's: its manifest names run {manifest['run_id']}, not "
                f"{run_id}")
    problems = [
        _count_problem(folder / "skills", manifest["skills"], manifest.get("skill_ids"),
                       _stems(folder / "skills", ".yaml"), "skill", manifest["active"]),
        _count_problem(folder / "meta-skills", manifest["meta_skills"],
                       manifest.get("meta_skill_ids"), _stems(folder / "meta-skills", ".md"),
                       "meta-skill")]
    problems = [p for p in problems if p]
    return f"{head} is damaged: {'; '.join(problems)}" if problems else None


def read_snapshot(run_dir: Path, round_: int, run_id: str | None = None
                  ) -> tuple[list[Skill], list[MetaSkill]]:
    folder = snapshot_folder(run_dir, round_)
    if not folder.exists():
        raise FileNotFoundError(
            f"no bank snapshot for round {round_} at {folder}; available rounds: "
            f"{available_rounds(run_dir) or 'none'}")
    problem = snapshot_problem(run_dir, round_, run_id)
    if problem is not None:
        raise CheckpointError(f"{problem}; {RESTORE_FIX}")
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
    """A snapshot folder is damaged (a malformed file, files its manifest lists missing, a
    manifest garbled or another run's); the message names it and the fix."""
