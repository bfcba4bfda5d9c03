"""Replacement literals drawn from what real expectations look like (issue 49).

A mutant (``mutants``) must be told from the real test by nothing but its value, and its value
must not give it away either (a randomly edited string is a word found nowhere else; a test that
expects one of the call's own arguments is not expecting a random digit). So a replacement keeps
the literal's shape (type and quotes, length, a number's sign) and is drawn:
- where the real value is one of the compared call's literal arguments, another argument of it;
  where it is not, one of them by ``argument_share`` (as often as real expectations are one);
- else from ``distribution``, what a real expectation of that shape is in this file: another
  literal of the test function (``make(5)`` ... ``== 5``), else of the file, each by how often it
  is written, else a fresh value (one digit by ``DIGITS``, more by Benford's law; a string with
  one word swapped for a file word of the same length and case), by the file's own ``shares``
  pulled toward ``SHARES``;
- a number of 2+ digits round (ending in 0) as often as the file's expectations are (``ROUND``,
  ``round_share``), whatever the real value and the file's other literals: roundness first;
- through ``derange``: never the real value itself, yet a frequent value (pytest's 42s) is as
  frequent among mutants as among real expectations;
- failing all, a character edit of the same class (``mutate_literal``).

Contracts: ``literal_pool(tree, text)``: the source of every one-line constant (a negative number
with its sign; no bool, None or Ellipsis), in source order. ``call_arguments(lines, compared)``:
the source of each literal argument of ``compared`` when it is a call, else ``[]``.
``replacement(...)``: another literal of ``source``'s shape (``True`` <-> ``False`` aside), none
of ``avoid``, or None. ``vocabulary``, ``observation`` and ``shares``: a file's words and how it
writes its expectations.
"""

from __future__ import annotations

import ast
import random
import re
import string
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
            if seg is not None and _value(seg[1]) is not None:
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


def _shape(source: str, value: Any) -> tuple:
    """What a replacement keeps: the type (a string's prefix and quotes), the length, a number's
    sign (a ``-1`` is no replacement for a ``42``: real expectations are rarely negative)."""
    return (*_kind(source, value), len(source), source.startswith("-"))


def _others(source: str, shape: tuple, literals) -> Counter:
    """``literals`` of ``shape`` counted by value (keyed by the first text written for it), the
    replaced literal's own occurrence left out once: what a real expectation here repeats."""
    found: Counter = Counter()
    texts: dict = {}
    for p in literals:
        v = _value(p)
        if v is not None and type(v) is not bool and _shape(p, v) == shape:
            found[v] += 1
            texts.setdefault(v, p)
    value = _value(source)
    if found[value] > 0 and source in literals:
        found[value] -= 1
    return Counter({texts[v]: n for v, n in found.items() if n > 0})


def _digits(source: str) -> int | None:
    """How many digits a plain integer literal of 2 digits and more has (``-250``: 3), else None
    (one digit, ``0x1f``, ``1_000``, ``007``, not an integer)."""
    digits = source.lstrip("-+")
    if len(digits) < 2 or not digits.isdigit() or digits.startswith("0"):
        return None
    return len(digits)


