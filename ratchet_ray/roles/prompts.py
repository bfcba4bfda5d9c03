"""Prompt builders and structured-output models for every LLM role.

All prompts are completion-style documents in ONE user message, so they work on a base model
(the local Gemma 3 270M has no chat template; ``llm.prompting.completion_prompt`` turns the
messages into text sections ending in an open response) and on chat models alike. Structured roles
pass their pydantic model's JSON schema to the backend, which constrains decoding where it can
(llama.cpp grammars) and states the schema in the prompt.

API (other roles code against exactly these):
- ``code_messages(task, skill, *, prefill="") -> list[Message]``; ``code_prefill(task)`` (the
  answer's opening fence + ``def <entry_point>(``, sent as a trailing assistant message to
  backends that declare ``supports_prefill``); ``CODE_STOP`` stop sequences (they never match an
  opening fence, only a closing one or what a base model writes after the function).
- ``guidance_block(skill) -> str``: the 'Guidance' block injected into the Solver prompt.
- ``router_messages(task, candidates) -> list[Message]``;
  ``router_choice_model(candidate_ids) -> type[RouterChoice]`` (``skill_id`` is an enum of the
  candidate ids plus ``"NONE"``).
- ``critic_messages(task, capsule, skill, *, prefill=False) -> list[Message]`` (the task, then
  worked examples, the output and the grader's concrete finding, ``failure_summary(capsule)``,
  last; with ``prefill`` the part from the examples on is a trailing assistant message);
  ``verdict_model(skill_used: bool, *, entry_point="") -> type[VerdictOut]`` (no skill:
  attribution fixed to ``inapplicable``; ``pattern`` is 2-10 snake_case words,
  ``PATTERN_REGEX``, normalised from spaced/hyphenated text, and rejected when it names no
  concrete mistake, repeats itself or contains ``entry_point``: ``pattern_problem``);
  ``CONFIDENCE`` maps the confidence level to a float.
- ``synth_messages(suite, metaskill, pattern, examples, existing, feedback, *, prefill=False)``;
  ``SkillDraft`` (the Skill fields an author writes; ``SKILL_SCHEMA_LOCK`` shows them as a worked
  example skill, ``EXAMPLE_SKILL``); ``copies_template(draft)`` detects a copied example.
- ``metasynth_messages(suite, current, pattern_counts)``; ``MetaSkillDraft``.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, ClassVar, Literal, Sequence

from pydantic import (BaseModel, ConfigDict, Field, StringConstraints, create_model,
                      field_validator)

from ratchet_ray.llm.base import Message
from ratchet_ray.types import NONE_SKILL, Attribution, Capsule, MetaSkill, Skill, Task

# Generation caps per structured role (the Solver uses LLMSettings.max_tokens).
ROUTER_MAX_TOKENS = 48
CRITIC_MAX_TOKENS = 320
SYNTH_MAX_TOKENS = 640
META_MAX_TOKENS = 1200
# A base model keeps writing after the function; these end the completion at the usual places.
CODE_STOP = ("\n```\n", "\nassert ", "\nprint(", "\nif __name__", "\n# Test", "\n# Example",
             "\n    \n    \n")
CONFIDENCE = {"low": 0.3, "medium": 0.6, "high": 0.9}


def _drop_description(schema: dict) -> None:
    # The schema is shown to the model; class docstrings there are noise (and tokens).
    schema.pop("description", None)


_STRUCTURED = ConfigDict(extra="forbid", str_strip_whitespace=True,
                         json_schema_extra=_drop_description)


def _clip(text: str, limit: int) -> str:
    """Keep the head of ``text`` and say how much was cut, so the model knows it is partial."""
    text = text.strip()
    return text if len(text) <= limit else f"{text[:limit]}\n...[{len(text) - limit} chars cut]"


def _tail(text: str, limit: int) -> str:
    """Keep the end of ``text`` (tracebacks and test failures put the cause last)."""
    text = text.strip()
    return text if len(text) <= limit else f"[{len(text) - limit} chars cut]...\n{text[-limit:]}"


def _task_text(task: Task, limit: int = 3000) -> str:
    # MBPP+ prompts are wrapped in a docstring; the quotes are noise to the model.
    return _clip(task.prompt.strip().strip('"').strip(), limit)


# ----------------------------------------------------------------------------- solver (code)
def guidance_block(skill: Skill) -> str:
    g = skill.guidance
    lines = [f"Guidance (skill `{skill.id}`):", f"- Applies when: {g.applies_when}",
             f"- Key insight: {g.key_insight}"]
    if g.common_pitfalls:
        lines.append("- Pitfalls: " + "; ".join(g.common_pitfalls))
    if g.verify_before_returning:
        lines.append(f"- Verify before returning: {g.verify_before_returning}")
    return "\n".join(lines)


def code_prefill(task: Task) -> str:
    """The start of the answer (fence + function header) for backends that continue a prefill."""
    entry_point = str(task.payload.get("entry_point") or "").strip()
    return f"```python\ndef {entry_point}(" if entry_point else "```python\n"


def code_messages(task: Task, skill: Skill | None, *, prefill: str = "") -> list[Message]:
    """A Python-function prompt; the answer is expected in one ```python block. A non-empty
    ``prefill`` becomes a trailing assistant message the model continues (base models write far
    better code when the function header is already written)."""
    parts = ["# Python programming task",
             "Write one correct, self-contained Python function that solves the task. "
             "Use only the standard library. Answer with only the code in one ```python block."]
    if skill is not None:
        parts.append(guidance_block(skill))
    parts.append("Task:\n" + _task_text(task))
    entry_point = str(task.payload.get("entry_point") or "").strip()
    if entry_point:
        parts.append(f"The function must be named `{entry_point}`.")
    messages = [Message("user", "\n\n".join(parts))]
    return [*messages, Message("assistant", prefill)] if prefill else messages


