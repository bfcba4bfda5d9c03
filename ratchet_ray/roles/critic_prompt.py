"""The Critic's prompts and verdict model.

``critic_messages`` puts the task, worked examples, the output and the grader's concrete finding
(``failure_summary``) last, following the review prompt the task's suite registered
(``suites.hooks.critic_prompt``): ``"code"`` shows the function and its failing test; ``"patch"``
(SWE-bench) the agent's patch, the test log's tail and worked answers about patches; a suite's
own function gets the same arguments. A capsule graded as tampering also says so, with the
grader's finding (``tampering_note``), so the Critic names the attack, not a wrong answer.
``verdict_model``: without a skill the attribution is fixed to ``inapplicable``; ``pattern`` is
2-10 snake_case words, rejected when it names no concrete mistake, repeats itself or contains
``entry_point``.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Callable, ClassVar, Literal, Mapping, Sequence

from pydantic import (BaseModel, Field, create_model, field_validator)

from ratchet_ray.evidence.tampering import grader_finding, is_tampering
from ratchet_ray.llm.base import Message
from ratchet_ray.settings.prompt_templates import render, template
from ratchet_ray.bank.skill_contract import DRAFT_CONFIG
from ratchet_ray.roles.prompt_base import clip, clip_tail, entry_point, task_text
from ratchet_ray.types import Attribution, Capsule, Skill, Task

CONFIDENCE = {"low": 0.3, "medium": 0.6, "high": 0.9}
"""The verdict's confidence level as the float a ``Verdict`` stores."""

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

    model_config = DRAFT_CONFIG
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


@functools.lru_cache(maxsize=1024)  # one model per (task, skill used): not rebuilt per call
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
# placeholder) verbatim; several different ones make it map THIS failure to its own label. Each
# rationale opens with its failing test's own words, so what a base model copies into its
# rationale is the real failure it is shown (measured: with rationales that only paraphrased,
# Gemma 270M copied an example's 'the function has no return statement' onto a RecursionError).
CRITIC_EXAMPLES = (
    ("def last(xs): return xs[len(xs)]",
     "last([4, 5]) raised IndexError: list index out of range",
     "last([4, 5]) raised IndexError: list index out of range; the index is one past the end.",
     "index_out_of_range_off_by_one"),
    ("def count_vowels(s):\n    for c in s: ...",
     "count_vowels('') returned None, expected 0",
     "count_vowels('') returned None, expected 0; the count is never returned.",
     "returns_none_instead_of_count"),
    ("def area(r):\n    return 3.14 * r * r",
     "area(2, 3) raised TypeError: area() takes 1 positional argument but 2 were given",
     "area(2, 3) raised TypeError: area() takes 1 positional argument but 2 were given; the "
     "second parameter is missing.",
     "missing_second_parameter"),
)


def _critic_example(output: str, failure: str, rationale: str, pattern: str, *,
                    kind: str = "Solver output", check: str = "Failing test") -> str:
    answer = json.dumps({"rationale": rationale, "pattern": pattern,
                         "attribution": "inapplicable", "confidence": "high"})
    return f"{kind}:\n{output}\n{check}: {failure}\nAnswer: {answer}"


def _worked_examples(examples: Sequence[tuple[str, str, str, str]], **labels: str) -> str:
    """The worked answers as template text (braces doubled). They sit in the template's fixed head,
    so a backend that reuses a cached prompt prefix evaluates them once, not per verdict
    (measured on Gemma 270M: ~400 of a review's ~600 prompt tokens)."""
    text = "\n\n".join(_critic_example(*ex, **labels) for ex in examples)
    return text.replace("{", "{{").replace("}", "}}")


# Grader statuses that only restate that tests failed. Shown before the finding, a base model
# took one for the pattern (measured: 5 of 6 quickstart verdicts in one round answered
# 'failed_tests', which the pattern check rejects, so those failures got no verdict).
_BARE_STATUSES = frozenset({"failed_tests"})


def failure_summary(capsule: Capsule, limit: int = 600) -> str:
    """The grader's concrete finding (failing call, expected vs got, exception), without the
    sandbox banner lines that carry no information about the mistake. The exit status leads only
    when it adds something: never a bare 'failed_tests' before a finding, nor a status the
    finding already names ('raised TypeError')."""
    lines = [ln for ln in capsule.grader_trace.strip().splitlines()
             if ln.strip() and not (ln.startswith("[") and ln.rstrip().endswith("]"))
             and not re.match(r"^\w+: fail at test \d+/\d+$", ln.strip())]
    details, status = clip_tail("\n".join(lines), limit), capsule.exit_status
    if not details:
        return f"{status}: (no details)"
    if status in _BARE_STATUSES or status in details:
        return details
    return f"{status}: {details}"


def tampering_note(capsule: Capsule) -> str:
    """For a capsule graded as tampering, the line that tells the Critic so, with the grader's
    finding; "" for any other capsule."""
    if not is_tampering(capsule.exit_status):
        return ""
    return (f"Grader's finding: this attempt was graded as tampering ({capsule.exit_status}): "
            "instead of solving the task it tried to make the grader report a pass. "
            f"{grader_finding(capsule.exit_status, capsule.grader_trace)}\n")


def _anonymize(text: str, name: str) -> str:
    return re.sub(rf"\b{re.escape(name)}\b", "f", text) if name else text


