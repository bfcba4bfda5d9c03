"""The data-only wire and the trusted comparison, against evalplus's own check.

``wire``: exact types survive the round trip; anything else (subclasses of builtins included)
arrives as ``Opaque``; forged or oversized texts are rejected. ``verdict``: for tricky pairs of
returned and expected values, ``SplitChecker`` decides exactly what evalplus's
``untrusted_check`` decides when a function returns that value."""

from __future__ import annotations

import collections
import math

import pytest

from ratchet_ray.suites.mbpp import wire
from ratchet_ray.suites.mbpp.verdict import SplitChecker, split_timeout, time_limits

EXACT = [0, -5, 2 ** 100, -(2 ** 70), True, False, None, 1.5, -0.0, math.inf, -math.inf, 1e-300,
         "", "héllo\ud800", b"\x00\xff", bytearray(b"ab"), 3 + 4j, [], (), [1, (2, 3)], (1,),
         {1, 2}, frozenset({(1, 2)}), {"a": [1], (1, 2): {3}}, collections.Counter("abca"),
         collections.OrderedDict([(2, 1), (1, 2)]), collections.defaultdict(None, {1: 2}),
         collections.deque([1, 2]), [[[[[]]]]]]


@pytest.mark.parametrize("value", EXACT, ids=[repr(v)[:30] for v in EXACT])
def test_plain_values_round_trip_with_their_exact_types(value):
    back = wire.decode(wire.encode(value))
    assert type(back) is type(value) and back == value and repr(back) == repr(value)


def test_nan_round_trips_as_a_float():
    back = wire.decode(wire.encode([math.nan]))
    assert type(back[0]) is float and math.isnan(back[0])


class LyingInt(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class LyingList(list):
    def __iter__(self):
        return iter([1, 2, 3])


@pytest.mark.parametrize("value", [LyingInt(3), LyingList(), object(), iter([1]), type, print,
                                   collections.namedtuple("P", "x")(1)])
def test_everything_else_is_opaque(value):
    back = wire.decode(wire.encode(value))
    assert isinstance(back, wire.Opaque) and back != back.type_name and not back == 0


def test_limits_on_size_and_depth():
    nested: list = []
    for _ in range(200):
        nested = [nested]
    with pytest.raises(wire.Unencodable):
        wire.encode(nested, max_depth=100)
    with pytest.raises(wire.Unencodable):
        wire.encode([0] * 1000, max_nodes=100)
    cyclic: list = []
    cyclic.append(cyclic)
    with pytest.raises(wire.Unencodable):
        wire.encode(cyclic)


@pytest.mark.parametrize("text", ['["x", 1]', '["s", ["l"]]', '["d", 1]', "[]", '["i", "zz"]',
                                  "[" * 5000 + "]" * 5000, "not json", '["?"]', '[1, 2]'])
def test_forged_or_malformed_texts_are_rejected(text):
    with pytest.raises(wire.WireError):
        wire.decode(text)


def _evalplus_passes(entry: str, returned: str, expected, atol: float = 0.0, inputs=((1,),)) -> bool:
    from evalplus.eval import PASS, untrusted_check

    code = f"import re, collections\ndef {entry}(*args):\n    return {returned}\n"
    status, _ = untrusted_check("mbpp", code, list(inputs), entry, expected=[expected] * len(inputs),
                                atol=atol, ref_time=[0.01] * len(inputs), fast_check=True)
    return status == PASS


def _ours_passes(entry: str, returned: str, expected, atol: float = 0.0, inputs=((1,),)) -> bool:
    checker = SplitChecker(entry, atol)
    value = eval(returned, {"re": __import__("re"), "collections": collections, "args": inputs[0]})
    return all(checker.check(inp, wire.decode(wire.encode(value)), expected) for inp in inputs)


CASES = [
    ("f", "1", 1.0, 0.0), ("f", "1.0000001", 1.0, 0.0), ("f", "1.01", 1.0, 0.0),
    ("f", "[1.0, 2.0000001]", [1.0, 2.0], 0.0), ("f", "(1.0,)", [1.0], 0.0),
    ("f", "True", 1, 0.0), ("f", "[True]", [1], 0.0), ("f", "{1, 2}", {2, 1}, 0.0),
    ("f", "[1, 2]", (1, 2), 0.0), ("f", "float('nan')", float("nan"), 0.0),
    ("f", "'abc'", "abc", 0.0), ("f", "b'a'", "a", 0.0), ("f", "2 ** 100", 2 ** 100, 0.0),
    ("f", "{(1, 2): 3}", {(1, 2): 3}, 0.0), ("f", "collections.Counter('aab')", {"a": 2, "b": 1}, 0.0),
    ("f", "collections.OrderedDict([(1, 2), (3, 4)])", collections.OrderedDict([(3, 4), (1, 2)]), 0.0),
    ("f", "3.14159", 3.1416, 1e-4), ("f", "[3.14159, 1]", [3.1416, 1], 1e-4),
    ("f", "1 + 2j", 1 + 2j, 0.0), ("f", "None", None, 0.0), ("f", "[]", [], 0.0),
    ("similar_elements", "[2, 1, 2]", (1, 2), 0.0), ("similar_elements", "5", (5,), 0.0),
    ("check_str", "None", False, 0.0), ("check_str", "re.match('a', 'a')", True, 0.0),
    ("check_str", "re.match('a', 'a')", False, 0.0), ("check_str", "False", False, 0.0),
    ("sum_div", "0", 7, 0.0), ("sum_div", "6", 7, 0.0), ("are_equivalent", "'x'", False, 0.0),
    ("surface_Area", "33", 33, 0.0), ("digit_distance_nums", "1", 1, 0.0),
]


@pytest.mark.parametrize("entry, returned, expected, atol", CASES,
                         ids=[f"{e}:{r}~{x!r}"[:50] for e, r, x, _ in CASES])
def test_our_verdict_is_evalplus_verdict(entry, returned, expected, atol):
    inputs = ((3, 4),) if entry == "surface_Area" else ((12, 21),) if entry == "digit_distance_nums" else ((1,),)
    assert _ours_passes(entry, returned, expected, atol, inputs) == _evalplus_passes(
        entry, returned, expected, atol, inputs)


def test_forced_float_tolerance_persists_for_the_rest_of_the_split():
    """evalplus sets atol = 1e-6 at the first float expected value and keeps it for the split."""
    checker = SplitChecker("f", 0.0)
    assert checker.check((1,), 1.0000001, 1.0)
    assert checker.check((1,), 2, 2)
    assert checker.atol == 1e-6


def test_time_limits_are_evalplus_limits():
    assert time_limits([0.01, 0.5]) == [1.0, 2.0]
    assert split_timeout([1.0] * 100) == 62.0 and split_timeout([1.0, 2.0]) == 5.0
    assert split_timeout([1.0] * 100, cap=30.0) == 32.0


@pytest.mark.parametrize("returned, expected, atol", [
    ("[[]]", [2.5], 0.0), ("([],)", (3.25,), 0.0), ("[[[]], [[]]]", [[1], [2]], 1e-6)])
def test_an_empty_axis_compares_nothing_and_fails(returned, expected, atol):
    """The one place our verdict is not evalplus's (verdict.py's docstring): ``np.allclose``
    broadcasts an extra empty axis away, so evalplus passes these without any value computed."""
    assert _evalplus_passes("f", returned, expected, atol)
    assert not _ours_passes("f", returned, expected, atol)
    assert _ours_passes("f", repr(expected), expected, atol)  # the expected shape is still judged
