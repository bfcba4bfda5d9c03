"""Leakage audit: does a skill carry task-specific content verbatim? Pure functions.

A skill is general advice; quoting an eval task (prompt, entry point, test inputs, expected
outputs, reference solution, test names or patches) passes that task without learning, and
quoting a train task's *answer* is the same cheat one split over.

Contracts:
- Tokens (``tokenize``): lowercased identifiers (snake_case whole), numbers and single
  punctuation characters; whitespace never counts, so re-indented code still matches.
- Items: each source (``suites.base.LeakSource`` or alike) is cut into lines, prose into
  sentences; an item is kept with at least ``MIN_ITEM_TOKENS`` tokens, or, as an ``identifier``,
  one token of at least ``MIN_IDENTIFIER_CHARS`` characters with ``_`` or a digit
  (``similar_elements``, ``test_parse_2``: never ``sum``).
- Generic content is not leakage: an n-gram (or a whole item shorter than one) found in items of
  at least ``generic_tasks`` distinct tasks (``return true``) is ignored.
- ``LeakIndex.scan``: every task-specific n-gram of an item that a skill field contains (a short
  item must appear whole) marks those tokens copied, per alignment; an item's *coverage* is the
  most tokens of one alignment over its length (a quoted solution line scores 1.0).
- ``LeakageReport``: ``eval_score`` (largest coverage of an eval item), ``train_answer_score``
  (of a train answer), ``train_score`` (of any train item; reported, never a reason to reject);
  ``overlaps`` quote each copied span, highest first. ``flagged(threshold)``: eval_score or
  train_answer_score >= threshold.
- ``embedding_similarity`` is reported beside the score, never part of it: a skill about digit
  sums is rightly close to a task about digit sums.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ratchet_ray.types import Skill

MIN_ITEM_TOKENS = 4
MIN_IDENTIFIER_CHARS = 6
DEFAULT_GENERIC_TASKS = 3
MAX_ITEM_TOKENS = 400  # a huge test input or patch hunk line is cut: its head is what is quoted
SPLITS = ("eval", "train")
_TOKEN = re.compile(r"[a-z_][a-z0-9_]*|\d+(?:\.\d+)?|[^\sa-z0-9_]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Za-z`'\"(])")
PROSE_KINDS = frozenset({"prompt", "problem_statement"})


def tokenize(text: str) -> list[tuple[str, int, int]]:
    """(token, start, end) of each token of ``text`` (offsets into ``text``)."""
    return [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text.lower())]


def skill_fields(skill: Skill) -> dict[str, str]:
    """The authored text of a skill, field by field (a span never crosses two fields)."""
    g = skill.guidance
    fields = {"id": skill.id.replace("_", " "), "description": skill.description,
              "intent": skill.intent, "signals_match": "\n".join(skill.signals_match),
              "preconditions": "\n".join(skill.preconditions),
              "guidance.applies_when": g.applies_when, "guidance.key_insight": g.key_insight,
              "guidance.common_pitfalls": "\n".join(g.common_pitfalls),
              "guidance.verify_before_returning": g.verify_before_returning or ""}
    return {k: v for k, v in fields.items() if v and v.strip()}


@dataclass(frozen=True)
class Item:
    task_id: str
    split: str
    kind: str
    answer: bool
    text: str
    tokens: tuple[str, ...]


@dataclass(frozen=True)
class Overlap:
    """One source item a skill copies: the skill's span and where it comes from."""

    task_id: str
    split: str
    kind: str
    answer: bool
    coverage: float
    field: str
    span: str
    source: str

    def describe(self) -> str:
        return (f"{self.split} task {self.task_id} {self.kind} ({self.coverage:.0%} copied, "
                f"in {self.field}): \"{_clip(self.span, 160)}\"")


@dataclass
class LeakageReport:
    skill_id: str
    eval_score: float = 0.0
    train_score: float = 0.0
    train_answer_score: float = 0.0
    overlaps: list[Overlap] = field(default_factory=list)
    max_cosine: float | None = None
    nearest_eval_task: str | None = None

    def flagged(self, threshold: float) -> bool:
        return self.eval_score >= threshold or self.train_answer_score >= threshold

    def offending(self, threshold: float) -> list[Overlap]:
        """The overlaps that make it flagged (eval items, or train answers), highest first."""
        return [o for o in self.overlaps if o.coverage >= threshold
                and (o.split == "eval" or o.answer)]

    def feedback(self, threshold: float, limit: int = 3) -> str:
        """The re-prompt note: the spans to drop, named with their task and kind."""
        spans = "; ".join(o.describe() for o in self.offending(threshold)[:limit])
        return (f"Your draft `{self.skill_id}` quotes task-specific content ({spans}). A skill "
                "must be general advice: remove these spans and any test values, expected "
                "outputs, names or code copied from a task; describe the idea instead.")

    def row(self, threshold: float) -> dict[str, Any]:
        top = self.overlaps[0].describe() if self.overlaps else ""
        return {"skill_id": self.skill_id, "flagged": self.flagged(threshold),
                "eval_score": round(self.eval_score, 4),
                "train_answer_score": round(self.train_answer_score, 4),
                "train_score": round(self.train_score, 4),
                "max_cosine": None if self.max_cosine is None else round(self.max_cosine, 4),
                "nearest_eval_task": self.nearest_eval_task, "top_span": top}


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _pieces(kind: str, text: str) -> list[str]:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    if kind in PROSE_KINDS:
        return [s for line in lines for s in _SENTENCE.split(line) if s.strip()]
    return lines