# ----------------------------------------------------------------------------- router
class RouterChoice(BaseModel):
    """The Router's answer: one candidate skill id, or NONE."""

    model_config = _STRUCTURED
    skill_id: str


def router_choice_model(candidate_ids: Sequence[str]) -> type[RouterChoice]:
    """A RouterChoice whose ``skill_id`` is constrained to the candidates plus NONE."""
    allowed = tuple(dict.fromkeys([*candidate_ids, NONE_SKILL]))
    return create_model("RouterChoice", __base__=RouterChoice,
                        skill_id=(Literal[allowed], ...))  # type: ignore[valid-type]


def _skill_card(skill: Skill) -> str:
    return (f"- {skill.id}: {skill.intent}. Use when: {skill.guidance.applies_when}"
            + (f" ({skill.description})" if skill.description != skill.intent else ""))


def router_messages(task: Task, candidates: Sequence[Skill]) -> list[Message]:
    cards = "\n".join(_skill_card(s) for s in candidates)
    text = ("# Skill routing\n"
            "Pick the ONE skill whose guidance would most help solve the task, or NONE when no "
            "skill clearly applies. A wrong skill hurts more than no skill.\n\n"
            f"Task:\n{_task_text(task, 2000)}\n\n"
            f"Skills:\n{cards}\n- {NONE_SKILL}: no skill applies\n\n"
            'Answer with JSON: {"skill_id": "<one id from the list, or NONE>"}')
    return [Message("user", text)]


# ----------------------------------------------------------------------------- critic
# A pattern is a snake_case label of 2-10 words. The grammar makes a base model write a compact
# label instead of prose or a copy of the attribution; the validator also accepts spaced or
# hyphenated words (chat backends) by normalising them first.
PATTERN_REGEX = r"^[a-z][a-z0-9]*(_[a-z0-9]+){1,9}$"
# Words that say nothing about the mistake: a pattern made only of these (an attribution label,
# 'wrong output', a copy of the instructions) is rejected, so the repair retry asks again.
GENERIC_PATTERN_WORDS = frozenset({
    "helped", "hurt", "neutral", "inapplicable", "not", "applicable", "none", "unknown", "other",
    "a", "an", "the", "of", "in", "to", "is", "and", "or", "no", "failure", "failures", "failed",
    "fail", "fails", "error", "errors", "wrong", "bad", "incorrect", "bug", "buggy", "issue",
    "problem", "mistake", "code", "solution", "output", "answer", "result", "test", "tests",
    "task", "general", "generic", "short", "label", "pattern", "word", "words", "snake", "case"})
# Example labels shown to the critic: general mistakes, none tied to one task.
EXAMPLE_PATTERNS = ("off_by_one_in_range_bounds", "ignores_empty_input", "wrong_parameter_count",
                    "returns_bool_instead_of_list", "treats_int_as_iterable",
                    "prints_instead_of_returning")


def normalize_pattern(text: str) -> str:
    """``'  Off-by-one in Range '`` -> ``'off_by_one_in_range'`` (lowercase, words joined by _)."""
    return "_".join(re.split(r"[\s_\-]+", text.strip().lower())).strip("_")


