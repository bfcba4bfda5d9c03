"""Time to extract the code from adversarial MBPP+ replies, as a ratio to normal replies' time.

    python bench/mbpp_extract.py [--kb 12,60] [--repeats 3]

A model's reply is untrusted input to the grader: a reply (or a skill that teaches the model to
pad replies) must not stall it. For each size (KB), the script builds a normal reply of that
size (working functions in one fenced block with prose around, as the tests' reply shapes) and
adversarial replies of the same size, and times ``extract.extract_code`` on each (best of
``--repeats``, in this process):
- ``open_paren_tail``: a fenced block whose bracket never closes, so every span parses to its end
- ``decorator_tail``: decorators with nothing to decorate, the error always at the end
- ``prose_tail``: a function, then prose, one unparsable line after another
- ``comment_body``: a function whose body is only comments (a small model's reply)
- ``fence_pairs``: thousands of fenced blocks
- ``opener_spaces``: a fence opener followed by one long line with no newline
- ``deep_nesting``: nesting too deep for the parser (RecursionError / MemoryError inside)
- ``nul_tail`` / ``surrogate_tail``: a function, then lines holding a NUL or a lone surrogate
Each row prints the milliseconds, the extraction's reason, the ratio to the normal reply of the
same size and to a typical one (one function, ~0.3 KB). Target: every adversarial reply within
200x the normal reply of its size, at every size (linear in the reply: the search's parse work
is capped by ``extract.parse_budget``, 16x the reply's length + 50,000 characters, a failing
parse costs several times a succeeding one, and more than 256 fenced blocks are refused
unparsed). Before the bound, a 12 KB reply took 36-57 s on a loaded 2-core machine, ~3,000-5,000x
a normal reply of that size, and the ratio grew with the size.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ratchet_ray.suites.mbpp.extract import extract_code  # noqa: E402

TARGET_RATIO = 200.0
SOLUTION = '''def similar_elements(test_tup1, test_tup2):
    """The elements two tuples share, as a tuple."""
    res = tuple(set(test_tup1) & set(test_tup2))
    return res
'''


def fill(head: str, unit: str, size: int, tail: str = "") -> str:
    """``head``, then ``unit`` repeated to about ``size`` characters, then ``tail``."""
    return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail


def tail(line: str, size: int) -> str:
    """100 lines of about ``size`` characters in all, each starting with ``line``: within the 100
    last lines the search trims, so the code above them is found."""
    width = max(len(line), size // 100 - 1)
    return (line + " x" * ((width - len(line)) // 2) + "\n") * 100


def helpers(size: int) -> str:
    """About ``size`` characters of working helper functions (the normal reply's bulk)."""
    unit = ("def helper_{i}(values):\n    total = 0\n    for v in values:\n"
            "        total += v * {i}\n    return total\n\n")
    out, i = [], 0
    while sum(map(len, out)) < size:
        out.append(unit.format(i=i))
        i += 1
    return "".join(out)


def normal(size: int) -> str:
    body = helpers(max(0, size - 200)) + SOLUTION
    return f"Sure! Here is the solution:\n```python\n{body}```\nIt runs in linear time."


ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "open_paren_tail": lambda n: fill("```python\n" + "x = (\n" * 8, "1,\n", n, "```"),
    "decorator_tail": lambda n: fill("", "@d\n", n),
    "prose_tail": lambda n: SOLUTION + tail("The function above works because it is (", n),
    "comment_body": lambda n: fill("def similar_elements(a, b):\n", "    # TODO: compare\n", n),
    "fence_pairs": lambda n: fill("", "```python\nx = (\n```\n", n),
    "opener_spaces": lambda n: fill("```", " ", n),
    "deep_nesting": lambda n: fill("def similar_elements(a, b):\n    return ", "-", n, "a\n"),
    "nul_tail": lambda n: SOLUTION + tail("\x00 junk", n),
    "surrogate_tail": lambda n: SOLUTION + tail("\ud800 junk", n),
}


def best_ms(reply: str, repeats: int) -> tuple[float, str]:
    """The fastest of ``repeats`` extractions, in ms, and the extraction's reason."""
    times, reason = [], extract_code(reply, "similar_elements").reason  # warm, untimed
    for _ in range(repeats):
        started = time.perf_counter()
        reason = extract_code(reply, "similar_elements").reason
        times.append((time.perf_counter() - started) * 1000)
    return min(times), reason


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", default="12,60", help="reply sizes in KB, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    typical_ms, reason = best_ms(f"```python\n{SOLUTION}```\n", max(args.repeats, 20))
    assert reason == "ok", reason
    print(f"typical reply: {len(SOLUTION) + 14} chars, {typical_ms:.3f} ms")
    worst = 0.0
    for kb in (float(k) for k in args.kb.split(",")):
        size = int(kb * 1000)
        base_ms, reason = best_ms(normal(size), args.repeats)
        assert reason == "ok", reason
        print(f"{kb:g} KB: normal reply {base_ms:.2f} ms")
        for name, build in ADVERSARIAL.items():
            ms, reason = best_ms(build(size), args.repeats)
            ratio = ms / base_ms
            worst = max(worst, ratio)
            print(f"  {name:<15} {kb:g} KB {ms:9.2f} ms  {reason:<15} ratio to normal "
                  f"{ratio:7.1f}  to typical {ms / typical_ms:9.1f}")
    verdict = "met" if worst <= TARGET_RATIO else "NOT met"
    print(f"worst ratio to a normal reply of the same size {worst:.1f}; "
          f"target <= {TARGET_RATIO:g}: {verdict}")


if __name__ == "__main__":
    main()
