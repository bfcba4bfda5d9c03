"""Meta-skill files (``meta-skills/<id>.md``): Markdown with a YAML front matter block (id, suite,
version, status, created_round), and the shipped defaults.

Contracts:
- ``dump_metaskill`` / ``parse_metaskill`` round-trip byte-stably, like skills.
- ``default_metaskill(suite)`` reads ``configs/meta_skills/default_<suite>.md`` (or the ``source``
  a plugin suite registered; plain Markdown), puts the schema lock generated from ``types.Skill``
  (``skill_contract.schema_lock``) in place of its ``{{SKILL_SCHEMA_LOCK}}`` line, and returns
  the ACTIVE MetaSkill ``default_<suite>``; an unknown suite or a missing file raises
  ``MetaSkillFileError`` naming the valid suites / the expected path.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from ratchet_ray.bank.skill_io import dump_yaml
from ratchet_ray.settings.resources import configs_dir
from ratchet_ray.bank.skill_contract import SCHEMA_LOCK_MARKER, render_schema_lock
from ratchet_ray.types import MetaSkill

DEFAULTS_DIR = configs_dir() / "meta_skills"
_FENCE = "---\n"


class MetaSkillFileError(ValueError):
    """A meta-skill file is malformed; the message names the file and the field."""


def dump_metaskill(meta: MetaSkill) -> str:
    header = meta.model_dump(mode="json", exclude={"body"})
    body = meta.body if meta.body.endswith("\n") else meta.body + "\n"
    return f"{_FENCE}{dump_yaml(header)}{_FENCE}{body}"


def parse_metaskill(text: str, source: str = "<meta-skill>") -> MetaSkill:
    if not text.startswith(_FENCE):
        raise MetaSkillFileError(f"{source}: missing front matter; start the file with '---', "
                                 "then id/suite/status lines, then '---' and the Markdown body")
    header_text, sep, body = text[len(_FENCE):].partition("\n" + _FENCE)
    if not sep:
        raise MetaSkillFileError(f"{source}: front matter is not closed by a '---' line")
    try:
        header = yaml.safe_load(header_text + "\n") or {}
    except yaml.YAMLError as exc:
        raise MetaSkillFileError(f"{source}: malformed YAML front matter: {exc}") from exc
    if not isinstance(header, dict):
        raise MetaSkillFileError(f"{source}: front matter must be a mapping (id, suite, status)")
    try:
        return MetaSkill.model_validate({**header, "body": body})
    except ValidationError as exc:
        problems = "; ".join(f"field {'.'.join(map(str, e['loc']))!r}: {e['msg']}" for e in exc.errors())
        raise MetaSkillFileError(f"{source}: {problems}") from exc


def load_metaskill(path: str | Path) -> MetaSkill:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MetaSkillFileError(f"{path}: cannot read file: {exc}") from exc
    return parse_metaskill(text, str(path))


def default_metaskill(suite: str, defaults_dir: Path = DEFAULTS_DIR, *,
                      source: str | Path | None = None) -> MetaSkill:
    """The shipped authoring prior for ``suite`` as an ACTIVE MetaSkill ``default_<suite>``, read
    from ``source`` when given (a plugin suite's registered file: ``config.meta.default_file``)."""
    path = Path(source) if source else defaults_dir / f"default_{suite}.md"
    if not path.is_file():
        shipped = sorted(p.stem.removeprefix("default_") for p in defaults_dir.glob("default_*.md"))
        raise MetaSkillFileError(
            f"{path}: no default meta-skill for suite {suite!r}; shipped suites: "
            f"{', '.join(shipped) or 'none'} (add that file to ship one; a plugin suite passes "
            "metaskill=<file> to ratchet_ray.suites.register, or runs with meta.enabled=false)")
    try:
        body = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MetaSkillFileError(f"{path}: cannot read the default meta-skill: {exc}") from exc
    if SCHEMA_LOCK_MARKER not in body:
        raise MetaSkillFileError(f"{path}: no {SCHEMA_LOCK_MARKER} line; put it where the schema "
                                 "lock goes (it is generated from types.Skill)")
    return MetaSkill(id=f"default_{suite}", suite=suite, body=render_schema_lock(body),
                     created_round=-1)
