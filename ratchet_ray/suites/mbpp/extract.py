"""Turn a model's free-form answer into the Python module that MBPP+ grades.

Contract: ``extract_code(output, entry_point)`` never raises. It returns ``Extracted(code,
reason)``: ``code`` is a parsable module that defines ``entry_point`` at top level, or ``None``
with ``reason`` = ``"no_code"`` (no code definitions found) or ``"missing_entry_point"`` (code,
but no such function). Only the standard ``ast`` module parses the text; nothing is executed.

What is kept mirrors ``evalplus.sanitize``: imports, plus the top-level functions, classes and
assignments reachable from the entry point. Demo calls, prints, asserts and ``__main__`` blocks are
dropped, so a model's own (possibly wrong or slow) self-test cannot sink a correct solution.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

# Garbage can be huge; parsing cost must stay bounded whatever the model emits.
MAX_OUTPUT_CHARS = 60_000
MAX_TRIM_STEPS = 120

_FENCE = re.compile(r"^[ \t]*(```|~~~)[ \t]*([\w+.-]*)[^\n]*\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)",
                    re.DOTALL | re.MULTILINE)
_CODE_START = re.compile(r"^(def |async def |class |import |from |@|[A-Za-z_]\w*\s*=)")
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Extracted:
    code: str | None
    reason: str = "ok"


def _parses(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _largest_parsable(text: str) -> str | None:
    """The text itself if it parses; else the longest parsable span starting at a code-like line
    (trailing prose and a truncated last statement are trimmed line by line)."""
    if text.strip() and _parses(text):
        return text
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if _CODE_START.match(line)][:8]
    for start in starts:
        end = len(lines)
        for _ in range(MAX_TRIM_STEPS):
            if end <= start:
                break
            candidate = "\n".join(lines[start:end])
            if _parses(candidate):
                return candidate
            end -= 1
    return None


def _defines(tree: ast.Module, name: str) -> bool:
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
               for n in tree.body)


def _assigned_names(node: ast.stmt) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _used_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def prune_to_entry_point(code: str, entry_point: str) -> str:
    """Keep imports and the definitions/assignments the entry point reaches, in source order."""
    tree = ast.parse(code)
    defined: dict[str, list[ast.stmt]] = {}
    for node in tree.body:
        if isinstance(node, _DEFINITIONS):
            names = [node.name]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            names = _assigned_names(node)
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
            frontier.extend(_used_names(node) - reachable)
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
    blocks = [textwrap.dedent(m.group(3)) for m in _FENCE.finditer(text)]
    return blocks if blocks else [text]


def extract_code(output: str | None, entry_point: str) -> Extracted:
    """The gradable module inside ``output`` (fenced block or raw text), or why there is none."""
    if not isinstance(output, str) or not output.strip():
        return Extracted(None, "no_code")
    text = output[:MAX_OUTPUT_CHARS].replace("\r\n", "\n")
    parsable = [code for code in map(_largest_parsable, _candidates(text)) if code]
    if not parsable and "```" in text:
        # A fence the regex could not pair (e.g. prose between); fall back to the raw text.
        parsable = [code for code in [_largest_parsable(text.replace("```", ""))] if code]
    if not parsable:
        return Extracted(None, "no_code")
    # Prefer a block that defines the entry point; else the blocks together (helpers split out).
    chosen = [c for c in parsable if _defines(ast.parse(c), entry_point)]
    joined = "\n\n".join(parsable)
    code = chosen[-1] if chosen else joined
    tree = _parses(code)
    if tree is None or not any(isinstance(n, _DEFINITIONS) for n in tree.body):
        return Extracted(None, "no_code")  # prose that happens to parse, e.g. one bare word
    if not _defines(tree, entry_point):
        return Extracted(None, "missing_entry_point")
    if len(chosen) == 1 and len(parsable) > 1 and _parses(joined):
        code = joined  # helpers defined in another block stay reachable
    try:
        return Extracted(prune_to_entry_point(code, entry_point))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return Extracted(None, "no_code")
