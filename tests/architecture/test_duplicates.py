"""No code written twice: the production packages and the repository's ``tools/`` share no
run of ``MIN_LINES`` identical lines.

What counts, as the review tool ``duplicates`` counts it: lines folded of white space, with blank
lines, comments, import lines and lone punctuation passed over. A run of ``MIN_LINES`` such lines
standing in two places (two files, or two places of one file) is a duplicate unless
``EXCEPTIONS`` names the pair with why it must stay; an exception that no longer matches fails
too, so the list only shrinks. (The review tool also finds runs alike but for names and values;
those are for a person to judge, not for CI.)
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from tools import import_graph

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (*import_graph.PACKAGES, *import_graph.TOOLING)
MIN_LINES = 6
EXCEPTIONS = {
    ("ratchet_ray/llm/base.py", "ratchet_ray/llm/cache.py"):
        "the LLMClient protocol's complete() signature, which the caching client implements "
        "word for word (a Protocol's methods are written out in every implementation)",
}
PASSED_OVER = re.compile(r"^(#.*|(from\s+\S+\s+)?import\s.*|[()\[\]{},:;.]*)$")


def code_lines(path: Path) -> list[tuple[str, int]]:
    """(folded line, line number) of the lines that count."""
    lines = []
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        folded = " ".join(raw.split())
        if folded and not PASSED_OVER.match(folded):
            lines.append((folded, number))
    return lines


def shared_runs(files: list[Path], root: Path = ROOT,
                min_lines: int = MIN_LINES) -> dict[tuple[str, str], str]:
    """``{(file a, file b): "a:L1-L2 ~ b:L3-L4"}`` for every pair of places sharing a run
    (paths relative to ``root``)."""
    places: dict[tuple[str, ...], list[tuple[str, int, int]]] = defaultdict(list)
    for path in files:
        name = path.relative_to(root).as_posix()
        lines = code_lines(path)
        for i in range(len(lines) - min_lines + 1):
            window = tuple(text for text, _ in lines[i:i + min_lines])
            places[window].append((name, lines[i][1], lines[i + min_lines - 1][1]))
    pairs: dict[tuple[str, str], str] = {}
    for seen in places.values():
        for a in range(len(seen)):
            for b in range(a + 1, len(seen)):
                (fa, a1, a2), (fb, b1, b2) = sorted((seen[a], seen[b]))
                if fa == fb and a2 >= b1:  # a run overlapping itself (repeated lines)
                    continue
                pairs.setdefault((fa, fb), f"{fa}:{a1}-{a2} ~ {fb}:{b1}-{b2}")
    return pairs


def production_files() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py")
                  if "__pycache__" not in p.parts)


def test_no_code_is_written_twice():
    found = shared_runs(production_files())
    unexpected = sorted(where for pair, where in found.items() if pair not in EXCEPTIONS)
    assert unexpected == [], (
        f"runs of {MIN_LINES}+ identical lines in two places: make one serve both, or name the "
        "pair in EXCEPTIONS with why it must stay:\n" + "\n".join(unexpected))
    stale = sorted(f"{a} ~ {b}" for a, b in EXCEPTIONS if (a, b) not in found)
    assert stale == [], f"exceptions that no longer match, drop them: {stale}"


def test_the_check_finds_a_copied_run_and_passes_over_what_does_not_count(tmp_path):
    body = "\n".join(f"    value_{i} = compute({i})" for i in range(MIN_LINES))
    (tmp_path / "a.py").write_text(f"def f():\n{body}\n")
    (tmp_path / "b.py").write_text(f"import os\n\ndef g():  \n{body}\n    # a comment\n")
    (tmp_path / "c.py").write_text("\n".join(f"x_{i} = {i}" for i in range(MIN_LINES - 1)))
    files = [tmp_path / n for n in ("a.py", "b.py", "c.py")]
    found = shared_runs(files, root=tmp_path)
    assert list(found) == [("a.py", "b.py")]
    assert found[("a.py", "b.py")] == f"a.py:2-{MIN_LINES + 1} ~ b.py:4-{MIN_LINES + 3}"
    assert code_lines(tmp_path / "b.py")[0] == ("def g():", 3)  # import and blank passed over
