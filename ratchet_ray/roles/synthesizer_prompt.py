"""The Synthesizer's skill-authoring prompts, two ways to one contract (``bank.skill_contract``):
- whole (``synth_messages``): one structured call for the complete ``SkillDraft`` (chat and
  hosted models);
- fieldwise (``field_messages``, ``field_model``, ``assemble_draft``): one small call per field
  (``FIELD_ORDER``), each prompt with the pattern, examples and the fields so far, each under its
  own grammar; on a base-model backend each field is instead the one-line continuation of an
  opening (``field_opening``, lists split by ``field_items``) and the id is the pattern. Small
  base models copy whatever worked example, description or schema a prompt shows, so no prompt
  shows a worked example skill.
``copies_template`` catches copied schema placeholders.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Mapping, Sequence

from pydantic import BaseModel, Field, StringConstraints, create_model

from ratchet_ray.llm.base import Message
from ratchet_ray.settings.prompt_templates import render, template
from ratchet_ray.roles.prompt_base import clip
from ratchet_ray.bank.skill_contract import (DRAFT_CONFIG, DRAFT_LIMITS, GuidanceDraft, SkillDraft,
                                        bare_schema, placeholder_texts, schema_lock)
from ratchet_ray.types import MetaSkill, Skill

# Fields a fieldwise draft writes, in order: the fix first, then when it applies, then the
# routing surface (which a small model words best once the fix is written), the id last.
FIELD_ORDER = ("key_insight", "applies_when", "common_pitfalls", "verify_before_returning",
               "intent", "description", "signals_match", "id")
_ID_REGEX = r"^[a-z][a-z0-9]*(_[a-z0-9]+){1,5}$"
_FIELD_ITEMS = {"common_pitfalls": 3, "signals_match": 4}  # fewer than the contract allows
# Each field is asked as a question about the failure, never with the schema lock's wording: a
# base model copies whatever description it is shown (measured: with the lock's descriptions in
# the field prompts, Gemma 270M wrote them back verbatim on 3 of 3 drafts).
FIELD_QUESTIONS = {
    "key_insight": "In one sentence, how should a solver avoid '{p}' on a new task?",
    "applies_when": "In one sentence, what in a task statement shows that '{p}' can happen?",
    "common_pitfalls": "List up to 3 concrete mistakes from the failed examples above.",
    "verify_before_returning": "In one sentence, what should the solver check before answering, "
                               "so that '{p}' does not happen?",
    "intent": "Write one sentence starting with a verb that names the kind of task this skill "
              "helps with.",
    "description": "In one line, which tasks does this skill help with?",
    "signals_match": "List up to 4 lowercase words from the task statements above that hint at "
                     "'{p}'.",
    "id": "Name the skill: 2-6 lowercase words joined by underscores.",
}

# Placeholder values a weak model may copy instead of writing a skill: the schema lock's field
# descriptions and the placeholders earlier schema locks showed.
TEMPLATE_VALUES = frozenset({
    "snake_case_id", "snake_case_name", "one line: when the skill applies",
    "imperative match phrase, e.g. Sum a list of numbers", "the kind of task",
    "the one idea that avoids the failure", "a check to run mentally before answering",
    *placeholder_texts()})


def copies_template(draft: BaseModel) -> bool:
    """True when the draft repeats the schema lock's placeholders instead of real guidance."""
    g = draft.guidance
    fields = (draft.id, draft.description, draft.intent, g.applies_when, g.key_insight,
              g.verify_before_returning)
    return sum(f.strip().lower() in TEMPLATE_VALUES for f in fields) >= 2


def pattern_core(pattern: str) -> str:
    """The pattern without the cluster size suffix the Synthesizer adds (' (x3)')."""
    return re.sub(r" \(x\d+\)$", "", pattern)


GUIDE_CHARS = 4000
"""The authoring guide's length cap in a prompt; a whole draft's schema lock always survives it."""