def pattern_problem(pattern: str, task_names: Sequence[str] = ()) -> str:
    """Why a normalised pattern is useless ('' when it is fine): only generic words (an
    attribution label, 'wrong output'), a degenerate repetition, or a task's own name."""
    words = [w for w in pattern.split("_") if w]
    if all(w in GENERIC_PATTERN_WORDS or len(w) < 3 for w in words):
        return (f"pattern {pattern!r} names no concrete mistake; write 2-10 snake_case words that "
                "say what the code did wrong, e.g. " + ", ".join(EXAMPLE_PATTERNS[:3]))
    if max(words.count(w) for w in words) >= 3:
        return f"pattern {pattern!r} repeats itself; name the mistake in 2-10 different words"
    for name in task_names:
        if len(name) >= 3 and name in pattern:
            return (f"pattern {pattern!r} contains the task's name {name!r}; describe the mistake "
                    "so it fits other tasks too")
    return ""


class VerdictOut(BaseModel):
    """The Critic's structured answer for one failed attempt. ``rationale`` comes first: the
    model restates the concrete failure, then labels it (``pattern``) from what it just wrote."""

    model_config = _STRUCTURED
    # Normalised task names a pattern must not contain (set per task by ``verdict_model``).
    task_names: ClassVar[tuple[str, ...]] = ()
    rationale: str = Field(min_length=1, max_length=300)
    pattern: str = Field(min_length=3, max_length=80, pattern=PATTERN_REGEX)
    attribution: Attribution
    confidence: Literal["low", "medium", "high"]

    @field_validator("pattern", mode="before")
    @classmethod
    def _specific_pattern(cls, value: object) -> object:
        # Before the regex check, so a bare 'inapplicable' gets the helpful message.
        if not isinstance(value, str):
            return value
        value = normalize_pattern(value)
        problem = pattern_problem(value, cls.task_names) if value else ""
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("rationale")
    @classmethod
    def _real_rationale(cls, value: str) -> str:
        # A bare attribution word ('Inapplicable') explains nothing about the failure.
        if value.lower().strip(" .") in GENERIC_PATTERN_WORDS:
            raise ValueError(f"rationale {value!r} explains nothing; say why the code fails "
                             "its failing test")
        return value


def verdict_model(skill_used: bool, *, entry_point: str = "") -> type[VerdictOut]:
    """With no skill injected the only honest attribution is ``inapplicable``: fix it in the
    grammar. ``entry_point`` (the task's function name) may not appear in the pattern."""
    if skill_used and not entry_point:
        return VerdictOut
    fields = {} if skill_used else {"attribution": (Literal["inapplicable"], ...)}
    model = create_model("VerdictOut", __base__=VerdictOut, **fields)  # type: ignore[call-overload]
    model.task_names = (normalize_pattern(entry_point),) if entry_point.strip() else ()
    return model


# Worked answers for made-up failures. A base model copies a single shown answer (or a schema
# placeholder) verbatim; several different ones make it map THIS failure to its own label.
CRITIC_EXAMPLES = (
    ("def last(xs): return xs[len(xs)]",
     "last([4, 5]) raised IndexError: list index out of range",
     "IndexError: list index out of range, it reads xs[len(xs)], one past the end.",
     "index_out_of_range_off_by_one"),
    ("def count_vowels(s):\n    for c in s: ...",
     "count_vowels('') returned None, expected 0",
     "It returned None, expected 0: the function has no return statement.",
     "returns_none_instead_of_count"),
    ("def area(r):\n    return 3.14 * r * r",
     "area(2, 3) raised TypeError: area() takes 1 positional argument but 2 were given",
     "TypeError: the test passes 2 arguments but the function takes 1.",
     "missing_second_parameter"),
)


def _critic_example(output: str, failure: str, rationale: str, pattern: str) -> str:
    answer = json.dumps({"rationale": rationale, "pattern": pattern,
                         "attribution": "inapplicable", "confidence": "high"})
    return f"Solver output:\n{output}\nFailing test: {failure}\nAnswer: {answer}"


def failure_summary(capsule: Capsule, limit: int = 600) -> str:
    """The grader's concrete finding (failing call, expected vs got, exception), without the
    sandbox banner lines that carry no information about the mistake."""
    lines = [ln for ln in capsule.grader_trace.strip().splitlines()
             if ln.strip() and not (ln.startswith("[") and ln.rstrip().endswith("]"))
             and not re.match(r"^\w+: fail at test \d+/\d+$", ln.strip())]
    return f"{capsule.exit_status}: " + (_tail("\n".join(lines), limit) or "(no details)")