def _is_identifier(token: str) -> bool:
    return len(token) >= MIN_IDENTIFIER_CHARS and bool(re.search(r"[_\d]", token))


class LeakIndex:
    """The task-specific n-grams of every source item (see module contract)."""

    def __init__(self, sources: Iterable[Any], split_of: Mapping[str, str], *, ngram: int = 6,
                 generic_tasks: int = DEFAULT_GENERIC_TASKS):
        if ngram < 2:
            raise ValueError(f"leakage ngram {ngram}: use 2 or more tokens (synth.leakage_ngram)")
        self.ngram = ngram
        self.items: list[Item] = []
        seen: set[tuple] = set()
        for source in sources:
            split = split_of.get(source.task_id)
            if split not in SPLITS:
                continue  # a task of neither split is no leak
            for piece in _pieces(source.kind, source.text):
                tokens = tuple(t for t, _, _ in tokenize(piece))[:MAX_ITEM_TOKENS]
                keep = (len(tokens) >= MIN_ITEM_TOKENS or (
                    getattr(source, "identifier", False) and len(tokens) == 1
                    and _is_identifier(tokens[0])))
                key = (source.task_id, source.kind, tokens)
                if keep and key not in seen:
                    seen.add(key)
                    self.items.append(Item(source.task_id, split, source.kind,
                                           bool(source.answer), piece, tokens))
        postings: dict[tuple[str, ...], list[tuple[int, int]]] = defaultdict(list)
        tasks_of: dict[tuple[str, ...], set[str]] = defaultdict(set)
        for number, item in enumerate(self.items):
            for offset, gram in self._grams(item.tokens):
                postings[gram].append((number, offset))
                tasks_of[gram].add(item.task_id)
        self.postings = {g: p for g, p in postings.items() if len(tasks_of[g]) < generic_tasks}
        self.lengths = sorted({len(g) for g in self.postings})

    def _grams(self, tokens: Sequence[str]) -> Iterable[tuple[int, tuple[str, ...]]]:
        if len(tokens) <= self.ngram:
            yield 0, tuple(tokens)
            return
        for i in range(len(tokens) - self.ngram + 1):
            yield i, tuple(tokens[i:i + self.ngram])

    def scan(self, skill: Skill) -> LeakageReport:
        """The skill's overlaps with every item and its scores (module contract)."""
        report = LeakageReport(skill.id)
        best: dict[int, Overlap] = {}
        for name, text in skill_fields(skill).items():
            tokens = tokenize(text)
            words = [t for t, _, _ in tokens]
            covered: dict[tuple[int, int], set[int]] = defaultdict(set)
            for length in self.lengths:
                for i in range(len(words) - length + 1):
                    gram = tuple(words[i:i + length])
                    for number, offset in self.postings.get(gram, ()):
                        if length < self.ngram and length != len(self.items[number].tokens):
                            continue  # a short gram only ever stands for a whole short item
                        covered[(number, i - offset)].update(range(i, i + length))
            for (number, _), positions in covered.items():
                item = self.items[number]
                coverage = min(1.0, len(positions) / len(item.tokens))
                if number in best and best[number].coverage >= coverage:
                    continue
                start, end = tokens[min(positions)][1], tokens[max(positions)][2]
                best[number] = Overlap(item.task_id, item.split, item.kind, item.answer,
                                       coverage, name, text[start:end], _clip(item.text, 200))
        report.overlaps = sorted(best.values(), key=lambda o: (-o.coverage, o.split != "eval",
                                                               o.task_id, o.kind, o.span))
        train = [o for o in report.overlaps if o.split != "eval"]
        report.eval_score = max((o.coverage for o in report.overlaps if o.split == "eval"),
                                default=0.0)
        report.train_score = max((o.coverage for o in train), default=0.0)
        report.train_answer_score = max((o.coverage for o in train if o.answer), default=0.0)
        return report

    def audit(self, skills: Iterable[Skill]) -> list[LeakageReport]:
        """One report per skill, in the order given."""
        return [self.scan(s) for s in skills]


def embedding_similarity(reports: Sequence[LeakageReport], skills: Sequence[Skill],
                         eval_prompts: Mapping[str, str], embedder: Any) -> None:
    """Fill each report's ``max_cosine`` / ``nearest_eval_task``: the eval task whose prompt is
    closest to the skill's guidance (``embedder.embed`` on both; one call each)."""
    if not skills or not eval_prompts:
        return
    from ratchet_ray.llm.base import cosine_matrix

    ids = sorted(eval_prompts)
    task_vectors = np.asarray(embedder.embed([eval_prompts[i] for i in ids]))
    skill_vectors = np.asarray(embedder.embed([s.guidance_text() for s in skills]))
    sims = cosine_matrix(skill_vectors, task_vectors)
    for report, row in zip(reports, sims):
        best = int(np.argmax(row))
        report.max_cosine, report.nearest_eval_task = float(row[best]), ids[best]
