"""Code extraction from free-form model output (pure parsing; nothing is executed)."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratchet_ray.suites.mbpp.extract import extract_code, prune_to_entry_point

SOLUTION = "def add(a, b):\n    return helper(a) + b\n\ndef helper(x):\n    return x\n"


def test_fenced_python_block_with_prose_around_it():
    out = f"Here you go:\n```python\n{SOLUTION}```\nThis adds two numbers."
    extracted = extract_code(out, "add")
    assert extracted.reason == "ok"
    assert "def add" in extracted.code and "def helper" in extracted.code


def test_raw_code_with_trailing_prose_and_truncated_statement():
    out = SOLUTION + "\nThe function above works because\n    it is ("
    extracted = extract_code(out, "add")
    assert extracted.code is not None and "def helper" in extracted.code


def test_unterminated_fence_from_a_cut_off_generation():
    extracted = extract_code("```python\n" + SOLUTION, "add")
    assert extracted.code is not None and "return helper(a) + b" in extracted.code


def test_helpers_in_a_separate_block_are_kept():
    out = "```python\ndef helper(x):\n    return x\n```\nand\n```python\ndef add(a, b):\n    return helper(a) + b\n```"
    code = extract_code(out, "add").code
    assert "def helper" in code and "def add" in code


def test_demo_calls_prints_and_asserts_are_dropped():
    out = SOLUTION + "\nprint(add(1, 2))\nassert add(1, 2) == 4\nresult = add(5, 6)\nif __name__ == '__main__':\n    add(1, 1)\n"
    code = extract_code(out, "add").code
    names = [type(n).__name__ for n in ast.parse(code).body]
    assert names == ["FunctionDef", "FunctionDef"]


def test_imports_and_reachable_constants_are_kept():
    code = prune_to_entry_point("import math\nLIMIT = 10\nUNUSED = 3\ndef f(x):\n    return math.floor(x) + LIMIT\n", "f")
    assert "import math" in code and "LIMIT = 10" in code and "UNUSED" not in code


def test_decorated_entry_point_keeps_its_decorator():
    code = extract_code("import functools\n@functools.lru_cache(None)\ndef fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)\n", "fib").code
    assert "@functools.lru_cache(None)" in code


@pytest.mark.parametrize("output, reason", [
    ("", "no_code"), (None, "no_code"), ("I cannot solve this.", "no_code"),
    ("garbage", "no_code"), ("\x00\x01\x02", "no_code"),
    ("def other(x):\n    return x\n", "missing_entry_point"),
])
def test_nothing_gradable_names_the_reason(output, reason):
    extracted = extract_code(output, "add")
    assert extracted.code is None and extracted.reason == reason


def test_huge_garbage_is_bounded():
    extracted = extract_code("(((( not python\n" * 50_000, "add")
    assert extracted.code is None


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text_never_raises_and_code_always_parses(text):
    extracted = extract_code(text, "add")
    if extracted.code is not None:
        assert any(isinstance(n, ast.FunctionDef) and n.name == "add" for n in ast.parse(extracted.code).body)
