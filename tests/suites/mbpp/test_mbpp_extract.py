"""Code extraction from free-form model output (pure parsing; nothing is executed)."""

from __future__ import annotations

import ast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratchet_ray.suites.mbpp.extract import _prune, extract_code


def prune_to_entry_point(code: str, entry_point: str) -> str:
    return _prune(code, ast.parse(code), entry_point)


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


# --- Bounded work: a reply is untrusted input, and extracting it must not stall a grader. ---

import sys  # noqa: E402

from ratchet_ray.suites.mbpp import extract  # noqa: E402

ADD = "def add(a, b):\n    return a + b\n"


@pytest.fixture
def parsed(monkeypatch):
    """The texts extraction hands ``ast.parse`` (its calls and their characters)."""
    texts: list[str] = []
    real = ast.parse

    def recording(source, *args, **kwargs):
        texts.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", recording)
    return texts


def _reference_largest_parsable(text: str) -> str | None:
    """The search without its bounds: every span from each of the first 8 code-like lines, its end
    lowered one line at a time, the longest that parses."""
    def parses(t):
        try:
            ast.parse(t)
            return True
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return False

    if text.strip() and parses(text):
        return text
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if extract._CODE_START.match(line)][:8]
    for start in starts:
        for end in range(len(lines), start, -1):
            candidate = "\n".join(lines[start:end])
            if parses(candidate):
                return candidate
    return None


def _reference_search(monkeypatch):
    """``extract_code`` with the reference search in place of the bounded one."""
    def reference(text, parser):
        found = _reference_largest_parsable(text)
        return None if found is None else (found, ast.parse(found))

    monkeypatch.setattr(extract, "_largest_parsable", reference)


LINES = [
    "def add(a, b):", "    return a + b", "    return helper(a) + b", "def helper(x):",
    "    return x", "x = (", "    1,", ")", "]", "y = [1,", "2]", "class A:", "    pass",
    "import math", "from os import path", "@staticmethod", "if a:", "else:", "try:", "except:",
    "    # a comment", "# it's a comment", '# say "hi"', "#", "", "   ", "\t", "\x0c", "x = 1 \\",
    "s = 'abc\\", '"""', "'''", 's = """', '# """ + """', "The function above works because",
    "    it is (", "Here's how it works:", "1. First, sort.", "Note: use x", "print 'x'",
    "print(add(1, 2))", "assert add(1, 2) == 3", "x = f'{a b}'", "lambda:", "def g(:", "x = $",
    "\x00 nul", "x = '\ud800'", "a b", "return", "    yield 1", "match x:", "    case 1:",
    "        pass", "x = 1 if y", "del f()", "\r", "# c\r x = (",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=30))
def test_the_bounded_search_finds_what_the_line_by_line_search_finds(lines):
    """Skipping the spans a failed parse rules out (those holding its error's line, and a tail of
    comment or blank lines) changes nothing the search returns."""
    text = "\n".join(lines)
    found = extract._largest_parsable(text, extract._Parser(10**12))
    assert (found[0] if found else None) == _reference_largest_parsable(text)


REPLY_SHAPES = [
    lambda code: f"Sure! Here is the solution:\n```python\n{code}\n```\nIt runs in linear time.",
    lambda code: f"```python\n{code}\n```",
    lambda code: code,
    lambda code: "```python\n" + code,  # cut off before the closing fence
    lambda code: code + "\nThe function above works because\n    it is (",
    lambda code: code + "\n" + "\n".join(f"Step {i}: it's done (see above)." for i in range(40)),
    lambda code: code + "\n\nprint(f(1))\nassert f(1) == 2\nif __name__ == '__main__':\n    main()",
    lambda code: "```python\n" + code + "\n```\n\n```python\nprint(x)\n```\n",
]


def test_reference_solutions_in_reply_shapes_extract_as_before(monkeypatch):
    """MBPP+'s reference solutions, in the reply shapes the tests use: the same code and reason as
    the unbounded line-by-line search gives."""
    import gzip
    import json

    from offline_data import mbpp_plus_path

    with gzip.open(mbpp_plus_path(), "rt") as handle:
        problems = [json.loads(line) for line in handle]
    replies = [(shape(p["canonical_solution"]), p["entry_point"])
               for p in problems for shape in REPLY_SHAPES]
    bounded = [extract_code(reply, entry) for reply, entry in replies]
    _reference_search(monkeypatch)
    assert bounded == [extract_code(reply, entry) for reply, entry in replies]
    assert sum(e.reason == "ok" for e in bounded) >= len(problems) * (len(REPLY_SHAPES) - 1)


