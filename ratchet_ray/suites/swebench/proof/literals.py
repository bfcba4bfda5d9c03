"""Replacement literals drawn from what real expectations look like (issue 49).

A mutant (``mutants``) must be told from the real test by nothing but its value, and its value
must not give it away either: a string whose last letter was swapped at random is a word found
nowhere else in the repository, and where a test expects one of the call's own arguments
(``assert pick(a, b) == b``) a random digit is not what a test expects. So a replacement is
drawn, by the shape of the literal it replaces (same type, same length: the file keeps its
size, a canary session's graded file is as large as the real one's):
- where the real value is one of the compared call's literal arguments, another argument of it;
  where it is not, never one of them;
- else, with the probability ``LOCAL_SHARE``, another literal of the test function itself (a
  real expectation is often a value its test wrote earlier: ``make(5)`` ... ``== 5``; on the
  real projects' graded tests 29% are, a replacement drawn from the whole file 13%);
- else, with the probability ``POOL_SHARE`` (per type: how often a real expectation's value
  appears elsewhere in its file, measured by ``bench/mutant_detector.py``), another literal of
  the same file;
- else an edit of the same shape real values have: for a number, another of the same number of
  digits and sign (small numbers likelier: ``NUMBER_PRIOR``); for a string or bytes, one word of
  it replaced by a word of the file's vocabulary of the same length and case (a string made of
  the file's own words); failing all, a character
  edit of the same class (``mutate_literal``, the design before issue 49).

Contracts:
- ``literal_pool(tree, text)`` -> the source text of every one-line constant of the file (a
  negative number with its sign; no bool, None or Ellipsis), in source order.
- ``call_arguments(lines, compared)`` -> the source of each literal argument (positional or
  keyword) of ``compared`` when it is a call, else ``[]``.
- ``replacement(source, rng, pool, args, words, avoid)`` -> another literal of ``source``'s
  type and length (``True`` <-> ``False`` aside), none of ``avoid`` (a redraw's earlier tries), or
  None; ``vocabulary(pool_text)``: the file's words;
  ``mutate_literal(source, rng)``: the character edit (``mutants``' contract).
"""

from __future__ import annotations

import ast
import random
import re
import string
from typing import Any

POOL_SHARE = {str: 0.85, bytes: 0.85, int: 0.85, float: 0.85}
"""How often the replacement is another literal of the file, per type (module docstring)."""
LOCAL_SHARE = 1.0
"""How often it is first drawn from the test function's own literals (module docstring)."""
NUMBER_PRIOR = 1.5
"""A number ``n`` is drawn with the weight ``1 / (|n| + 1) ** NUMBER_PRIOR`` (``_prior``)."""

_WORD = re.compile(r"[A-Za-z]+|[0-9]+")


def _value(source: str) -> Any:
    try:
        return ast.literal_eval(source)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _kind(source: str, value: Any) -> tuple:
    """A literal's type, and for a string its prefix and quotes (``b'...'`` and ``"..."``)."""
    if isinstance(value, (str, bytes)):
        head = re.match(r"[A-Za-z]*('''|\"\"\"|'|\")", source)
        return (type(value), head.group(0).lower() if head else "")
    return (type(value),)


def _segment(lines: list[str], node: ast.AST) -> str | None:
    if getattr(node, "lineno", None) is None or node.lineno != node.end_lineno:
        return None
    raw = lines[node.lineno - 1].encode()
    return raw[node.col_offset:node.end_col_offset].decode(errors="replace")


