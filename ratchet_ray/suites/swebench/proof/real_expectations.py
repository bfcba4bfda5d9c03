"""What real expectations look like (issue 49): how a test file writes the values its tests
expect, measured so that a mutant's value (``replacement_literal``) is drawn as a real one is.

Contracts: ``literal_pool(tree, text)``: the source of every one-line constant (a negative number
with its sign; no bool, None or Ellipsis), in source order. ``call_arguments(lines, compared)``:
the source of each literal argument of ``compared`` when it is a call, else ``[]``.
``vocabulary``, ``observation`` and ``shares``: a file's words and how it writes its
expectations, each rate pulled toward a measured prior (the constants below, from 600 packages'
test files: ``bench/mutant_detector.py``). ``distribution``: what a real expectation of a
literal's shape (type and quotes, length, a number's sign) is in this file: another literal of
the test function (``make(5)`` ... ``== 5``), else of the file, each by how often it is written,
else a fresh value (one digit by ``DIGITS``); a number of 2+ digits round (ending in 0) as often
as the file's expectations are (``round_share``), whatever its other literals.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from typing import Any, NamedTuple

SHARES = {int: (0.77, 0.87), float: (0.60, 0.59), str: (0.95, 0.85), bytes: (0.95, 0.85)}
"""Per type, the prior of ``shares``: how often a real expectation is another literal of its test
function (its own occurrence aside), and if not, of its file. Numbers: measured on 600 packages'
test files (``bench/mutant_detector.py``). Strings and bytes measure 0.66/0.26 and 0.40/0.20
there, but files that repeat strings (flask's) then tell a mutant by a string found nowhere; the
higher prior scored best on the real projects (no held-out measure: docs/benchmarks.md)."""
ROUND = {2: 0.33, 3: 0.52}
"""How often a real integer expectation of n (2+) digits ends in 0; ``ROUND_MORE`` from 4 digits
on (the same 600 files: 30 of 90, 17 of 33, 11 of 22). A file's literals are no measure of it
(pytest's: 30 of 67 two-digit numbers round, its expectations 1 of 16)."""
ROUND_MORE = 0.5
WHOLE = 0.6
"""How often a round number's zeros are all but its first digit (100, not 250): the same files,
0.53 to 0.8 by number of digits."""
ARGUMENT = 0.32
"""How often a real expectation is one of the compared call's literal arguments, where the call
has one of its type (the same 600 files: 55 of 173; sympy's graded files: 12 of 43)."""
ARGUMENT_OTHER = 0.22
"""Of those, how often the call has another argument of its type and length (12 of 55): only
then can the mutant be an argument too; ``ARGUMENT_ELIGIBLE``: how often a call has an argument
of the type and length of an expectation that is none of its arguments (75 of 118)."""
ARGUMENT_ELIGIBLE = 0.64
DIGITS = (0.306, 0.295, 0.171, 0.084, 0.048, 0.033, 0.024, 0.014, 0.013, 0.012)
"""How often a one-digit real expectation is 0, 1, ..., 9 (the same 600 files)."""
PRIOR_WEIGHT = 8
"""How many observations ``SHARES`` counts as, against a file's own (``shares``)."""
FRESH = None
"""``distribution``'s key for a value written nowhere else in the file (2+ digits: not round)."""
FRESH_ROUND = "<fresh round>"
"""``distribution``'s key for a round number (2+ digits) written nowhere else in the file."""
FRESHES = (FRESH, FRESH_ROUND)

WORD = re.compile(r"[A-Za-z]+|[0-9]+")
STRING_HEAD = re.compile(r"[A-Za-z]*('''|\"\"\"|'|\")")
"""A string literal's prefix and opening quotes (group 1: the quotes)."""


def literal_value(source: str) -> Any:
    """The value of a literal's source, or None where it is no literal."""
    try:
        return ast.literal_eval(source)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def literal_kind(source: str, value: Any) -> tuple:
    """A literal's type, and for a string its prefix and quotes (``b'...'`` and ``"..."``)."""
    if isinstance(value, (str, bytes)):
        head = STRING_HEAD.match(source)
        return (type(value), head.group(0).lower() if head else "")
    return (type(value),)


def segment(lines: list[str], node: ast.AST) -> tuple[int, str] | None:
    """``(character column, text)`` of a one-line node (``ast`` offsets are UTF-8 bytes)."""
    if getattr(node, "lineno", None) is None or node.lineno != node.end_lineno:
        return None
    raw = lines[node.lineno - 1].encode()
    col = len(raw[:node.col_offset].decode(errors="replace"))
    return col, raw[node.col_offset:node.end_col_offset].decode(errors="replace")


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
            seg = segment(lines, node)
            if seg is not None and literal_value(seg[1]) is not None:
                pool.append(seg[1])
    return pool


def call_arguments(lines: list[str], compared: ast.AST) -> list[str]:
    if not isinstance(compared, ast.Call):
        return []
    nodes = [*compared.args, *(k.value for k in compared.keywords)]
    found = [segment(lines, node) for node in nodes if _constant(node)]
    return [seg[1] for seg in found if seg is not None]


def vocabulary(pool_text: str) -> dict[tuple[int, str], list[str]]:
    """The words of a file (letters, or digits), by (length, case shape)."""
    words: dict[tuple[int, str], set[str]] = {}
    for word in WORD.findall(pool_text):
        words.setdefault((len(word), word_case(word)), set()).add(word)
    return {k: sorted(v) for k, v in words.items()}


def word_case(word: str) -> str:
    if word.isdigit():
        return "digits"
    if word.islower():
        return "lower"
    if word.isupper():
        return "upper"
    return "title" if word[:1].isupper() and word[1:].islower() else "mixed"


def literal_shape(source: str, value: Any) -> tuple:
    """What a replacement keeps: the type (a string's prefix and quotes), the length, a number's
    sign (a ``-1`` is no replacement for a ``42``: real expectations are rarely negative)."""
    return (*literal_kind(source, value), len(source), source.startswith("-"))


def _others(source: str, shape: tuple, literals) -> Counter:
    """``literals`` of ``shape`` counted by value (keyed by the first text written for it), the
    replaced literal's own occurrence left out once: what a real expectation here repeats."""
    found: Counter = Counter()
    texts: dict = {}
    for p in literals:
        v = literal_value(p)
        if v is not None and type(v) is not bool and literal_shape(p, v) == shape:
            found[v] += 1
            texts.setdefault(v, p)
    value = literal_value(source)
    if found[value] > 0 and source in literals:
        found[value] -= 1
    return Counter({texts[v]: n for v, n in found.items() if n > 0})


def digit_count(source: str) -> int | None:
    """How many digits a plain integer literal of 2 digits and more has (``-250``: 3), else None
    (one digit, ``0x1f``, ``1_000``, ``007``, not an integer)."""
    digits = source.lstrip("-+")
    if len(digits) < 2 or not digits.isdigit() or digits.startswith("0"):
        return None
    return len(digits)


def is_round(source: str) -> bool:
    """Whether ``source`` is an integer of 2 digits and more that ends in 0."""
    return digit_count(source) is not None and source.endswith("0")


class Observation(NamedTuple):
    """How one real expectation was written (``observation``)."""

    kind: type
    in_function: bool | None
    """Its value is another literal of its test function of its shape (None: it has none)."""
    in_file: bool | None
    """If not, another of its file (None: it is, or the file has none)."""
    roundness: tuple[int, bool] | None
    """For an integer of 2 digits and more, ``(digits, ends in 0)``; else None."""
    argument: bool | None
    """It is one of the compared call's literal arguments (None: the call has none of its type)."""


def observation(source: str, pool: list[str], local=(), args=()) -> Observation | None:
    """How the real expectation ``source`` was written, against its test function's literals
    ``local``, the file's ``pool`` and its call's ``args``; None for a bool or no literal."""
    value = literal_value(source)
    if value is None or type(value) is bool:
        return None
    shape = literal_shape(source, value)
    near, far = _others(source, shape, local), _others(source, shape, pool)
    in_near = any(literal_value(t) == value for t in near) if near else None
    in_far = None if in_near or not far else any(literal_value(t) == value for t in far)
    digits = digit_count(source) if type(value) is int else None
    kind = literal_kind(source, value)
    same = [literal_value(a) for a in args if literal_kind(a, literal_value(a)) == kind]
    return Observation(type(value), in_near, in_far,
                       None if digits is None else (digits, is_round(source)),
                       value in same if same else None)


def _pulled(seen: list[bool], prior: float) -> float:
    """The rate of ``seen`` pulled toward ``prior`` by ``PRIOR_WEIGHT`` pseudo-observations."""
    return (sum(seen) + PRIOR_WEIGHT * prior) / (len(seen) + PRIOR_WEIGHT)


def shares(observations) -> dict:
    """How this file writes its other expectations (``observation`` of each), each rate pulled
    toward its prior (``_pulled``): per type, ``SHARES``'s pair; ``"round"``: ``{digits: share
    ending in 0}`` (toward ``ROUND``); ``"argument"``: share that is a call argument (toward
    ``ARGUMENT``)."""
    found = [o for o in observations if o is not None]
    out: dict = {}
    for kind, (function_prior, file_prior) in SHARES.items():
        ours = [o for o in found if o.kind is kind]
        out[kind] = (_pulled([o.in_function for o in ours if o.in_function is not None],
                             function_prior),
                     _pulled([o.in_file for o in ours if o.in_file is not None], file_prior))
    rounds: dict[int, list[bool]] = {}
    for o in found:
        if o.roundness is not None:
            rounds.setdefault(o.roundness[0], []).append(o.roundness[1])
    out["round"] = {n: _pulled(seen, ROUND.get(n, ROUND_MORE)) for n, seen in rounds.items()}
    out["argument"] = _pulled([o.argument for o in found if o.argument is not None], ARGUMENT)
    return out


def argument_share(rates: dict | None = None) -> float:
    """How often a mutant is a call argument where the real value is none (one of its type and
    length being there), so that mutants are arguments as often as real expectations are
    (``rates["argument"]`` or ``ARGUMENT``), making up for those with no other to take
    (``ARGUMENT_OTHER``)."""
    real = (rates or {}).get("argument", ARGUMENT)
    return min(1.0, real * (1.0 - ARGUMENT_OTHER) / max(1e-9, (1.0 - real) * ARGUMENT_ELIGIBLE))


def round_share(digits: int, rates: dict | None = None) -> float:
    """How often an integer expectation of ``digits`` digits ends in 0: ``rates["round"]``
    (``shares``) where the file has such expectations, else ``ROUND``."""
    return (rates or {}).get("round", {}).get(digits, ROUND.get(digits, ROUND_MORE))


def distribution(source: str, pool: list[str], local=(),
                 rates: dict | None = None) -> dict[str | None, float]:
    """``{literal or FRESH: probability}`` of a real expectation of ``source``'s shape in this
    file (module docstring); ``rates``: the file's ``shares`` (None: ``SHARES``)."""
    value = literal_value(source)
    shape = literal_shape(source, value)
    share_local, share_file = (rates or SHARES).get(type(value), (0.0, 0.0))
    masses: dict[str | None, float] = {}
    left = 1.0
    for share, found in ((share_local, _others(source, shape, local)),
                         (share_file, _others(source, shape, pool))):
        if found:
            mass, total = left * share, sum(found.values())
            for text, count in found.items():
                masses[text] = masses.get(text, 0.0) + mass * count / total
            left -= mass
    digits = source.lstrip("-")
    if type(value) is int and len(digits) == 1 and digits.isdigit():
        sign = source[:-1]
        for d, weight in enumerate(DIGITS):
            if not (sign and d == 0):  # no test writes -0
                masses[f"{sign}{d}"] = masses.get(f"{sign}{d}", 0.0) + left * weight
    else:
        masses[FRESH] = left
    if type(value) is int and digit_count(source) is not None:
        masses = _by_roundness(masses, round_share(digit_count(source), rates))
    total = sum(masses.values())
    return {k: m / total for k, m in masses.items() if m > 0}


def _by_roundness(masses: dict, share: float) -> dict:
    """``masses`` of a 2+ digit number made round with probability ``share``: ``FRESH``'s mass
    split with ``FRESH_ROUND`` by ``share``, then the round keys scaled to ``share`` in all, the
    others to the rest (each keeping its proportions)."""
    out = dict(masses)
    fresh = out.pop(FRESH, 0.0)
    out[FRESH_ROUND], out[FRESH] = fresh * share, fresh * (1.0 - share)
    rounded_key = {k: k is FRESH_ROUND or (k is not FRESH and is_round(k)) for k in out}
    total = sum(out.values())
    rounded = sum(m for k, m in out.items() if rounded_key[k]) / total
    if not 0.0 < rounded < 1.0:
        return out  # one class only: nothing to scale toward
    return {k: m / total * (share / rounded if rounded_key[k] else (1.0 - share) / (1.0 - rounded))
            for k, m in out.items()}