def _round(source: str) -> bool:
    """Whether ``source`` is an integer of 2 digits and more that ends in 0."""
    return _digits(source) is not None and source.endswith("0")


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
    value = _value(source)
    if value is None or type(value) is bool:
        return None
    shape = _shape(source, value)
    near, far = _others(source, shape, local), _others(source, shape, pool)
    in_near = any(_value(t) == value for t in near) if near else None
    in_far = None if in_near or not far else any(_value(t) == value for t in far)
    digits = _digits(source) if type(value) is int else None
    kind = _kind(source, value)
    same = [_value(a) for a in args if _kind(a, _value(a)) == kind]
    return Observation(type(value), in_near, in_far,
                       None if digits is None else (digits, _round(source)),
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
    value = _value(source)
    shape = _shape(source, value)
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
    if type(value) is int and _digits(source) is not None:
        masses = _by_roundness(masses, round_share(_digits(source), rates))
    total = sum(masses.values())
    return {k: m / total for k, m in masses.items() if m > 0}


def _by_roundness(masses: dict, share: float) -> dict:
    """``masses`` of a 2+ digit number made round with probability ``share``: ``FRESH``'s mass
    split with ``FRESH_ROUND`` by ``share``, then the round keys scaled to ``share`` in all, the
    others to the rest (each keeping its proportions)."""
    out = dict(masses)
    fresh = out.pop(FRESH, 0.0)
    out[FRESH_ROUND], out[FRESH] = fresh * share, fresh * (1.0 - share)
    is_round = {k: k is FRESH_ROUND or (k is not FRESH and _round(k)) for k in out}
    total = sum(out.values())
    rounded = sum(m for k, m in out.items() if is_round[k]) / total
    if not 0.0 < rounded < 1.0:
        return out  # one class only: nothing to scale toward
    return {k: m / total * (share / rounded if is_round[k] else (1.0 - share) / (1.0 - rounded))
            for k, m in out.items()}


def _one_roundness(masses: dict, own, share: float, rng: random.Random) -> dict:
    """The keys of ``masses`` of one roundness, round with probability ``share`` whatever the real
    value's (else a mutant of pytest's 42s would be as round as the file's literals); all keys
    where that class holds only ``own``, a literal (a fresh key differs from the real one)."""
    want = rng.random() < share
    kept = {k: m for k, m in masses.items()
            if (k is FRESH_ROUND or (k not in FRESHES and _round(k))) == want}
    return kept if any(k != own or k in FRESHES for k in kept) else masses


def derange(masses: dict, own, rng: random.Random):
    """A key of ``masses`` (which holds one) other than ``own``, distributed as ``masses`` where
    ``own`` was drawn from it: a frequent value stays as frequent among mutants ("any other
    value" made it rarer: issue 49's second pass). The keys lie on a circle in random order, each
    an arc its probability long; a point in ``own``'s arc turns by at least the longest arc and at
    most one turn less it, landing elsewhere uniformly. Where one key holds over half the mass: a
    half turn, and landing on ``own``, another key by its mass."""
    keys = sorted(masses, key=lambda k: (k is not None, str(k)))
    rng.shuffle(keys)
    if masses.get(own, 0.0) <= 0.0:
        return rng.choices(keys, [masses[k] for k in keys])[0]
    total, starts, at = sum(masses.values()), {}, 0.0
    for k in keys:
        starts[k] = at
        at += masses[k] / total
    largest = max(masses.values()) / total
    low, high = min(largest, 0.5), max(1.0 - largest, 0.5)
    point = (starts[own] + rng.random() * masses[own] / total
             + low + rng.random() * (high - low)) % 1.0
    chosen = next((k for k in reversed(keys) if starts[k] <= point), keys[0])
    if chosen == own:
        rest = [k for k in keys if k != own]
        return rng.choices(rest, [masses[k] for k in rest])[0]
    return chosen


def _benford(digits: int, rng: random.Random) -> int:
    """A number of ``digits`` digits by Benford's law (a 1xx as likely as a 2xx and a 3xx)."""
    low = 10 ** (digits - 1)
    return min(10 * low - 1, int(low * 10 ** rng.random()))


def _multi_digit(digits: int, round_: bool, rng: random.Random) -> int:
    """A Benford number of ``digits`` (2+) digits ending in 0 where ``round_`` (all zeros but the
    first digit with probability ``WHOLE``), else not."""
    if not round_:
        for _ in range(20):
            new = _benford(digits, rng)
            if new % 10:
                return new
        return new + 1  # ...9 cannot end in 0; a ...0 here becomes ...1
    zeros = digits - 1 if digits == 2 or rng.random() < WHOLE else rng.randint(1, digits - 2)
    for _ in range(20):
        head = _benford(digits - zeros, rng)
        if zeros == digits - 1 or head % 10:
            return head * 10 ** zeros
    return (head + 1) * 10 ** zeros


def _same_digits(source: str, value: int, rng: random.Random, forbid: set,
                 round_: bool = False) -> str | None:
    """A number of ``source``'s sign and digit count: one digit by ``DIGITS``, more by
    ``_multi_digit``."""
    digits = source.lstrip("-+")
    if not digits.isdigit() or (len(digits) > 1 and digits.startswith("0")):
        return None  # 0x1f, 1_000, 007: left to the character edit
    sign = source[:len(source) - len(digits)]
    for _ in range(20):
        new = (rng.choices(range(10), DIGITS)[0] if len(digits) == 1
               else _multi_digit(len(digits), round_, rng))
        candidate = f"{sign}{new}"
        if candidate not in (source, "-0") and _value(candidate) not in forbid:
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


def _fresh(source: str, value: Any, rng: random.Random, pool: list[str], words: dict,
           forbid: set, round_: bool = False) -> str | None:
    """A value of ``source``'s shape written nowhere in the file (``_same_digits``,
    ``_word_swap``), or None: then one of the file's literals, not a character edit (the worst
    tell)."""
    taken = forbid | {value} | {_value(p) for p in pool}
    if type(value) is int:
        return _same_digits(source, value, rng, taken, round_)
    return _word_swap(source, value, rng, words, taken)


def replacement(source: str, rng: random.Random, pool: list[str], args: list[str],
                words: dict | None = None, avoid: frozenset | set = frozenset(),
                local: list[str] = (), rates: dict | None = None) -> str | None:
    """Module contract. ``words``: the file's ``vocabulary`` (None: made from ``pool``);
    ``avoid``: earlier tries of a redraw, never returned again; ``local``: the test function's
    ``literal_pool``; ``rates``: ``shares`` of the file's other tests (None: ``SHARES``)."""
    value = _value(source)
    if value is None or type(value) is bool:
        edited = mutate_literal(source, rng)
        return None if edited in avoid else edited
    kind = _kind(source, value)
    same = [a for a in args if _kind(a, _value(a)) == kind]
    values = [_value(a) for a in same]
    forbid = {_value(a) for a in avoid}
    alternatives = sorted({a for a in same if _value(a) != value and len(a) == len(source)
                           and a.startswith("-") == source.startswith("-")
                           and _value(a) not in forbid})
    if value in values:
        if alternatives:
            return rng.choice(alternatives)
    else:
        if alternatives and rng.random() < argument_share(rates):
            return rng.choice(alternatives)
        forbid |= set(values)
    words = words if words is not None else vocabulary(" ".join(pool))
    masses = distribution(source, pool, local, rates)
    # a real value written nowhere else in the file was a fresh draw: FRESH (or FRESH_ROUND) is
    # its key (a fresh replacement still differs from it)
    own = next((k for k in masses if k not in FRESHES and _value(k) == value),
               FRESH_ROUND if _round(source) else FRESH)
    masses = {k: m for k, m in masses.items()
              if k is own or k in FRESHES or _value(k) not in forbid}
    if type(value) is int and _digits(source) is not None:
        masses = _one_roundness(masses, own, round_share(_digits(source), rates), rng)
    while masses:
        if len(masses) > 1:
            chosen = derange(masses, own, rng)
        elif own not in masses or own in FRESHES:
            chosen = next(iter(masses))
        else:
            break
        drawn = (_fresh(source, value, rng, pool, words, forbid, chosen is FRESH_ROUND)
                 if chosen in FRESHES else chosen)
        if drawn is not None:
            return drawn
        masses.pop(chosen)  # no fresh value of this shape: one of the file's instead
    for _ in range(8):
        edited = mutate_literal(source, rng)
        if edited is not None and _value(edited) not in forbid | {value}:
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
