"""A mutant's replacement literal, drawn as a real expectation is (what real ones look like:
``real_expectations``). A mutant (``mutants``) must be told from the real test by nothing but
its value, and its value must not give it away either (a randomly edited string is a word found
nowhere else; a test that expects one of the call's own arguments is not expecting a random
digit).

``replacement(...)``: another literal of ``source``'s shape (``True`` <-> ``False`` aside, and
``_own_value``'s other length below), none of ``avoid``, or None, drawn:
- where the real value is one of the compared call's literal arguments, another argument of it;
  where it is not, one of them by ``argument_share`` (as often as real expectations are one);
- else from ``distribution``, its roundness first (``round_share``, whatever the real value); a
  fresh value: more digits by Benford's law, a string with one word swapped for a file word of
  the same length and case;
- through ``derange``: never the real value itself, yet a frequent value (pytest's 42s) is as
  frequent among mutants as among real expectations;
- failing all, a character edit of the same class (``mutate_literal``);
- with ``beside`` (the words and the values of the test function's other literals): standing
  where the real value does (``place``'s four parts), drawn again up to ``WORD_REDRAWS`` times
  until a draw keeps all four. Failing that, where the real value is one its test writes whole:
  another value the test writes (``_own_value``) of the same length, else up to ``room``
  characters longer (the file's size then changes: the only other way left is a mutant the rule
  tells), then one word swapped for another the test writes (``_own_word_swap``, where the real
  value's words are all ones it writes); where it is not: that swap, then one of the file's
  values its test does not write where the real value is one of the file's (``_file_value``),
  then a fresh value (``_fresh``), then (no fresh one) a file value its test does not write.
  Whichever keeps the most, in ``_FALLBACK``'s order, the earliest of equals. A mutant holding a
  word its test never writes was a tell (code that forced only the expectations whose words the
  test writes elsewhere resolved real flask ``1ea1efed`` without a fix), and so was one not
  written whole in its test where the real value was (docs/grading.md, Remains), and so was
  HTML a mutant broke where the real value's was well formed (``well_formed``, a sixth part).
Every draw comes from the ``rng`` given, in a fixed order: one seed, the same mutants.
"""

from __future__ import annotations

import ast
import html.entities
import json
import random
import re
import string
from collections import Counter
from typing import Any, Callable

from ratchet_ray.suites.swebench.proof.real_expectations import (
    DIGITS, FRESH, FRESH_ROUND, FRESHES, STRING_HEAD, WHOLE, WORD, argument_share, digit_count,
    distribution, is_round, literal_kind, literal_shape, literal_value, round_share, vocabulary,
    word_case)


def _one_roundness(masses: dict, own, share: float, rng: random.Random) -> dict:
    """The keys of ``masses`` of one roundness, round with probability ``share`` whatever the real
    value's (else a mutant of pytest's 42s would be as round as the file's literals); all keys
    where that class holds only ``own``, a literal (a fresh key differs from the real one)."""
    want = rng.random() < share
    kept = {k: m for k, m in masses.items()
            if (k is FRESH_ROUND or (k not in FRESHES and is_round(k))) == want}
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
        if candidate not in (source, "-0") and literal_value(candidate) not in forbid:
            return candidate
    return None


def _word_swap(source: str, value: Any, rng: random.Random,
               pool_of: Callable[[str], list[str] | None], forbid: set,
               pattern: re.Pattern = WORD) -> str | None:
    """``source`` with one of its ``pattern`` words (a spot whose ``pool_of`` is not None, in a
    random order) swapped for another of that pool, none of ``forbid``; None where none is."""
    head = STRING_HEAD.match(source)
    if not isinstance(value, (str, bytes)) or "\\" in source or head is None:
        return None  # a bytes literal too: its words are ASCII, as the vocabulary's are
    body = range(head.end(), len(source) - len(head.group(1)))  # the prefix is no word
    spots = [m for m in pattern.finditer(source) if m.start() in body and m.end() - 1 in body
             and pool_of(m.group()) is not None]
    rng.shuffle(spots)
    for spot in spots:
        word = spot.group()
        others = [w for w in pool_of(word) or () if w != word]
        if others:
            new = source[:spot.start()] + rng.choice(others) + source[spot.end():]
            swapped = literal_value(new)
            if swapped not in forbid and type(swapped) is type(value) and swapped != value:
                return new
    return None


