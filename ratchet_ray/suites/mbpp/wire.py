"""Data-only encoding of a solution's return values, from the sandbox to the trusted grader.

Standard library only: the sandboxed runner loads this file by location. Contracts:

- ``encode(value, max_nodes, max_depth) -> str``: a JSON text describing ``value`` exactly
  enough for evalplus's comparison rules. Types are taken with ``type(x) is ...`` (never
  ``isinstance`` or a method the object could override), so ``int``/``bool``/``float`` (NaN,
  inf), ``list``/``tuple``, ``set``/``frozenset``, ``dict``, ``str``/``bytes``, ``complex``,
  ``None`` and the ``collections`` containers the reference solutions return keep their
  identity. Anything else (a subclass of a builtin, a user class...) becomes ``["?", type
  name]``, decoded to ``Opaque``, which equals nothing: a wrong answer (except where evalplus
  only asks "is it not None"). ``Unencodable`` past ``max_nodes`` values or ``max_depth``
  nesting (cycles included).
- ``decode(text, max_depth, max_values=None) -> value``: the inverse, in the grader. It builds
  only plain builtin values and ``Opaque``, never importing, calling or instantiating anything
  the input names, so a forged text can at worst describe some plain value. ``WireError`` for
  malformed input and, before anything is built, for a text that is not ASCII (``encode`` writes
  ASCII only) or would build more than ``max_values`` values (nested empty lists build tens of
  bytes per byte).
- ``too_many_values(text, limit)``: whether ``json.loads(text)`` would build more than ``limit``
  values, counted from the commas, colons and opening brackets outside strings, without copying
  ``text`` and stopping past ``limit``.

Layout: JSON null/true/false/strings are themselves; JSON numbers are ints (no fraction or
exponent) or floats (``repr`` form, ``NaN``/``Infinity`` included); big ints are ``["i", hex]``;
every container is a JSON array whose first element is a one-letter tag.
"""

from __future__ import annotations

import collections
import json
import re

SMALL_INT = 1 << 62
_INT, _FLOAT, _STR, _BOOL, _NONE = int, float, str, bool, type(None)
_LIST, _TUPLE, _SET, _FROZENSET, _DICT = list, tuple, set, frozenset, dict
_BYTES, _BYTEARRAY, _COMPLEX = bytes, bytearray, complex
_COUNTER, _ORDERED = collections.Counter, collections.OrderedDict
_DEFAULTDICT, _DEQUE = collections.defaultdict, collections.deque
_SEQUENCE_TAGS = {_LIST: "l", _TUPLE: "t", _SET: "s", _FROZENSET: "f", _DEQUE: "q"}
_MAPPING_TAGS = {_DICT: "d", _COUNTER: "C", _ORDERED: "O", _DEFAULTDICT: "D"}
# Unbound C methods, captured at import (before any untrusted code exists in the process).
_dict_items = dict.items
_list_iter, _tuple_iter = list.__iter__, tuple.__iter__
_set_iter, _frozenset_iter = set.__iter__, frozenset.__iter__
_deque_iter = collections.deque.__iter__
_ITERS = {_LIST: _list_iter, _TUPLE: _tuple_iter, _SET: _set_iter, _FROZENSET: _frozenset_iter,
          _DEQUE: _deque_iter}
_int_hex = int.__format__


class Unencodable(ValueError):
    """The value is too big or too deep to send; the grade is a wrong answer."""


class WireError(ValueError):
    """The text is not a valid encoding (forged or corrupted); the grade is a wrong answer."""


class Opaque:
    """Stands for a returned object the wire cannot carry; equal to nothing but itself."""

    __slots__ = ("type_name",)

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<unencodable {self.type_name}>"


def _type_name(kind) -> str:
    try:
        name = type.__getattribute__(kind, "__qualname__")
        module = type.__getattribute__(kind, "__module__")
    except Exception:  # a hostile metaclass; the name is only for the trace
        return "object"
    return f"{module}.{name}"[:80] if type(name) is str and type(module) is str else "object"