def authoring_guide(metaskill: MetaSkill | None, *, whole: bool) -> str:
    """The authoring prior, or under A3 (``metaskill`` None) only the bare schema. A meta-skill
    rewritten without the schema lock gets it back; a fieldwise draft needs no lock at all. A
    guide over ``GUIDE_CHARS`` is cut in its prose, never in the lock: the lock is taken out,
    the rest clipped to the room left, and the lock appended whole."""
    if metaskill is None:
        return bare_schema() if whole else ""
    lock, body = schema_lock(), metaskill.body
    section = f"## Schema lock\n\n{lock}"
    if not whole:  # one field is asked for, not the JSON object the lock describes
        return "Authoring guide:\n" + clip(body.replace(section, "").replace(lock, ""),
                                             GUIDE_CHARS)
    if lock in body and len(body.strip()) <= GUIDE_CHARS:
        return "Authoring guide:\n" + body.strip()  # the shipped layout, lock in place
    prose = body.replace(section, "").replace(lock, "").strip()
    room = max(GUIDE_CHARS - len(section) - 2, 0)
    return "Authoring guide:\n" + f"{clip(prose, room)}\n\n{section}"


# The head of every authoring prompt, whole or fieldwise (``prompt_templates`` name
# ``synthesizer``): ``{guide}`` is the authoring guide (empty for a fieldwise draft under A3),
# ``{evidence}`` the cluster's pattern, examples, existing skills and feedback.
SYNTH_TEMPLATE = (
    "# Skill authoring ({suite})\n\n"
    "Write ONE reusable skill: natural-language guidance (never code) that would help "
    "a solver avoid the recurring failure below on future, different tasks.\n\n"
    "{guide}\n\n"
    "{evidence}")


def _authoring(suite: str, guide: str, evidence: Sequence[str],
               templates: Mapping[str, str] | None) -> str:
    return render(template("synthesizer", SYNTH_TEMPLATE, templates),
                  {"suite": suite, "guide": guide, "evidence": "\n\n".join(evidence)})


def _evidence(pattern: str, examples: Sequence[str], existing: Sequence[Skill],
              feedback: Sequence[str]) -> list[str]:
    return [f"Recurring failure pattern ({len(examples)} examples shown): {pattern}",
                   *(["Examples:\n" + "\n---\n".join(examples)] if examples else []),
                   *(["Existing skills (do not repeat them):\n"
                      + "\n".join(f"- {s.id}: {s.intent}" for s in existing[:30])]
                     if existing else []),
                   *(["Feedback on your previous draft:\n" + "\n".join(f"- {f}" for f in feedback)]
                     if feedback else [])]


def synth_messages(suite: str, metaskill: MetaSkill | None, pattern: str,
                   examples: Sequence[str], existing: Sequence[Skill],
                   feedback: Sequence[str] = (), *, prefill: bool = False,
                   templates: Mapping[str, str] | None = None) -> list[Message]:
    """Ask for one whole skill that addresses a failure cluster. ``metaskill`` None is ablation
    A3: no authoring prior, only the bare schema. With ``prefill`` (backends that continue a
    trailing assistant message) the pattern opens the answer."""
    evidence = _evidence(pattern, examples, existing, feedback)
    parts = [_authoring(suite, authoring_guide(metaskill, whole=True), evidence, templates)]
    if prefill:
        return [Message("user", "\n\n".join(parts)),
                Message("assistant", f"Pattern: {pattern_core(pattern)}\nSkill: ")]
    parts.append("Answer with the JSON object of the new skill.")
    return [Message("user", "\n\n".join(parts))]


def field_model(name: str) -> type[BaseModel]:
    """A one-key model for drafting field ``name``: the contract's bounds (lists shorter, the id
    a snake_case phrase of 2-6 words)."""
    limit = DRAFT_LIMITS[name]
    if isinstance(limit, tuple):
        item = Annotated[str, StringConstraints(min_length=2, max_length=limit[1])]
        spec: Any = (list[item], Field(min_length=1, max_length=_FIELD_ITEMS.get(name, limit[0])))
    elif name == "id":
        spec = (str, Field(min_length=3, max_length=limit, pattern=_ID_REGEX))
    else:
        spec = (str, Field(min_length=8, max_length=limit))
    # No descriptions: the backend shows this schema to the model, which would copy them.
    return create_model(f"Draft_{name}", __config__=DRAFT_CONFIG, **{name: spec})