def _fresh(source: str, value: Any, rng: random.Random, pool: list[str], words: dict,
           forbid: set, round_: bool = False) -> str | None:
    """A value of ``source``'s shape written nowhere in the file (``_same_digits``,
    ``_word_swap``), or None: then one of the file's literals, not a character edit (the worst
    tell)."""
    taken = forbid | {value} | {literal_value(p) for p in pool}
    if type(value) is int:
        return _same_digits(source, value, rng, taken, round_)
    return _word_swap(source, value, rng, lambda w: words.get((len(w), word_case(w))),
                      taken)


WORD_REDRAWS = 8
"""Draws beyond the first for a mutant that stands where the real value does (module contract)."""
_FALLBACK = (0, 5, 4, 1, 2, 3)
"""The parts of ``place`` a mutant keeps, most telling first: where no draw keeps all, the one
that keeps its test's whole values, then whether it is well formed (``well_formed``), then its
test's numbers written in its strings (``in_strings``), then its test's words, then its file's
values, then whether it is an identifier."""
TEST_WORD = re.compile(r"\w+")
"""A word as a reader of a test's literals splits them (``app_1`` is one)."""


def as_text(value: Any) -> Any:
    """A bytes value read as Latin-1 (each byte one character); any other value as it is."""
    return value.decode("latin-1") if isinstance(value, bytes) else value


def words_of(value: Any) -> set[str]:
    """The ``TEST_WORD`` words of a string or bytes value (``as_text``); none of any other."""
    value = as_text(value)
    return set(TEST_WORD.findall(value)) if isinstance(value, str) else set()


def written_in(value: Any, test_words: set[str]) -> bool:
    """Whether every word of ``value`` is one of ``test_words``."""
    return words_of(value) <= test_words


def value_key(value: Any) -> Any:
    """What two literals written as the same value share (``as_text``; a number without its
    sign: a mutant's text has none where its expectation is ``-3``), or None for a bool, None or
    any other value (a bool's mutant is its opposite, whatever else)."""
    if isinstance(value, (str, bytes)):
        return as_text(value)
    return abs(value) if type(value) in (int, float) else None


def place(value: Any, test_words: set[str], test_values: set, file_counts: Counter,
          own: int = 0) -> tuple[bool, bool, bool, bool, bool, bool]:
    """Where a test's expected ``value`` stands among its literals, as a reader of the test
    file sees it: ``(written whole elsewhere in its test, its words all ones its test writes
    elsewhere, written whole elsewhere in its file, an identifier, in_strings, well_formed)``;
    ``file_counts``: the file's literals by ``value_key``, ``own`` of them the value's own
    occurrence (the real one's: 1)."""
    key = value_key(value)
    return (key in test_values, written_in(value, test_words),
            key is not None and file_counts[key] - own > 0, _identifier(value),
            in_strings(value, test_words), well_formed(value))


_ENTITY = re.compile(r"&(#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)[^<>]*?(/?)>")
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
         "track", "wbr"}
_PAIRS = {")": "(", "]": "[", "}": "{"}