def encode(value, max_nodes: int = 5_000_000, max_depth: int = 100) -> str:
    budget = [max_nodes]

    def walk(x, depth):
        budget[0] -= 1
        if budget[0] < 0:
            raise Unencodable(f"more than {max_nodes} values")
        kind = type(x)
        if kind is _STR or kind is _BOOL or kind is _NONE:
            return x
        if kind is _INT:
            return x if -SMALL_INT < x < SMALL_INT else ["i", _int_hex(x, "x")]
        if kind is _FLOAT:
            return x
        if depth >= max_depth:
            raise Unencodable(f"nested deeper than {max_depth}")
        tag = _SEQUENCE_TAGS.get(kind)
        if tag is not None:
            out = [tag]
            for item in _ITERS[kind](x):
                out.append(walk(item, depth + 1))
            return out
        tag = _MAPPING_TAGS.get(kind)
        if tag is not None:
            out = [tag]
            for key, item in _dict_items(x):
                out.append(walk(key, depth + 1))
                out.append(walk(item, depth + 1))
            return out
        if kind is _BYTES or kind is _BYTEARRAY:
            budget[0] -= len(x) // 64
            return ["b" if kind is _BYTES else "B", _BYTES(x).decode("latin-1")]
        if kind is _COMPLEX:
            return ["c", complex.real.__get__(x), complex.imag.__get__(x)]
        return ["?", _type_name(kind)]

    try:
        return json.dumps(walk(value, 0), separators=(",", ":"))
    except RecursionError as exc:
        raise Unencodable("nested too deeply") from exc


_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"')


def _structure(text: str, start: int = 0, end: int | None = None) -> int:
    end = len(text) if end is None else end
    return sum(text.count(mark, start, end) for mark in ",:[{")


def too_many_values(text: str, limit: int) -> bool:
    """Whether ``json.loads(text)`` would build more than ``limit`` values (module contract)."""
    if _structure(text) + 1 <= limit:  # marks inside strings counted too: a cheap upper bound
        return False
    count, position = 1, 0
    for string in _JSON_STRING.finditer(text):
        count += _structure(text, position, string.start())
        if count > limit:
            return True
        position = string.end()
    return count + _structure(text, position) > limit


def decode(text: str | bytes, max_depth: int = 100, max_values: int | None = None):
    if type(text) is not str:
        text = bytes(text).decode("ascii", errors="replace")
    if not text.isascii():
        raise WireError("not a valid encoding: a character outside ASCII (encode writes ASCII)")
    if max_values is not None and too_many_values(text, max_values):
        raise WireError(f"not a valid encoding: more than {max_values} values")
    try:
        tree = json.loads(text, parse_constant=float)
    except (ValueError, RecursionError) as exc:
        raise WireError(f"not a valid encoding: {str(exc)[:100]}") from exc
    return _build(tree, 0, max_depth)


def _build(node, depth: int, max_depth: int):
    kind = type(node)
    if kind is not list:
        return node  # str, int, float, bool, None: json.loads makes nothing else
    if depth >= max_depth or not node or type(node[0]) is not str:
        raise WireError("bad container")
    tag, items = node[0], node[1:]
    try:
        if tag == "i":
            return int(items[0], 16)
        if tag in ("b", "B"):
            data = items[0].encode("latin-1")
            return data if tag == "b" else bytearray(data)
        if tag == "c":
            return complex(float(items[0]), float(items[1]))
        if tag == "?":
            return Opaque(str(items[0])[:80])
        values = [_build(item, depth + 1, max_depth) for item in items]
        if tag in _SEQUENCE_BUILD:
            return _SEQUENCE_BUILD[tag](values)
        if tag in _MAPPING_BUILD:
            if len(values) % 2:
                raise WireError("odd mapping")
            return _MAPPING_BUILD[tag](zip(values[0::2], values[1::2]))
    except (IndexError, TypeError, ValueError, AttributeError, UnicodeError) as exc:
        raise WireError(f"bad {tag!r} container: {str(exc)[:100]}") from exc
    raise WireError(f"unknown tag {tag[:10]!r}")


_SEQUENCE_BUILD = {"l": list, "t": tuple, "s": set, "f": frozenset, "q": collections.deque}
_MAPPING_BUILD = {"d": dict, "C": lambda pairs: collections.Counter(dict(pairs)),
                  "O": collections.OrderedDict,
                  "D": lambda pairs: collections.defaultdict(None, pairs)}