# A base-model backend (``supports_prefill``) writes a free-text field as the continuation of an
# opening, ending at the line break, instead of under a JSON grammar: measured, Gemma 270M under
# the grammar wrote the key's own name as its value ('{"key_insight": "key_insight"}').
FIELD_OPENINGS = {
    "key_insight": "To avoid {p}, ",
    "applies_when": "When the task ",
    "verify_before_returning": "Before answering, check that ",
    "intent": "Write a function that ",
    "description": "Tasks that ",
    # Lists too, one line of comma-separated items (``field_items``): under the list grammar the
    # backend's schema section sits in the prompt, and Gemma 270M wrote its keywords back as the
    # items (measured: common_pitfalls ['items', 'maxLength', 'minLength']).
    "common_pitfalls": "Mistakes seen in the failed examples: ",
    "signals_match": "Words in such task statements: ",
}
# Where a base model's one-line field turns into a numbered list ('Tasks that 1) ... 2) ...'),
# the continuation ends: the first item is the field.
FIELD_STOPS = ("\n", " 2)", " 2.", "; 2")


def field_items(name: str, text: str) -> list[str]:
    """The items of list field ``name`` from its one-line continuation: split at commas and
    semicolons, numbering and quotes stripped, duplicates dropped, at most the field's count."""
    items = []
    for raw in re.split(r"[,;]|\band\b", text):
        item = re.sub(r"^\s*(\d+[).]|[-*])\s*", "", raw).strip(" .'\"`")
        if len(item) >= 2 and item.lower() not in (i.lower() for i in items):
            items.append(item[:DRAFT_LIMITS[name][1]])
    return items[:_FIELD_ITEMS.get(name, DRAFT_LIMITS[name][0])]


def field_opening(name: str, pattern: str) -> str:
    """The opening a prefill backend continues for field ``name`` ('' when it has none)."""
    return FIELD_OPENINGS.get(name, "").format(p=pattern_core(pattern))


def fit_field(name: str, text: str) -> str:
    """A continuation within the bound as it is, else cut to field ``name``'s bound at its last
    clause (or word) boundary: measured, Gemma 270M ran the intent on as a numbered list and the
    whole draft failed on its 160-character bound."""
    limit = DRAFT_LIMITS[name]
    if not isinstance(limit, int) or len(text) <= limit:
        return text
    cut = text[:limit]
    for sep in (". ", "; ", ", "):
        at = cut.rfind(sep)
        if at >= limit // 2:
            return cut[:at].rstrip() + ("." if sep == ". " else "")
    return cut[:max(cut.rfind(" "), 1)].rstrip(" ,;:")


def field_max_tokens(name: str, cap: int) -> int:
    """A field's generation cap: what its length bound needs (about 3 characters per token)."""
    limit = DRAFT_LIMITS[name]
    chars = limit[0] * limit[1] if isinstance(limit, tuple) else limit
    return min(cap, chars // 3 + 24)


def field_messages(suite: str, metaskill: MetaSkill | None, pattern: str,
                   examples: Sequence[str], existing: Sequence[Skill],
                   feedback: Sequence[str], drafted: dict[str, Any], name: str, *,
                   templates: Mapping[str, str] | None = None) -> list[Message]:
    """Ask for field ``name`` of the skill, given the fields ``drafted`` so far. Every field's
    prompt starts with the same text (guide, pattern, examples), so a backend that reuses a
    cached prompt prefix pays for it once per skill."""
    evidence = _evidence(pattern, examples, existing, feedback)
    parts = [_authoring(suite, authoring_guide(metaskill, whole=False), evidence, templates)]
    if drafted:
        parts.append("The skill so far:\n" + "\n".join(
            f"- {k}: {'; '.join(v) if isinstance(v, list) else v}"
            for k, v in drafted.items()))
    parts.append(f"{FIELD_QUESTIONS[name].format(p=pattern_core(pattern))} Plain words, no code.")
    return [Message("user", "\n\n".join(parts))]


def assemble_draft(fields: dict[str, Any]) -> BaseModel:
    """The ``SkillDraft`` of a fieldwise draft (``name`` is the id; no tags or preconditions);
    raises ``pydantic.ValidationError`` like a whole draft would."""
    guidance = {k: fields[k] for k in GuidanceDraft.model_fields}
    top = {k: fields.get(k, []) for k in SkillDraft.model_fields if k != "guidance"}
    top["name"] = fields["id"]
    return SkillDraft.model_validate({**top, "guidance": guidance})
