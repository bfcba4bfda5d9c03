"""Skill YAML files: parse with errors that name the file and the field; dump byte-stably.

Contracts:
- ``dump_skill`` is canonical: fields in schema order, every field written (``LINEAGE_FIELDS``
  only when not their default, so a first version's file is what it was before refinement
  existed), multi-line strings as literal blocks, no folding; ``dump_skill(parse_skill(text))``
  equals any ``text`` it produced, and ``parse_skill(dump_skill(s)) == s``.
- ``parse_skill`` / ``load_skill`` raise ``SkillFileError`` for malformed YAML, a non-mapping, a
  missing or unknown field or an unknown ``status``, naming the file and field and the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ratchet_ray.storage.fsutil import cannot_read
from ratchet_ray.types import LINEAGE_FIELDS, Guidance, Skill, SkillStatus

SKILL_SUFFIXES = (".yaml", ".yml")
_HINTS = {
    "intent": "add one short imperative sentence, e.g. intent: Sum a list of numbers",
    "description": "add one line saying when the skill applies",
    "status": f"use one of: {', '.join(s.value for s in SkillStatus)}",
    "id": "use lowercase letters, digits, '_' or '-', e.g. id: sliding_window",
}


class SkillFileError(ValueError):
    """A skill file (or text) is not a valid skill. ``problems`` holds one line per bad field."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        super().__init__("\n".join(f"{source}: {p}" for p in problems))


class _SkillDumper(yaml.SafeDumper):
    """Indented block lists and literal blocks for multi-line text (readable diffs)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False):
        return super().increase_indent(flow, False)


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_SkillDumper.add_representer(str, _represent_str)


def dump_yaml(data: Any) -> str:
    """The canonical YAML text used for skills (and meta-skill front matter)."""
    return yaml.dump(data, Dumper=_SkillDumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=1_000_000)


def dump_skill(skill: Skill) -> str:
    """Canonical YAML of ``skill`` (see module contract)."""
    data = skill.model_dump(mode="json")
    defaults = {name: Skill.model_fields[name].default for name in LINEAGE_FIELDS}
    return dump_yaml({k: v for k, v in data.items()
                      if k not in defaults or v != defaults[k]})


def _describe(error: dict[str, Any]) -> str:
    field = ".".join(str(part) for part in error["loc"]) or "(document)"
    leaf = str(error["loc"][-1]) if error["loc"] else ""
    kind = error["type"]
    if kind == "missing":
        hint = _HINTS.get(leaf, "add it")
        return f"field {field!r}: required field is missing; {hint}"
    if kind == "extra_forbidden":
        parent = Guidance if error["loc"][:1] == ("guidance",) else Skill
        valid = ", ".join(parent.model_fields)
        return f"field {field!r}: unknown field; remove it or rename it to one of: {valid}"
    hint = _HINTS.get(leaf)
    return f"field {field!r}: {error['msg']}" + (f"; {hint}" if hint else "")


def parse_skill(text: str, source: str = "<skill>") -> Skill:
    """Parse one skill document; ``source`` (usually the file path) prefixes every error."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise SkillFileError(source, [f"malformed YAML{where}: {getattr(exc, 'problem', exc)}"]) from exc
    return validate_skill(data, source)


def validate_skill(data: Any, source: str = "<skill>") -> Skill:
    """A mapping (parsed YAML/JSON) as a Skill, or ``SkillFileError`` naming source and field."""
    if not isinstance(data, dict):
        raise SkillFileError(source, [
            f"expected a mapping of skill fields (id, intent, description, guidance, ...), "
            f"got {type(data).__name__}"])
    try:
        return Skill.model_validate(data)
    except ValidationError as exc:
        raise SkillFileError(source, [_describe(e) for e in exc.errors()]) from exc


def load_skill(path: str | Path) -> Skill:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SkillFileError(str(path), [cannot_read(path, exc)]) from exc
    except UnicodeDecodeError as exc:
        raise SkillFileError(str(path), [f"cannot read file: not UTF-8 text (byte {exc.start} "
                                         "cannot be decoded); fix: save it as UTF-8"]) from exc
    return parse_skill(text, str(path))


def skill_files(folder: str | Path) -> list[Path]:
    """YAML files directly inside ``folder``, sorted by name (hidden files skipped)."""
    folder = Path(folder)
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and p.suffix in SKILL_SUFFIXES and not p.name.startswith("."))


def load_skill_folder(folder: str | Path, *, require_id_filenames: bool = False) -> list[Skill]:
    """Every skill in ``folder``, or one ``SkillFileError`` listing each bad file and field, a
    duplicated id, or (``require_id_filenames``, a bank's own ``skills/``) a file not named
    ``<id>.yaml``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SkillFileError(str(folder), ["not a folder of skill YAML files"])
    skills, problems, seen = [], [], {}
    try:
        paths = skill_files(folder)
    except OSError as exc:  # listed on the way: a glob would skip a folder it may not list
        raise SkillFileError(str(folder), [cannot_read(folder, exc)]) from exc
    for path in paths:
        try:
            skill = load_skill(path)
        except SkillFileError as exc:
            problems.extend(f"{path}: {p}" for p in exc.problems)
            continue
        if skill.id in seen:
            problems.append(f"{path}: field 'id': {skill.id!r} is also used by {seen[skill.id]}; "
                            "give each skill a unique id")
            continue
        if require_id_filenames and path.name != f"{skill.id}.yaml":
            problems.append(f"{path}: field 'id': skill {skill.id!r} must live in {skill.id}.yaml; "
                            "rename the file")
            continue
        seen[skill.id] = path
        skills.append(skill)
    if problems:
        raise SkillFileError(str(folder), problems)
    return skills