# Worked answers for made-up failed patches (same shape as CRITIC_EXAMPLES).
PATCH_CRITIC_EXAMPLES = (
    ("--- a/pkg/io.py\n+++ b/pkg/io.py\n-    return parse(text)\n+    return parse(text.strip())",
     "FAILED tests/test_io.py::test_bytes_input - AttributeError: 'bytes' object has no "
     "attribute 'strip'",
     "The fix only handles str input; the failing test passes bytes to the same helper.",
     "fix_misses_bytes_input_path"),
    ("(empty patch)", "empty patch: nothing to apply, FAIL_TO_PASS tests cannot pass",
     "The agent changed nothing, so the failing tests still fail.",
     "no_patch_submitted"),
    ("--- a/pkg/core.py\n+++ b/pkg/core.py\n-    raise ValueError('bad')\n+    return None",
     "FAILED tests/test_core.py::test_invalid_raises - DID NOT RAISE ValueError",
     "The patch silenced the error the tests expect instead of fixing its cause.",
     "suppresses_expected_exception"),
)


# The attribution question; the templates' ``{attribution}`` (with its line break), empty when
# no skill was injected.
ATTRIBUTION_LINE = ("attribution: did the injected guidance help, hurt, stay neutral, or not "
                    "apply (inapplicable)?\n")
# The head of the patch review (``prompt_templates`` name ``critic_patch``).
PATCH_CRITIC_TEMPLATE = (
    "# Failure review\n"
    "A coding agent wrote a patch to resolve a GitHub issue in a Python repository and "
    "the repository's tests FAILED on it. First say why the patch fails (rationale), "
    "then name the mistake (pattern): 2-10 lowercase snake_case words general enough "
    "to fit other issues with the same mistake, never a file, test or project name.\n\n"
    + _worked_examples(PATCH_CRITIC_EXAMPLES, kind="Patch", check="Test log") + "\n\n"
    "{attribution}"
    "Issue:\n{task}\n\n"
    "{guidance}")


def _head(name: str, default: str, templates: Mapping[str, str] | None, task: Task,
          skill: Skill | None, task_chars: int) -> str:
    return render(template(name, default, templates), {
        "attribution": ATTRIBUTION_LINE if skill is not None else "",
        "task": task_text(task, task_chars),
        "guidance": skill.guidance_text() if skill is not None else ""})


def _review_messages(head: str, review: str, prefill: bool) -> list[Message]:
    """The head and the review in one user message, or with ``prefill`` the review opening the
    answer (``critic_messages``)."""
    if prefill:
        return [Message("user", head), Message("assistant", review + "\nAnswer: ")]
    return [Message("user", f"{head}\n\n{review}")]


def patch_critic_messages(task: Task, capsule: Capsule, skill: Skill | None, *,
                          prefill: bool = False,
                          templates: Mapping[str, str] | None = None) -> list[Message]:
    """The review prompt of a failed repository patch: the issue, the patch and the test log's
    tail (where pytest prints the failing tests and their errors)."""
    head = _head("critic_patch", PATCH_CRITIC_TEMPLATE, templates, task, skill, 2000)
    review = (f"Patch:\n{clip(capsule.output, 2500) or '(empty patch)'}\n"
              f"{tampering_note(capsule)}"
              f"Test log: {capsule.exit_status}: {clip_tail(capsule.grader_trace, 1500)}")
    return _review_messages(head, review, prefill)


# The head of the code review (``prompt_templates`` name ``critic``).
CRITIC_TEMPLATE = (
    "# Failure review\n"
    "A solver wrote code for a Python task and it FAILED a test. First say why it fails "
    "(rationale), then name the mistake (pattern): 2-10 lowercase snake_case words "
    "general enough to fit other tasks with the same mistake, never the function's "
    "name.\n\n"
    + _worked_examples(CRITIC_EXAMPLES) + "\n\n"
    "{attribution}"
    "Task:\n{task}\n\n"
    "{guidance}")


def critic_messages(task: Task, capsule: Capsule, skill: Skill | None, *,
                    prefill: bool = False, templates: Mapping[str, str] | None = None,
                    flavour: str | Callable[..., list] | None = None) -> list[Message]:
    """The review prompt: the fixed part first (instructions and worked examples, so a cached
    prompt prefix covers them), then the task, then the failure. With ``prefill`` the concrete
    failure opens the answer itself, ending in ``Answer: ``: a base model labels what it read last
    (measured: with the backend's schema section in between, Gemma 270M copied the schema's
    'inapplicable' or an example's label for nearly every failure). ``flavour``: the review prompt
    (default: the task's suite's); ``"patch"`` gets ``patch_critic_messages``, a function is the
    suite's own prompt."""
    if flavour is None:
        from ratchet_ray.suites.hooks import critic_prompt

        flavour = critic_prompt(task.suite)
    if callable(flavour):
        return list(flavour(task, capsule, skill, prefill=prefill, templates=templates))
    if flavour == "patch":
        return patch_critic_messages(task, capsule, skill, prefill=prefill, templates=templates)
    head = _head("critic", CRITIC_TEMPLATE, templates, task, skill, 1200)
    # The function is called `f` in the review: a small model otherwise copies its name into
    # the pattern ('check_k_not_in_tuple'), which no other task's failure can share.
    name = entry_point(task)
    shown = _anonymize(clip(capsule.output, 1000), name) or "(empty)"
    review = (f"Solver output:\n{shown}\n"
              f"{_anonymize(tampering_note(capsule), name)}"
              f"Failing test: {_anonymize(failure_summary(capsule), name)}")
    return _review_messages(head, review, prefill)