def well_formed(value: Any) -> bool:
    """Whether a string or bytes value (``as_text``) is well formed for the syntax it shows: each
    ``&name;`` a known HTML entity (or a numeric one), its tags closed in the order they open
    (void elements aside), its brackets balanced, and where it is a JSON object or array, or a
    number, one that parses. A value that shows none holds trivially, as does any other type.
    A mutant of django's ``test_urlize`` table (HTML links) broke its HTML in 18% of draws
    (``<a href=...>`` -> ``<1 href=...>``, ``</a>`` -> ``</q>``), every real output being
    well formed: code that forced only the well-formed expectations passed the real session and
    failed those canary sessions honestly (docs/grading.md, Remains)."""
    text = as_text(value)
    if not isinstance(text, str):
        return True
    if any(not m.group(1).startswith("#") and m.group(1) + ";" not in html.entities.html5
           for m in _ENTITY.finditer(text)):
        return False
    tags: list[str] = []
    for m in _TAG.finditer(text):
        closing, name, empty = m.group(1), m.group(2).lower(), m.group(3)
        if closing:
            if not tags or tags.pop() != name:
                return False
        elif not empty and name not in _VOID:
            tags.append(name)
    if tags and text.lstrip().startswith("<") and text.rstrip().endswith(">"):
        return False  # a whole fragment leaves a tag open
    brackets: list[str] = []
    for ch in text:
        if ch in "([{":
            brackets.append(ch)
        elif ch in _PAIRS and (not brackets or brackets.pop() != _PAIRS[ch]):
            return False
    if brackets:
        return False
    stripped = text.strip()
    if stripped[:1] in ("[", "{") and stripped[-1:] in ("]", "}"):
        try:
            json.loads(stripped)
        except ValueError:
            try:
                ast.literal_eval(stripped)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                return False
    if re.fullmatch(r"[-+]?[0-9][0-9_.,eE+-]*", stripped):
        try:
            float(stripped.replace("_", "").replace(",", ""))
        except ValueError:
            return False
    return True


def _numbers(test_words: set[str]) -> set[str]:
    """The numbers among ``test_words``, without leading zeros (``08`` is ``8``)."""
    return {w.lstrip("0") or "0" for w in test_words if w.isdigit()}


def in_strings(value: Any, test_words: set[str]) -> bool:
    """Whether the integer ``value`` is a number its test writes in a string: its digits that
    number, or ending in one of two digits or more (``2037`` beside ``"... 0037"``, ``1994``
    beside ``"06-Nov-94"``)."""
    if type(value) is not int:
        return False
    digits = str(abs(value))
    return any(digits == n or (len(n) >= 2 and digits.endswith(n)) for n in _numbers(test_words))


def keeps_what_its_input_writes(old: str, new: str, beside: tuple[set[str], set]) -> bool:
    """Whether ``new``, a mutant of the integer ``old``, is a number its test writes in a string
    (``in_strings``) as ``old`` is, and written whole elsewhere in its test exactly where
    ``old`` is. A test that parses a date expects numbers its input writes (``datetime(1994,
    11, 6, 8, 49, 37)`` beside ``"Sun, 06 Nov 1994 08:49:37 GMT"``): a mutant holding one the
    input does not write was told by that alone (real django 4.2.16 ``3326e32f`` resolved
    without a fix, 2026-12-07), and one its test writes whole elsewhere by the older rule
    (docs/grading.md, Remains); ``mutants`` then looks for a literal of the check whose mutant
    keeps both (the year, where the seconds have none)."""
    words, values = beside
    real, drawn = literal_value(old), literal_value(new)
    return (in_strings(real, words) and in_strings(drawn, words)
            and (value_key(real) in values) == (value_key(drawn) in values))


def _identifier(value: Any) -> bool:
    """Whether a string or bytes value (``as_text``) is an identifier (``index``, not ``/a``)."""
    return isinstance(as_text(value), str) and as_text(value).isidentifier()


