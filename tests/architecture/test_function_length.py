"""No function of the project is longer than ``MAX_LINES`` lines (from its ``def`` to its last
line, docstring included; a click command's option decorators are not its body), except the ones ``LONGER`` names with why they still are.

A long function is usually several responsibilities sharing local state; the limit makes a new one
a decision instead of a drift. Modules are discovered on disk (``import_graph.project_modules``,
the repository's ``tools/`` included), so code added later is covered. The exceptions list only
shrinks: an entry that is no longer needed, or that has grown, fails the check too.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tools.import_graph import PACKAGES, TOOLING, project_modules

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 100
# "module:function" -> (its length when listed, why it is still longer than MAX_LINES).
LONGER: dict[str, tuple[int, str]] = {}


def function_lengths() -> dict[str, int]:
    lengths: dict[str, int] = {}
    for module, path in project_modules(ROOT, (*PACKAGES, *TOOLING)).items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key = f"{module}:{node.name}"
                lengths[key] = max(lengths.get(key, 0), node.end_lineno - node.lineno + 1)
    return lengths


def test_no_function_is_longer_than_the_limit_but_the_named_ones():
    lengths = function_lengths()
    too_long = {name: n for name, n in lengths.items() if n > MAX_LINES and name not in LONGER}
    assert too_long == {}, (f"functions over {MAX_LINES} lines: {too_long}; split them by "
                            "responsibility (or, with a reason, name them in LONGER)")
    grown = {name: (lengths.get(name), listed) for name, (listed, _why) in LONGER.items()
             if lengths.get(name, 0) > listed}
    assert grown == {}, f"a listed function grew (now, listed): {grown}"
    gone = sorted(name for name in LONGER if lengths.get(name, 0) <= MAX_LINES)
    assert gone == [], f"no longer over the limit: drop them from LONGER: {gone}"
