"""The skill pack layout (format version 1): hashing, writing and verified reading.

A pack folder (docs/skill-packs.md) holds ``pack.json`` and ``skills/<id>.yaml`` (canonical
YAML). The manifest holds ``format``, ``format_version``, ``pack_sha256``, ``source`` (run id,
suite, arm, seed, backend, model, embedder, config_sha256, rounds), ``selection`` and ``skills``:
per skill, sorted by id, ``id``, ``file``, ``sha256`` (of the file's bytes), ``status``,
``lineage``, ``status_history``, ``record`` (measured in the source run) and ``provenance``.

Contracts:
- ``pack_sha256`` hashes the format version and the sorted ``(id, sha256)`` pairs only, so
  export -> import -> export of the same skills gives the same hash whatever the records say.
- ``read_pack`` returns the manifest and ``{id: text}`` only after verifying a known format and
  version, every listed file present with its listed sha256 (else ``PackError`` naming the
  skill), no unlisted skill file, and the pack hash.
- ``PackError`` messages are one line naming the pack, the problem and the fix.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ratchet_ray.storage.fsutil import atomic_write_text, cannot_read, may_read, read_access

FORMAT = "ratchet-skill-pack"
FORMAT_VERSION = 1
MANIFEST = "pack.json"
SKILLS_DIR = "skills"
IMPORTS_DIR = "packs"
"""Where an importing run keeps the manifests of the packs it imported (``bank.pack_import``)."""


class PackError(ValueError):
    """A skill pack cannot be read, trusted or imported; the message says why and the fix."""


def skill_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pack_sha256(entries: list[dict[str, Any]]) -> str:
    """The pack's content hash (module contract)."""
    pairs = sorted((e["id"], e["sha256"]) for e in entries)
    return hashlib.sha256(json.dumps([FORMAT_VERSION, pairs]).encode("utf-8")).hexdigest()


def write_pack(folder: Path, manifest: dict[str, Any], texts: dict[str, str]) -> Path:
    """Write ``texts`` (``{id: yaml}``) and ``manifest`` to ``folder`` (created; must hold no
    other pack). The manifest is written last, so a cut export leaves no readable pack."""
    if (folder / MANIFEST).exists():
        raise PackError(f"{folder}: a pack is already there; pass another -o folder or remove it")
    if folder.exists() and not folder.is_dir():
        raise PackError(f"{folder}: is a file; pass a folder for the pack with -o")
    (folder / SKILLS_DIR).mkdir(parents=True, exist_ok=True)
    for skill_id, text in texts.items():
        atomic_write_text(folder / SKILLS_DIR / f"{skill_id}.yaml", text)
    atomic_write_text(folder / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return folder


def read_manifest(folder: Path) -> dict[str, Any]:
    """``pack.json`` of ``folder``, checked for a known format and version."""
    path = folder / MANIFEST
    try:
        found = path.is_file()
    except OSError as exc:  # a pack folder this user may not list: its fix, not re-export
        raise PackError(f"{folder}: {cannot_read(folder, exc)}") from exc
    if not found:
        raise PackError(f"{folder}: no {MANIFEST}; pass a folder written by `ratchet skill export`")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        if isinstance(exc, OSError) and not may_read(path):  # intact: this user may not read it
            raise PackError(f"{path}: {cannot_read(path, exc)}") from exc
        raise PackError(f"{path}: unreadable manifest ({exc}); re-export the pack") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise PackError(f"{path}: not a skill pack (format is not {FORMAT!r}); pass a folder "
                        "written by `ratchet skill export`")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise PackError(f"{path}: pack format version {version!r} is not supported (this "
                        f"version reads {FORMAT_VERSION}); re-export it with this version")
    if not isinstance(manifest.get("skills"), list):
        raise PackError(f"{path}: 'skills' is not a list; re-export the pack")
    return manifest


def read_pack(folder: str | Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The verified manifest and ``{id: yaml text}`` of a pack (module contract)."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    texts: dict[str, str] = {}
    for entry in manifest["skills"]:
        skill_id = entry.get("id")
        path = folder / SKILLS_DIR / f"{skill_id}.yaml"
        if not may_read(path.parent):  # its folder this user may not list: is_file would raise
            raise PackError(f"{path.parent}: cannot read it: Permission denied; fix: "
                            f"{read_access(folder)}")
        if not path.is_file():
            raise PackError(f"{folder}: skill {skill_id!r}: {path.name} is missing; re-export "
                            "the pack")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:  # garbled since export: as a changed text
            if isinstance(exc, OSError) and not may_read(path):  # not garbled: not this user's
                raise PackError(f"{path}: {cannot_read(path, exc)}") from exc
            raise PackError(f"{folder}: skill {skill_id!r}: {path.name} cannot be read "
                            f"({exc}); the pack is refused; re-export it from the source "
                            "run") from exc
        if skill_sha256(text) != entry.get("sha256"):
            raise PackError(f"{folder}: skill {skill_id!r}: its text changed since export "
                            "(sha256 mismatch); the pack is refused; re-export it from the "
                            "source run")
        texts[skill_id] = text
    extra = sorted(p.name for p in (folder / SKILLS_DIR).glob("*")
                   if p.stem not in texts) if (folder / SKILLS_DIR).is_dir() else []
    if extra:
        raise PackError(f"{folder}: skill file(s) {extra} are not in {MANIFEST}; the pack is "
                        "refused; re-export it instead of adding files")
    if pack_sha256(manifest["skills"]) != manifest.get("pack_sha256"):
        raise PackError(f"{folder}: the pack hash does not match its skills; the pack is "
                        "refused; re-export it")
    return manifest, texts