def _constant(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
        return isinstance(node, ast.Constant) and type(node.value) in (int, float)
    return isinstance(node, ast.Constant) and type(node.value) in (str, bytes, int, float)


def literal_pool(tree: ast.AST, text: str) -> list[str]:
    lines = text.split("\n")
    inner = {id(n.operand) for n in ast.walk(tree) if isinstance(n, ast.UnaryOp)}
    pool = []
    for node in ast.walk(tree):
        if _constant(node) and id(node) not in inner:
            seg = _segment(lines, node)
            if seg is not None and _value(seg) is not None:
                pool.append(seg)
    return pool


def call_arguments(lines: list[str], compared: ast.AST) -> list[str]:
    if not isinstance(compared, ast.Call):
        return []
    found = []
    for node in [*compared.args, *(k.value for k in compared.keywords)]:
        if _constant(node):
            seg = _segment(lines, node)
            if seg is not None:
                found.append(seg)
    return found


def vocabulary(pool_text: str) -> dict[tuple[int, str], list[str]]:
    """The words of a file (letters, or digits), by (length, case shape)."""
    words: dict[tuple[int, str], set[str]] = {}
    for word in _WORD.findall(pool_text):
        words.setdefault((len(word), _case(word)), set()).add(word)
    return {k: sorted(v) for k, v in words.items()}


def _case(word: str) -> str:
    if word.isdigit():
        return "digits"
    if word.islower():
        return "lower"
    if word.isupper():
        return "upper"
    return "title" if word[:1].isupper() and word[1:].islower() else "mixed"


def _prior(value: Any) -> float:
    """How likely a real expectation is this number: 0 and 1 far likelier than 7 (measured on
    the real projects' graded tests, ``bench/mutant_detector.py``: 0 35%, 1 26%, 2 12%, 3 8%)."""
    return 1.0 / (abs(value) + 1) ** NUMBER_PRIOR if type(value) in (int, float) else 1.0


def _choose(drawn: list[str], rng: random.Random) -> str:
    """One of ``drawn`` (repeats count), a number weighted by ``_prior``: the replacement of a 1
    must not be a 2 more often than a real expectation is (the real one is never drawn, so
    without the weight a 0 or a 1 would be rarer among mutants than among real values)."""
    return rng.choices(drawn, [_prior(_value(d)) for d in drawn])[0]


def _same_digits(source: str, value: int, rng: random.Random, forbid: set) -> str | None:
    digits = source.lstrip("-+")
    if not digits.isdigit() or (len(digits) > 1 and digits.startswith("0")):
        return None  # 0x1f, 1_000, 007: left to the character edit
    low = 0 if len(digits) == 1 else 10 ** (len(digits) - 1)
    sign = source[:len(source) - len(digits)]
    span = 10 ** len(digits) - low
    for _ in range(20):  # small values likelier, as in real expectations (1/(rank+1) weights)
        new = (rng.choices(range(10), [_prior(v) for v in range(10)])[0] if low == 0
               else low + min(span - 1, int(span ** rng.random()) - 1))
        candidate = f"{sign}{new}"
        if candidate != source and _value(candidate) not in forbid and _value(candidate) != value:
            return candidate
    return None


def _word_swap(source: str, value: Any, rng: random.Random, words: dict, forbid: set) -> str | None:
    head = re.match(r"[A-Za-z]*('''|\"\"\"|'|\")", source)
    if not isinstance(value, (str, bytes)) or "\\" in source or head is None:
        return None  # a bytes literal too: its words are ASCII, as the vocabulary's are
    body = range(head.end(), len(source) - len(head.group(1)))  # the prefix is no word
    spots = [m for m in _WORD.finditer(source) if m.start() in body and m.end() - 1 in body
             and (len(m.group()), _case(m.group())) in words]
    rng.shuffle(spots)
    for spot in spots:
        others = [w for w in words[(len(spot.group()), _case(spot.group()))] if w != spot.group()]
        if others:
            new = source[:spot.start()] + rng.choice(others) + source[spot.end():]
            if _value(new) not in forbid and type(_value(new)) is type(value) and _value(new) != value:
                return new
    return None


def replacement(source: str, rng: random.Random, pool: list[str], args: list[str],
                words: dict | None = None, avoid: frozenset | set = frozenset(),
                local: list[str] = ()) -> str | None:
    """Module contract (``words``: ``vocabulary`` of the file, made from ``pool`` when None;
    ``avoid``: replacements already tried here and dropped, never returned again: a redraw;
    ``local``: the literals of the test function itself, ``literal_pool(function, text)``)."""
    value = _value(source)
    if value is None or type(value) is bool:
        edited = mutate_literal(source, rng)
        return None if edited in avoid else edited
    kind = _kind(source, value)
    same = [a for a in args if _kind(a, _value(a)) == kind]
    values = [_value(a) for a in same]
    avoided = {_value(a) for a in avoid}
    if value in values:
        alternatives = sorted({a for a in same if _value(a) != value and len(a) == len(source)
                               and _value(a) not in avoided})
        if alternatives:
            return _choose(alternatives, rng)
        forbid = {value, *avoided}
    else:
        forbid = {value, *values, *avoided}
    for share, literals in ((LOCAL_SHARE, local), (POOL_SHARE.get(type(value), 0.0), pool)):
        if rng.random() < share:
            # weighted by how often each appears: a real expectation is often a frequent value
            drawn = sorted(p for p in literals if len(p) == len(source)
                           and _kind(p, _value(p)) == kind and _value(p) not in forbid)
            if drawn:
                return _choose(drawn, rng)
    if type(value) is int:
        shaped = _same_digits(source, value, rng, forbid)
    else:
        shaped = _word_swap(source, value, rng, words if words is not None else vocabulary(
            " ".join(pool)), forbid)
    if shaped is not None:
        return shaped
    for _ in range(8):  # the character edit is random: a redraw may need a few
        edited = mutate_literal(source, rng)
        if edited is not None and _value(edited) not in forbid:
            return edited
    return None


def _next_char(c: str, rng: random.Random) -> str:
    for pool in (string.digits, string.ascii_lowercase, string.ascii_uppercase):
        if c in pool:
            return rng.choice([p for p in pool if p != c])
    return c


def mutate_literal(source: str, rng: random.Random) -> str | None:
    """A different literal of ``source``'s type (same length where possible; see the module
    docstring), checked by evaluating both."""
    try:
        before = ast.literal_eval(source)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if type(before) is bool:
        return str(not before)
    candidates = []
    body_end = len(source)
    if isinstance(before, (str, bytes)):
        quote = source[-1]
        body_end = len(source) - (3 if source.endswith(quote * 3) and len(source) >= 6 else 1)
    for i in range(body_end - 1, -1, -1):
        c = source[i]
        if isinstance(before, (str, bytes)) and i > 0 and source[i - 1] == "\\":
            continue  # part of an escape
        changed = _next_char(c, rng)
        if changed != c:
            candidates.append(source[:i] + changed + source[i + 1:])
        if len(candidates) >= 3:
            break
    if isinstance(before, (str, bytes)) and body_end < len(source):
        candidates.append(source[:body_end] + "q" + source[body_end:])  # '' -> 'q'
    for new in candidates:
        try:
            after = ast.literal_eval(new)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if type(after) is type(before) and after != before:
            return new
    return None
