"""Turn a model's free-form answer into the Python module that MBPP+ grades.

Contract: ``extract_code(output, entry_point)`` never raises. It returns ``Extracted(code,
reason)``: ``code`` is a parsable module that defines ``entry_point`` at top level, or ``None``
with ``reason`` = ``"no_code"`` (no code definitions found), ``"missing_entry_point"`` (code,
but no such function) or ``"extraction_cap"`` (the search below needed more than its cap:
more than ``MAX_BLOCKS`` fenced blocks, or more parse work than ``parse_budget`` of the
output's length). Only the standard ``ast`` module parses the text; nothing is executed.

What is kept mirrors ``evalplus.sanitize``: imports, plus the top-level functions, classes and
assignments reachable from the entry point. Demo calls, prints, asserts and ``__main__`` blocks are
dropped, so a model's own (possibly wrong or slow) self-test cannot sink a correct solution.

The work is bounded by the output's length, whatever the model emits (its replies are untrusted:
a skill could teach it to pad them): the output is cut at ``MAX_OUTPUT_CHARS``, the fence
pattern and the line scans are linear, and every text handed to ``ast.parse`` while searching
is charged its length plus ``PARSE_CALL_CHARS`` against ``parse_budget(len(output))``; the search
stops with ``extraction_cap`` once a parse would overdraw it. Each candidate's trailing lines are
trimmed at most ``MAX_TRIM_STEPS`` times (parses) from each of its first ``MAX_CODE_STARTS``
code-like lines, and a failed parse skips the shorter spans that provably fail too (those that
still hold the line its error names), so a reply with a long prose tail costs a few parses, not
one per line, however long the tail.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

# Garbage can be huge; parsing cost must stay bounded whatever the model emits.
MAX_OUTPUT_CHARS = 60_000
MAX_TRIM_STEPS = 120
MAX_CODE_STARTS = 8
MAX_BLOCKS = 256
"""More fenced blocks than this is an ``extraction_cap``: no honest answer has that many."""
PARSE_WORK_PER_CHAR = 16
PARSE_WORK_FLOOR = 50_000
"""``parse_budget``: the replies measured (MBPP+'s reference solutions in the tests' reply
shapes, local-model replies, 200,000 noisy variants of them) needed under 30,000 characters,
inside the floor, and extract the same under the budget as unbounded."""
PARSE_CALL_CHARS = 200
"""What one ``ast.parse`` call is charged beyond its text: its fixed cost (~10 us) with room,
so that many tiny candidates cannot parse for free."""
CAP_REASON = "extraction_cap"

# The opener's lookahead keeps a fence line without a newline linear (the three runs of its
# info string overlap, so the engine tried every split of a long one: 4 s for 60,000 spaces).
_FENCE = re.compile(r"^[ \t]*(```|~~~)(?=[^\n]*\n)[ \t]*([\w+.-]*)[^\n]*\n(.*?)"
                    r"(?:^[ \t]*\1[ \t]*$|\Z)", re.DOTALL | re.MULTILINE)
_CODE_START = re.compile(r"^(def |async def |class |import |from |@|[A-Za-z_]\w*\s*=)")
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_NOT_INERT = re.compile("[\"'\r\x00\ud800-\udfff]")


@dataclass(frozen=True)
class Extracted:
    code: str | None
    reason: str = "ok"


def parse_budget(output_chars: int) -> int:
    """The characters (``PARSE_CALL_CHARS`` per call included) the search may hand ``ast.parse``
    for an output of ``output_chars`` characters: linear in it, with a floor for short ones."""
    return PARSE_WORK_PER_CHAR * min(output_chars, MAX_OUTPUT_CHARS) + PARSE_WORK_FLOOR


class _CapHit(Exception):
    """The search needed more than its cap; ``extract_code`` answers ``extraction_cap``."""


class _Parser:
    """``ast.parse`` under a budget of characters (``parse_budget``)."""

    def __init__(self, budget: int):
        self.left = budget

    def parse(self, text: str) -> tuple[ast.Module | None, int | None]:
        """The tree, or ``None`` and the first 0-based line every longer span that keeps it fails
        on too (``None`` when the error names none: the caller then trims one line)."""
        self.left -= len(text) + PARSE_CALL_CHARS
        if self.left < 0:
            raise _CapHit
        nul = text.find("\x00")
        if nul >= 0:  # no span holding a NUL byte parses (a ValueError or a SyntaxError)
            return None, text.count("\n", 0, nul)
        try:
            return ast.parse(text), None
        except SyntaxError as exc:
            # Any span that keeps the error's line whole fails too: a generic "invalid syntax"
            # names the furthest token the parser read, and such a span gives it the same tokens
            # up to there; the tokenizer's errors (an unclosed bracket, an unterminated string,
            # a bad indent) come from the text up to that line; a specific message names a
            # construct invalid wherever it stands whole, and a span that cuts a multi-line one
            # leaves a bracket, a string or a continuation open.
            line = exc.lineno
            return None, line - 1 if isinstance(line, int) and line >= 1 else None
        except UnicodeEncodeError as exc:  # a lone surrogate: no span holding it encodes
            return None, text.count("\n", 0, exc.start)
        except (ValueError, MemoryError, RecursionError):  # e.g. nesting too deep to parse
            return None, None


def _largest_parsable(text: str, parser: _Parser) -> tuple[str, ast.Module] | None:
    """The text itself if it parses; else the longest parsable span starting at a code-like line
    (trailing prose and a truncated last statement are trimmed line by line; a span longer than
    a failed one that still holds the line its error names is skipped, as it fails too)."""
    whole = parser.parse(text) if text.strip() else None
    if whole is not None and whole[0] is not None:
        return text, whole[0]
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if _CODE_START.match(line)][:MAX_CODE_STARTS]
    for start in starts:
        end, steps = len(lines), 0
        while end > start and steps < MAX_TRIM_STEPS:
            steps += 1
            candidate = "\n".join(lines[start:end])
            # lines[0:len] is the whole text, parsed above
            tree, failed_at = (whole if whole is not None and (start, end) == (0, len(lines))
                               else parser.parse(candidate))
            if tree is not None:
                return candidate, tree
            end = min(_first_of_inert_tail(lines, start, end),
                      start + failed_at if failed_at is not None else end)
    return None


def _inert(line: str) -> bool:
    """A blank or comment line, which the tokenizer drops whatever precedes it: it holds no quote
    (which could close a string it is in), CR (a line break), NUL or lone surrogate."""
    bare = line.lstrip(" \t\f")
    return (not bare or bare.startswith("#")) and not _NOT_INERT.search(line)


def _first_of_inert_tail(lines: list[str], start: int, end: int) -> int:
    """The next span end to try after ``lines[start:end]`` failed: ``end - 1``, or lower where
    ``lines[k:end]`` are inert lines: ``lines[start:k..end]`` tokenize alike, so all fail
    (unless ``lines[k - 1]`` ends with a backslash, which joins the next line to it)."""
    k = end
    while k - 1 > start and _inert(lines[k - 1]):
        k -= 1
    if k < end and lines[k - 1].endswith("\\"):
        return end - 1
    return k - 1


def _defines(tree: ast.Module, name: str) -> bool:
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
               for n in tree.body)


def _prune(code: str, tree: ast.Module, entry_point: str) -> str:
    """Keep imports and the definitions/assignments the entry point reaches, in source order."""
    defined: dict[str, list[ast.stmt]] = {}
    for node in tree.body:
        if isinstance(node, _DEFINITIONS):
            names = [node.name]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
        else:
            names = []
        for name in names:
            defined.setdefault(name, []).append(node)
    reachable: set[str] = set()
    frontier = [entry_point]
    while frontier:
        name = frontier.pop()
        if name in reachable or name not in defined:
            continue
        reachable.add(name)
        for node in defined[name]:
            frontier.extend({n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - reachable)
    keep_ids = {id(node) for name in reachable for node in defined[name]}
    kept = [node for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in keep_ids]
    lines = code.split("\n")
    chunks = []
    for node in kept:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        chunks.append("\n".join(lines[first - 1 : node.end_lineno]))
    return "\n".join(chunks) + "\n"


def _candidates(text: str) -> list[str]:
    blocks = []
    for match in _FENCE.finditer(text):
        if len(blocks) == MAX_BLOCKS:
            raise _CapHit
        blocks.append(textwrap.dedent(match.group(3)))
    return blocks if blocks else [text]


def _parsable_blocks(text: str, parser: _Parser) -> list[tuple[str, ast.Module]]:
    parsable = [found for found in (_largest_parsable(c, parser) for c in _candidates(text))
                if found]
    if not parsable and "```" in text:
        # A fence the regex could not pair (e.g. prose between); fall back to the raw text.
        parsable = [found for found in [_largest_parsable(text.replace("```", ""), parser)]
                    if found]
    return parsable


def _parses(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def extract_code(output: str | None, entry_point: str) -> Extracted:
    """The gradable module inside ``output`` (fenced block or raw text), or why there is none."""
    if not isinstance(output, str) or not output.strip():
        return Extracted(None, "no_code")
    text = output[:MAX_OUTPUT_CHARS].replace("\r\n", "\n")
    try:
        parsable = _parsable_blocks(text, _Parser(parse_budget(len(text))))
    except _CapHit:
        return Extracted(None, CAP_REASON)
    if not parsable:
        return Extracted(None, "no_code")
    # Prefer a block that defines the entry point; else the blocks together (helpers split out).
    chosen = [(c, tree) for c, tree in parsable if _defines(tree, entry_point)]
    joined = "\n\n".join(c for c, _ in parsable)
    # The blocks together are parsed once (each block alone was, so this is linear too).
    joined_tree = parsable[0][1] if len(parsable) == 1 else _parses(joined)
    code, tree = chosen[-1] if chosen else (joined, joined_tree)
    if tree is None or not any(isinstance(n, _DEFINITIONS) for n in tree.body):
        return Extracted(None, "no_code")  # prose that happens to parse, e.g. one bare word
    if not _defines(tree, entry_point):
        return Extracted(None, "missing_entry_point")
    if len(chosen) == 1 and len(parsable) > 1 and joined_tree is not None:
        code, tree = joined, joined_tree  # helpers defined in another block stay reachable
    try:
        return Extracted(_prune(code, tree, entry_point))
    except (MemoryError, RecursionError):  # the tree is already parsed; only walking it is left
        return Extracted(None, "no_code")