def _anonymize(text: str, name: str) -> str:
    return re.sub(rf"\b{re.escape(name)}\b", "f", text) if name else text


def critic_messages(task: Task, capsule: Capsule, skill: Skill | None, *,
                    prefill: bool = False) -> list[Message]:
    """The review prompt. With ``prefill`` (backends that continue a trailing assistant message)
    the worked examples and the concrete failure open the answer itself, ending in ``Answer: ``:
    a base model labels what it read last, and otherwise the schema section that the backend
    appends sits in between (measured: with it there Gemma 270M copied the schema's
    'inapplicable' or an example's label for nearly every failure)."""
    attribution = ("attribution: did the injected guidance help, hurt, stay neutral, or not "
                   "apply (inapplicable)?\n" if skill is not None else "")
    head = ("# Failure review\n"
            "A solver wrote code for a Python task and it FAILED a test. First say why it fails "
            "(rationale), then name the mistake (pattern): 2-10 lowercase snake_case words "
            "general enough to fit other tasks with the same mistake, never the function's "
            "name.\n" + attribution + "\n"
            f"Task:\n{_task_text(task, 1200)}"
            + (f"\n\n{guidance_block(skill)}" if skill is not None else ""))
    # The function is called `f` in the review: a small model otherwise copies its name into
    # the pattern ('check_k_not_in_tuple'), which no other task's failure can share.
    entry_point = str(task.payload.get("entry_point") or "").strip()
    review = ("\n\n".join(_critic_example(*ex) for ex in CRITIC_EXAMPLES) + "\n\n"
              f"Solver output:\n{_anonymize(_clip(capsule.output, 1000), entry_point) or '(empty)'}"
              f"\nFailing test: {_anonymize(failure_summary(capsule), entry_point)}")
    if prefill:
        return [Message("user", head), Message("assistant", review + "\nAnswer: ")]
    return [Message("user", f"{head}\n\n{review}")]


# ----------------------------------------------------------------------------- synthesizer
# Every field is required and bounded so a grammar-constrained base model writes each one and
# cannot ramble inside a single string until the token cap cuts the JSON.
_Item = Annotated[str, StringConstraints(min_length=1, max_length=120)]


class GuidanceDraft(BaseModel):
    model_config = _STRUCTURED
    applies_when: str = Field(min_length=1, max_length=300)
    key_insight: str = Field(min_length=1, max_length=400)
    common_pitfalls: list[_Item] = Field(max_length=5)
    verify_before_returning: str = Field(max_length=300)


class SkillDraft(BaseModel):
    """The part of ``types.Skill`` an author writes; status, author and version are set by us."""

    model_config = _STRUCTURED
    id: str = Field(min_length=1, max_length=60)
    name: str = Field(min_length=1, max_length=80)
    description: str = Field(min_length=1, max_length=200)
    intent: str = Field(min_length=1, max_length=160)
    signals_match: list[_Item] = Field(max_length=6)
    tags: list[_Item] = Field(max_length=4)
    guidance: GuidanceDraft


# Worked skills for made-up failure patterns. A base model copies schema placeholders (measured:
# every Gemma 270M draft repeated them) and a single example verbatim; two different ones, with
# the real pattern last, make it map the pattern to its own skill.
EXAMPLE_SKILLS = {
    "returns none for empty input": {
        "id": "handle_empty_input_first", "name": "handle_empty_input_first",
        "description": "tasks whose input list or string may be empty",
        "intent": "Return the right value for an empty input",
        "signals_match": ["empty", "list", "string"], "tags": ["edge_cases"],
        "guidance": {"applies_when": "the function loops over a list or string argument",
                     "key_insight": "decide the answer for an empty input before the loop and "
                                    "return it explicitly",
                     "common_pitfalls": ["falling off the end and returning None"],
                     "verify_before_returning": "call the function on an empty input in your head"}},
    "off by one in range bounds": {
        "id": "check_range_end_points", "name": "check_range_end_points",
        "description": "tasks that loop over index ranges",
        "intent": "Get the first and last index of a loop right",
        "signals_match": ["range", "index", "loop"], "tags": ["indexing"],
        "guidance": {"applies_when": "the code uses range() or indexes with computed positions",
                     "key_insight": "range(a, b) stops at b - 1; include the end when the task "
                                    "says up to and including",
                     "common_pitfalls": ["skipping the last element", "reading one past the end"],
                     "verify_before_returning": "trace the loop for a two-element input"}},
}
EXAMPLE_SKILL_PATTERN, EXAMPLE_SKILL = next(iter(EXAMPLE_SKILLS.items()))

