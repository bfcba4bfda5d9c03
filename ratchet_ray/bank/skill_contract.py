"""The one skill contract: the draft model, its JSON schema and the schema lock (``types.Skill``).

The Synthesizer asks the LLM for a ``SkillDraft`` and the meta-skill tells the author which keys
to write (its schema lock); both come from the fields and descriptions of ``types.Skill`` /
``types.Guidance`` here, so a model that follows the meta-skill writes what the schema accepts.

Contracts:
- ``SkillDraft`` / ``GuidanceDraft``: every ``types.AUTHORED_FIELDS`` field, required (so a
  grammar-constrained base model writes each; ``OPTIONAL_IN_DRAFT`` may be left out), bounded by
  ``DRAFT_LIMITS`` (no rambling inside one string until the token cap cuts the JSON); unknown
  keys are rejected. The loop sets ``types.SYSTEM_FIELDS`` itself.
- ``schema_lock()``: one ``key: <description>`` line per draft field, which
  ``render_schema_lock(body)`` puts in place of ``SCHEMA_LOCK_MARKER``.
- ``bare_schema()``: the draft's compact JSON schema, all that ablation A3 (no meta-skill) shows.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Collection

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, create_model

from ratchet_ray.types import AUTHORED_FIELDS, SYSTEM_FIELDS, Guidance, Skill

SCHEMA_LOCK_MARKER = "{{SKILL_SCHEMA_LOCK}}"
OPTIONAL_IN_DRAFT = frozenset({"preconditions"})
# Characters per string, or (items, characters per item) per list.
DRAFT_LIMITS: dict[str, int | tuple[int, int]] = {
    "id": 60, "name": 60, "description": 200, "intent": 160, "signals_match": (6, 40),
    "tags": (4, 40), "preconditions": (3, 120), "applies_when": 300, "key_insight": 400,
    "common_pitfalls": (5, 160), "verify_before_returning": 300,
}


def unique_id(slug: str, taken: Collection[str]) -> str:
    """``slug``, or ``slug_<n>`` with the smallest n >= 2 not in ``taken``."""
    if slug not in taken:
        return slug
    n = 2
    while f"{slug}_{n}" in taken:
        n += 1
    return f"{slug}_{n}"


def _drop_description(schema: dict) -> None:
    # The schema is shown to the model; the class docstring there is noise (and tokens).
    schema.pop("description", None)


DRAFT_CONFIG = ConfigDict(extra="forbid", str_strip_whitespace=True,
                          json_schema_extra=_drop_description)
"""The model config of a skill draft and of every structured reply a role asks for (strict
keys, stripped text, no class docstring in the schema the model is shown)."""


def _draft_fields(model: type[BaseModel], names: tuple[str, ...],
                  nested: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name in names:
        info = model.model_fields[name]
        if name in nested:
            fields[name] = (nested[name], Field(description=info.description))
            continue
        limit = DRAFT_LIMITS[name]
        if isinstance(limit, tuple):
            items, chars = limit
            item = Annotated[str, StringConstraints(min_length=1, max_length=chars)]
            default = {"default_factory": list} if name in OPTIONAL_IN_DRAFT else {}
            fields[name] = (list[item], Field(max_length=items, description=info.description,
                                              **default))
        else:
            fields[name] = (str, Field(min_length=1 if info.is_required() else 0,
                                       max_length=limit, description=info.description))
    return fields


GuidanceDraft: type[BaseModel] = create_model(
    "GuidanceDraft", __config__=DRAFT_CONFIG,
    **_draft_fields(Guidance, tuple(Guidance.model_fields), {}))
SkillDraft: type[BaseModel] = create_model(
    "SkillDraft", __config__=DRAFT_CONFIG,
    **_draft_fields(Skill, AUTHORED_FIELDS, {"guidance": GuidanceDraft}))


def _lock_line(name: str, info: Any, indent: str = "") -> str:
    limit = DRAFT_LIMITS.get(name)
    optional = " (may be left out)" if name in OPTIONAL_IN_DRAFT else ""
    if isinstance(limit, tuple):
        return f"{indent}{name}: [<{info.description}; at most {limit[0]}>]{optional}"
    return f"{indent}{name}: <{info.description}>"


def schema_lock() -> str:
    """The meta-skill's schema lock, generated from ``SkillDraft``."""
    lines = []
    for name, info in SkillDraft.model_fields.items():
        if name == "guidance":
            lines.append("guidance:")
            lines += [_lock_line(n, i, "  ") for n, i in GuidanceDraft.model_fields.items()]
        else:
            lines.append(_lock_line(name, info))
    return ("Answer with ONE JSON object with exactly these keys and nothing else (no prose, no "
            "code fences, no other keys); every key is required unless marked, lists may be "
            "empty:\n\n"
            "```\n" + "\n".join(lines) + "\n```\n\n"
            f"The loop sets {', '.join(SYSTEM_FIELDS)} itself: do not write them.")


def bare_schema() -> str:
    """The draft's JSON schema as compact text (all that ablation A3 shows)."""
    return ("Skill JSON schema: "
            + json.dumps(SkillDraft.model_json_schema(), separators=(",", ":")))


def render_schema_lock(body: str) -> str:
    """``body`` with ``SCHEMA_LOCK_MARKER`` replaced by ``schema_lock()``."""
    return body.replace(SCHEMA_LOCK_MARKER, schema_lock())


def placeholder_texts() -> frozenset[str]:
    """Texts a weak model may copy from the schema lock instead of writing a skill."""
    texts = {i.description for i in SkillDraft.model_fields.values() if i.description}
    texts |= {i.description for i in GuidanceDraft.model_fields.values() if i.description}
    return frozenset(t for t in texts | {f"<{t}>" for t in texts})