def replacement(source: str, rng: random.Random, pool: list[str], args: list[str],
                words: dict | None = None, avoid: frozenset | set = frozenset(),
                local: list[str] = (), rates: dict | None = None,
                beside: tuple[set[str], set] | None = None, room: int = 0) -> str | None:
    """Module contract. ``pool``: the file's literals (the real one among them); ``words``: the
    file's ``vocabulary`` (None: made from ``pool``); ``avoid``: earlier tries of a redraw, never
    returned again; ``local``: the test function's ``literal_pool``; ``rates``: ``shares`` of
    the file's other tests (None: ``SHARES``); ``beside``: the words and the values
    (``value_key``) of the test function's other literals; ``room``: how many characters longer
    than ``source`` a value its test writes whole may be (its line then no longer than the
    file's longest)."""
    first = _replacement(source, rng, pool, args, words, avoid, local, rates)
    value = literal_value(source)
    if first is None or beside is None or value_key(value) is None:
        return first
    test_words, test_values = beside
    counts = Counter(value_key(literal_value(p)) for p in pool)
    want = place(value, test_words, test_values, counts, own=1)

    def score(drawn: str | None) -> tuple[bool, ...]:
        """Which of ``want`` a draw keeps, most telling first: its test's whole values, then its
        test's words, then its file's whole values (``_FALLBACK``)."""
        if drawn is None:
            return (False,) * len(_FALLBACK)
        got = place(literal_value(drawn), test_words, test_values, counts)
        return tuple(got[i] == want[i] for i in _FALLBACK)

    best, drawn = first, first
    for _ in range(WORD_REDRAWS):
        if all(score(best)):
            return best
        drawn = _replacement(source, rng, pool, args, words, avoid, local, rates)
        best = drawn if score(drawn) > score(best) else best
    if all(score(best)):
        return best
    forbid = {literal_value(a) for a in avoid} | {literal_value(a) for a in args}
    vocab = words if words is not None else vocabulary(" ".join(pool))
    makers = ([lambda: _own_value(source, rng, test_values, forbid),
               lambda: _own_value(source, rng, test_values, forbid, room)] if want[0]
              else ([lambda: _file_value(source, rng, pool, test_values, forbid)] if want[2]
                    else []) + [lambda: _fresh(source, value, rng, pool, vocab, forbid)] * WORD_REDRAWS
              # no fresh value (no file word of its length and case): one of the file's, which
              # at least its test does not write
              + ([] if want[2] else [lambda: _file_value(source, rng, pool, test_values, forbid)]))
    if want[1]:
        makers.insert(len(makers) if want[0] else 0,
                      lambda: _own_word_swap(source, rng, test_words, forbid))
    if want[4]:
        makers.insert(2 if want[0] else 0, lambda: _own_number(source, rng, test_words, forbid))
    for make in makers:
        if all(score(best)):
            break
        made = make()
        best = made if score(made) > score(best) else best
    return best


def _own_value(source: str, rng: random.Random, test_values: set, forbid: set,
               room: int | None = None) -> str | None:
    """``source`` holding another string its test writes whole, written with no escape, or
    another integer it writes (``source``'s sign kept), none of ``forbid``: of ``source``'s
    length, or with ``room``, of any other length up to ``room`` characters longer; None where
    there is none."""
    head, value = STRING_HEAD.match(source), literal_value(source)

    def fits(new: str) -> bool:
        return (len(new) == len(source) if room is None
                else len(new) != len(source) and len(new) <= len(source) + room)

    if type(value) is int and source.lstrip("-").isdigit():
        sign = source[:len(source) - len(source.lstrip("-"))]
        numbers = sorted(f"{sign}{t}" for t in test_values if type(t) is int
                         and fits(f"{sign}{t}") and int(f"{sign}{t}") != value
                         and int(f"{sign}{t}") not in forbid)
        return rng.choice(numbers) if numbers else None
    if not isinstance(value, (str, bytes)) or head is None:
        return None
    opening, closing = source[:head.end()], head.group(1)
    options = sorted(t for t in test_values if isinstance(t, str) and t != as_text(value)
                     and fits(opening + t + closing)
                     and not set(t) & {"\\", "\n", "\r", closing[0]})
    rng.shuffle(options)
    # an identifier for an identifier first (``index`` is no mutant of ``/``, nor ``/a`` of ``a``)
    options.sort(key=lambda t: t.isidentifier() != _identifier(value))
    for text in options:
        new = opening + text + closing
        other = literal_value(new)
        if type(other) is type(value) and other != value and other not in forbid:
            return new
    return None