def test_a_long_prose_tail_costs_a_few_parses(parsed):
    """Trailing prose used to be trimmed one line per parse, each parse as long as the reply."""
    out = ADD + "\n".join(f"The function above works because of step {i}." for i in range(100))
    assert extract_code(out, "add").code == ADD
    assert len(parsed) <= 5, len(parsed)


@pytest.mark.parametrize("tail_lines", [121, 2000])
def test_code_followed_by_more_prose_than_the_trim_limit_is_found(parsed, tail_lines):
    """The trim limit counts parses, not lines: a prose tail longer than ``MAX_TRIM_STEPS`` lines
    (a model that explains at length) no longer hides the code above it."""
    out = ADD + "\n".join(f"Step {i}: the function adds the two numbers." for i in range(tail_lines))
    assert tail_lines > extract.MAX_TRIM_STEPS
    assert extract_code(out, "add").code == ADD
    assert len(parsed) <= 5, len(parsed)


def test_a_comment_only_body_is_not_trimmed_line_by_line(parsed):
    """A small model's reply: a function whose body is only comments (it fails, at the end)."""
    out = "def add(a, b):\n" + "    # TODO: write it\n" * 100
    assert extract_code(out, "add").reason == "no_code"
    assert len(parsed) <= 3, len(parsed)


@pytest.mark.parametrize("bad", ["\x00", "\ud800"])
def test_a_nul_or_lone_surrogate_tail_costs_a_few_parses(parsed, bad):
    out = ADD + f"{bad} trailing junk\n" * 100
    assert extract_code(out, "add").code == ADD
    assert len(parsed) <= 3, len(parsed)


ADVERSARIAL = {
    # an unclosed bracket the whole way down, each span parsed to its end (old: 25-55 s)
    "open_paren_tail": "```python\n" + "x = (\n" * 8 + "1,\n" * 4000 + "```",
    # every span ends in a decorator with nothing to decorate: the error is always at the end
    "decorator_tail": "@d\n" * 4000,
    "continued_lines": "x = [\n" + "    1, \\\n" * 3000,
    "unpaired_fence_prose": "```\n" + "def f(:\n" * 2000,
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_adversarial_reply_parse_work_is_linear_in_its_length(parsed, name):
    out = ADVERSARIAL[name]
    result = extract_code(out, "add")
    assert result.code is None and result.reason in ("no_code", extract.CAP_REASON)
    # the search's budget, plus the final assembly's parse of what it found
    assert sum(map(len, parsed)) <= extract.parse_budget(len(out)) + 2 * len(out)


def test_a_search_over_its_budget_is_an_extraction_cap(parsed):
    out = ADVERSARIAL["decorator_tail"]
    assert extract_code(out, "add") == extract.Extracted(None, "extraction_cap")
    assert sum(len(t) + extract.PARSE_CALL_CHARS for t in parsed) <= extract.parse_budget(len(out))


def test_more_fenced_blocks_than_the_cap_is_an_extraction_cap(parsed):
    block = "```python\nx = 1\n```\n"
    at_cap = block * (extract.MAX_BLOCKS - 1) + f"```python\n{ADD}```\n"
    assert extract_code(at_cap, "add").code == ADD
    parsed.clear()
    assert extract_code(block + at_cap, "add").reason == "extraction_cap"
    assert parsed == []  # refused before any parse


def test_the_grader_names_the_cap(mbpp_grader, mbpp_tasks):
    result = mbpp_grader.grade(mbpp_tasks["Mbpp/17"], "```python\nx = 1\n```\n" * 300)
    assert (result.passed, result.exit_status, result.infra_failure) == (False, "extraction_cap",
                                                                        False)
    assert f"more than {extract.MAX_BLOCKS} fenced blocks" in result.trace


def test_nesting_too_deep_for_the_parser_is_no_code_at_any_stack_depth():
    """``ast.parse`` raises RecursionError or MemoryError on deep nesting, sooner the deeper the
    caller's stack already is; extraction answers ``no_code``, it never raises."""
    def at_depth(depth, call):
        return call() if depth == 0 else at_depth(depth - 1, call)

    for nesting in ("-" * 3000, "not " * 20000, "(" * 150 + "a" + ")" * 150):
        out = f"def add(a, b):\n    return {nesting}a\n"
        for depth in (0, sys.getrecursionlimit() - 100):
            assert at_depth(depth, lambda: extract_code(out, "add")).reason in ("ok", "no_code")
