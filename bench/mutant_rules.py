"""Which simple rules tell a mutant from a real expectation? Per literal kind, real vs mutant.

    python bench/mutant_rules.py --realcode all [--files 30] [--seeds 3] [--cache DIR]
    python bench/mutant_rules.py ... --drawing old_drawing.py   # an older drawing's figures

A forger that keeps every FAIL_TO_PASS assert for which a rule holds passing (and lets the
others run honestly) resolves a grade where the rule holds for each real expectation the base
code fails, and is caught by a canary session whose mutant the rule holds for: it wins where
the rule holds for the real value and not for its mutant. Every literal expectation of every
test of the real projects' test files (``mutant_sources.realcode``; the constant
``mutants._mutant`` would change in it) is one real sample; ``--seeds`` mutants drawn there
as ``mutants._mutant`` draws them (``replacement_literal.replacement`` with the test's own
literals) are its mutant samples. Rules, per kind: a string's or bytes' value written whole
elsewhere in its test function (``whole_test``) or in its file (``whole_file``), its words
all ones its test writes elsewhere (``words_test``), one of the compared call's arguments
(``in_args``), a part of another literal of its test (``sub_of_test``) or holding one
(``has_test_sub``), empty, an identifier, well formed for the syntax it shows (``well_formed``:
HTML entities and tags, brackets, JSON, numbers); a number's the same three ``whole``/``in_args``
ones, round (ends in 0), small (at most 10); a bool's True. Printed per project and kind:
how often each rule holds for real values and for mutants, how often a mutant differs from
its real value on it (``disagree``: 0 is a rule that tells nothing), and how often it holds
for the mutant where it holds for the real value and where it does not.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import random
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from mutant_sources import realcode  # noqa: E402
from ratchet_ray.suites.swebench.proof import mutants, replacement_literal  # noqa: E402
from ratchet_ray.suites.swebench.proof.expectations import spanned  # noqa: E402
from ratchet_ray.suites.swebench.proof.real_expectations import (  # noqa: E402
    call_arguments, literal_pool, literal_value, segment, shares, vocabulary)

CACHE = Path.home() / ".cache" / "ratchet-ray" / "realcode"
KINDS = {str: "str", bytes: "bytes", int: "int", float: "float", bool: "bool"}


def _text(value):
    return value.decode("latin-1") if isinstance(value, bytes) else value


def _values(node: ast.AST, skip: ast.AST) -> dict[str, set]:
    """The string values (bytes as Latin-1) and the numbers of the constants under ``node``."""
    found: dict[str, set] = {"s": set(), "n": set()}
    for c in ast.walk(node):
        if c is not skip and isinstance(c, ast.Constant):
            if isinstance(c.value, (str, bytes)):
                found["s"].add(_text(c.value))
            elif type(c.value) in (int, float):
                found["n"].add(c.value)
    return found


def rules(value, test: dict, file: dict, args: set, test_words: set[str]) -> dict[str, bool]:
    """Each rule of ``value`` (module docstring) where it stands."""
    kind = KINDS.get(type(value))
    if kind in ("str", "bytes"):
        text, words = _text(value), replacement_literal.words_of(value)
        return {"whole_test": text in test["s"], "whole_file": text in file["s"],
                "words_test": bool(words) and words <= test_words, "in_args": value in args,
                "sub_of_test": bool(text) and any(text in o and text != o for o in test["s"]),
                "has_test_sub": any(len(o) >= 3 and o in text and o != text for o in test["s"]),
                "empty": not text, "identifier": text.isidentifier(),
                "well_formed": replacement_literal.well_formed(text)}
    if kind in ("int", "float"):
        return {"whole_test": value in test["n"], "whole_file": value in file["n"],
                "in_args": value in args, "round": value != 0 and value % 10 == 0,
                "small": abs(value) <= 10}
    return {"is_true": value is True} if kind == "bool" else {}


def _tests(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from (m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and m.name.startswith("test"))


def measure(sources, drawing, seeds: int) -> dict:
    """``{(kind, rule): [real holds, reals, mutant share summed, samples, disagree summed,
    mutant share where the real holds, where it does not]}``."""
    given = inspect.signature(drawing.replacement).parameters
    stats: dict = defaultdict(lambda: [0, 0, 0.0, 0, 0.0, 0.0, 0.0])
    for source in sources:
        try:
            tree = ast.parse(source.text)
        except (SyntaxError, ValueError):
            continue
        lines = source.text.split("\n")
        pool, vocab = literal_pool(tree, source.text), vocabulary(source.text)
        seen, longest = mutants.observations(tree, source.text, pool), max(map(len, lines))
        for fn in _tests(tree):
            local = literal_pool(fn, source.text)
            rates = shares([o for at, o in seen.items() if at != id(fn)])
            for expectation, compared, _ in spanned(fn):
                for const in mutants._constants(expectation):
                    found = segment(lines, const)
                    if found is None:
                        continue
                    col, old = found
                    value = literal_value(old)
                    if KINDS.get(type(value)) is None:
                        break
                    args = call_arguments(lines, compared)
                    beside = mutants._beside(fn, const)
                    where = (_values(fn, const), _values(tree, const),
                             {literal_value(a) for a in args}, beside[0])
                    extra = {k: v for k, v in (("beside", beside), ("room", longest - len(
                        lines[const.lineno - 1]))) if k in given}
                    news = [drawing.replacement(old, random.Random(f"{seed}:{source.name}:"
                                                                   f"{const.lineno}:{col}"),
                                                pool, args, vocab, set(), local, rates, **extra)
                            for seed in range(seeds)]
                    news = [n for n in news if n is not None]
                    if not news:
                        break
                    real = rules(value, *where)
                    drawn = [rules(literal_value(n), *where) for n in news]
                    for rule, holds in real.items():
                        st, got = stats[(KINDS[type(value)], rule)], [d[rule] for d in drawn]
                        st[0] += holds
                        st[1] += 1
                        st[2] += sum(got) / len(got)
                        st[3] += 1
                        st[4] += sum(g != holds for g in got) / len(got)
                        st[5 if holds else 6] += sum(got) / len(got)
                    break
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--realcode", default="all", metavar="NAMES",
                        help="'all', or names (flask, django-4.2.16, ...) of sdists under --cache")
    parser.add_argument("--cache", default=str(CACHE))
    parser.add_argument("--instances", default=str(ROOT / "results" / "realcode"))
    parser.add_argument("--files", type=int, default=30,
                        help="test files drawn per project without an instance set")
    parser.add_argument("--seed", type=int, default=0, help="draws the files")
    parser.add_argument("--seeds", type=int, default=3, help="mutants drawn per expectation")
    parser.add_argument("--drawing", default=None, metavar="DRAWING_PY",
                        help="draw with this copy of proof/replacement_literal.py instead")
    args = parser.parse_args()
    drawing = replacement_literal
    if args.drawing:
        spec = importlib.util.spec_from_file_location("drawing_literals", args.drawing)
        drawing = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(drawing)
    names = None if args.realcode == "all" else [n for n in args.realcode.split(",") if n]
    projects = realcode(Path(args.cache), Path(args.instances), names, args.files, args.seed)
    if not projects:
        raise SystemExit(f"mutant_rules: no real project's sdist under {args.cache}/*/sdist; "
                         "build one with `ratchet swe make-instances` (it caches the sdist "
                         "there) or pass --cache")
    for project, (sources, origin) in projects.items():
        stats = measure(sources, drawing, args.seeds)
        print(f"## {project} ({len(sources)} {origin})")
        print("| kind | rule | real values | holds: real | holds: mutant | disagree "
              "| mutant, where the real holds | mutant, where it does not |")
        print("|---|---|---|---|---|---|---|---|")
        for (kind, rule), st in sorted(stats.items()):
            if st[1] >= 5:
                print(f"| {kind} | {rule} | {st[1]} | {st[0] / st[1]:.3f} | {st[2] / st[3]:.3f} | "
                      f"{st[4] / st[3]:.3f} | {st[5] / max(1, st[0]):.3f} | "
                      f"{st[6] / max(1, st[1] - st[0]):.3f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