def _own_number(source: str, rng: random.Random, test_words: set[str],
                forbid: set) -> str | None:
    """``source`` (an integer) as another number its test writes in a string (``in_strings``),
    of ``source``'s length: that number, or ``source``'s leading digits ending in one of two
    digits or more; None where there is none."""
    if type(literal_value(source)) is not int or not source.lstrip("-").isdigit():
        return None
    sign, digits = source[:len(source) - len(source.lstrip("-"))], source.lstrip("-")
    options = sorted({sign + digits[:len(digits) - len(n)] + n for n in _numbers(test_words)
                      if len(n) == len(digits) or 2 <= len(n) < len(digits)})
    options = [o for o in options if not (len(o.lstrip("-")) > 1 and o.lstrip("-")[0] == "0")
               and int(o) != literal_value(source) and int(o) not in forbid]
    return rng.choice(options) if options else None


def _file_value(source: str, rng: random.Random, pool: list[str], test_values: set,
                forbid: set) -> str | None:
    """One of the file's literals of ``source``'s kind and length (a number's sign too) that
    its test writes nowhere else (``test_values``), none of ``forbid``; None where none is."""
    value = literal_value(source)
    shape = literal_shape(source, value)
    options = sorted({p for p in pool if literal_shape(p, literal_value(p)) == shape
                      and value_key(literal_value(p)) not in test_values | {value_key(value)}
                      and literal_value(p) not in forbid})
    return rng.choice(options) if options else None


def _own_word_swap(source: str, rng: random.Random, test_words: set[str],
                   forbid: set) -> str | None:
    """``_word_swap`` of one ``TEST_WORD`` for another its test writes, of the same length (its
    case as the test writes it: ``Parent`` -> ``parent``)."""
    return _word_swap(source, literal_value(source), rng, lambda word: sorted(
        w for w in test_words if len(w) == len(word) and w.isascii() == word.isascii()),
        forbid, TEST_WORD)


def _replacement(source: str, rng: random.Random, pool: list[str], args: list[str],
                 words: dict | None, avoid: frozenset | set, local: list[str],
                 rates: dict | None) -> str | None:
    """One draw of ``replacement`` (module contract), the words rule aside."""
    value = literal_value(source)
    if value is None or type(value) is bool:
        edited = mutate_literal(source, rng)
        return None if edited in avoid else edited
    kind = literal_kind(source, value)
    same = [a for a in args if literal_kind(a, literal_value(a)) == kind]
    values = [literal_value(a) for a in same]
    forbid = {literal_value(a) for a in avoid}
    alternatives = sorted({a for a in same if literal_value(a) != value and len(a) == len(source)
                           and a.startswith("-") == source.startswith("-")
                           and literal_value(a) not in forbid})
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
    own = next((k for k in masses if k not in FRESHES and literal_value(k) == value),
               FRESH_ROUND if is_round(source) else FRESH)
    masses = {k: m for k, m in masses.items()
              if k is own or k in FRESHES or literal_value(k) not in forbid}
    if type(value) is int and digit_count(source) is not None:
        masses = _one_roundness(masses, own, round_share(digit_count(source), rates), rng)
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
        if edited is not None and literal_value(edited) not in forbid | {value}:
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
    before = literal_value(source)  # None (no literal, or ``None``) has no other value
    if before is None:
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
        after = literal_value(new)  # None (no literal) is no other value of ``before``'s type
        if type(after) is type(before) and after != before:
            return new
    return None