SKILL_SCHEMA_LOCK = (
    "Skill schema (fixed; fill every field for YOUR pattern, natural language only, never "
    "code). Examples:\n" + "\n".join(f"Pattern: {p}\nSkill: {json.dumps(skill)}"
                                      for p, skill in EXAMPLE_SKILLS.items()))


def _leaf_values(value: object) -> list[str]:
    if isinstance(value, dict):
        return [v for item in value.values() for v in _leaf_values(item)]
    if isinstance(value, list):
        return [v for item in value for v in _leaf_values(item)]
    return [value] if isinstance(value, str) else []


# Values a weak model may copy verbatim instead of writing a skill: the example skill's and the
# placeholders an earlier schema lock showed.
TEMPLATE_VALUES = frozenset({
    "snake_case_id", "one line: when the skill applies",
    "imperative match phrase, e.g. Sum a list of numbers", "the kind of task",
    "the one idea that avoids the failure", "a check to run mentally before answering",
    *(v for skill in EXAMPLE_SKILLS.values()
      for v in _leaf_values({k: v for k, v in skill.items() if k not in ("signals_match", "tags")}))})


def copies_template(draft: "SkillDraft") -> bool:
    """True when the draft repeats the schema lock's example or placeholders instead of real
    guidance for its own pattern."""
    g = draft.guidance
    fields = (draft.id, draft.description, draft.intent, g.applies_when, g.key_insight,
              g.verify_before_returning)
    return sum(f in TEMPLATE_VALUES for f in fields) >= 2


def synth_messages(suite: str, metaskill: MetaSkill | None, pattern: str,
                   examples: Sequence[str], existing: Sequence[Skill],
                   feedback: Sequence[str] = (), *, prefill: bool = False) -> list[Message]:
    """Ask for one skill that addresses a failure cluster. ``metaskill`` None is ablation A3:
    no authoring prior at all (the schema lock stays, it is not part of the meta-skill).
    With ``prefill`` (backends that continue a trailing assistant message) the schema lock and
    the pattern open the answer, so a base model reads them last, after the backend's schema."""
    parts = [f"# Skill authoring ({suite})",
             "Write ONE reusable skill: natural-language guidance (never code) that would help "
             "a solver avoid the recurring failure below on future, different tasks."]
    if metaskill is not None:
        parts.append("Authoring guide:\n" + _clip(metaskill.body, 3000))
    parts.append(f"Recurring failure pattern ({len(examples)} examples shown): {pattern}")
    if examples:
        parts.append("Examples:\n" + "\n---\n".join(examples))
    if existing:
        parts.append("Existing skills (do not repeat them):\n"
                     + "\n".join(f"- {s.id}: {s.intent}" for s in existing[:30]))
    if feedback:
        parts.append("Feedback on your previous draft:\n" + "\n".join(f"- {f}" for f in feedback))
    closing = SKILL_SCHEMA_LOCK + f"\nPattern: {_bare(pattern)}\nSkill: "
    if prefill:
        return [Message("user", "\n\n".join(parts)), Message("assistant", closing)]
    parts.append(closing + "Answer with the JSON object of the new skill.")
    return [Message("user", "\n\n".join(parts))]


def _bare(pattern: str) -> str:
    """The pattern without the cluster size suffix the Synthesizer adds (' (x3)')."""
    return re.sub(r" \(x\d+\)$", "", pattern)


# ----------------------------------------------------------------------------- meta-synth
class MetaSkillDraft(BaseModel):
    """A revised authoring prior: Markdown with a Do / Don't list."""

    model_config = _STRUCTURED
    body: str = Field(min_length=40, max_length=4000)


def metasynth_messages(suite: str, current: MetaSkill,
                       pattern_counts: Sequence[tuple[str, int]]) -> list[Message]:
    patterns = "\n".join(f"- {p} (x{n})" for p, n in pattern_counts[:40]) or "- (none)"
    text = (f"# Meta-skill revision ({suite})\n"
            "The authoring guide below tells a skill author how to write skills (natural-language "
            "guidance injected into a solver's prompt). Revise it using the failure patterns the "
            "critic reported recently: keep what works, add Do / Don't items that would make new "
            "skills address these failures, remove advice that did not help. Markdown, under "
            "600 words.\n\n"
            f"Current guide:\n{_clip(current.body, 3000)}\n\n"
            f"Recent failure patterns:\n{patterns}\n\n"
            'Answer with JSON: {"body": "<the full revised Markdown guide>"}')
    return [Message("user", text)]
