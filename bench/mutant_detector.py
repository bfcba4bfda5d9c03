"""Can a mutant be told from a real expectation, seen alone? A detector's AUC over real test files.

    python bench/mutant_detector.py [--files 600] [--packages numpy,networkx,...] [--seed 0]
    python bench/mutant_detector.py --realcode all [--repeats 5] [--files 200]
    python bench/mutant_detector.py ... --drawing old_drawing.py   # an older drawing's AUC

Two sources of test files (``mutant_sources``): the test suites of packages installed in this
venv (``--files`` of them drawn with ``--seed``), or, with ``--realcode``, the real projects
whose sdists ``ratchet swe make-instances`` cached (``--cache``): every graded test file of each
project's instance set (``--instances``), or ``--files`` of its test files where it has none
yet. For every test function with a literal expectation, the literal the grader would change
(``proof.mutants``: the last constant of the last expectation it can change) gives one real
sample, as written, and one mutant sample per design, the file with that literal replaced:
``before``, the character edit of issue 44 (``replacement_literal.mutate_literal``), and
``after``, the replacement drawn from what real expectations look like
(``replacement_literal.replacement``, given the test's other literals and the room on its line
as ``mutants._mutant`` gives them, where the drawing takes them). Each sample is described by what a forger sees in the
repository: how many other constants of the file have its value, whether its text appears
elsewhere in the file, how often its value is a literal of the repository's other files, whether
it equals one of the compared call's literal arguments or a constant of the compared expression,
whether the test function writes it elsewhere and what share of its words it writes elsewhere
(``test_words``), its type and length, for a number its magnitude
and roundness (whether it ends in 0, how many zeros end it, how many significant digits it has),
for a string its character classes and the share of its words found elsewhere in the file and
in the repository. A logistic regression
over those features, fitted and scored in 5 folds split by file, and each feature alone (rank),
give an AUC for real-vs-mutant: 0.5 is chance, 1.0 a detector that is never wrong. Printed per
design (and per project, averaged over ``--repeats`` draws of the mutants): the samples, the
detector's AUC, the best single feature's, and the target line (after <= 0.6).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import math
import random
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from mutant_sources import WORD, Source, installed, literal_key, realcode  # noqa: E402
from ratchet_ray.suites.swebench.proof import replacement_literal  # noqa: E402
from ratchet_ray.suites.swebench.proof.real_expectations import (  # noqa: E402
    call_arguments, literal_pool, literal_value, shares, vocabulary)
from ratchet_ray.suites.swebench.proof.mutants import _beside, expectations, observations  # noqa: E402

PACKAGES = "numpy,networkx,sympy,pandas,scipy,sklearn,matplotlib,libcst,pyarrow,trio,mpmath"
CACHE = Path.home() / ".cache" / "ratchet-ray" / "realcode"
INSTANCES = ROOT / "results" / "realcode"
DRAWING = replacement_literal
"""The module whose ``replacement`` draws the ``after`` design (``--drawing``: another one)."""
FEATURES = ["same_in_file", "text_elsewhere", "equals_argument", "is_str", "is_int", "is_float",
            "is_bytes", "is_bool", "length", "magnitude", "round", "zeros", "significant", "digits",
            "upper", "space", "punct", "identifier", "words_elsewhere", "repo_same", "repo_words",
            "in_test", "in_compared", "test_words"]


def _tests(tree: ast.Module) -> dict[str, ast.AST]:
    """Every test function of a module, by ``Class::method`` or ``function``."""
    found: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            found.update({f"{node.name}::{m.name}": m for m in node.body
                          if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                          and m.name.startswith("test")})
    return found


def _target(lines: list[str], pairs) -> tuple[ast.expr, ast.expr, list[str]] | None:
    """The constant the grader changes (``mutants._mutant``'s choice), what it is compared
    with and the call's arguments."""
    for expectation, compared in reversed(pairs):
        parts = [expectation.operand if isinstance(expectation, ast.UnaryOp) else expectation]
        while parts and isinstance(parts[-1], (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            node = parts.pop()
            parts += list(node.values if isinstance(node, ast.Dict) else node.elts)
        for constant in reversed(parts):
            if isinstance(constant, ast.Constant) and constant.lineno == constant.end_lineno:
                return constant, compared, call_arguments(lines, compared)
    return None


def _keys(node: ast.AST, skip: ast.AST | None = None) -> Counter:
    """The literal values (``literal_key``) of the constants under ``node``, ``skip`` aside."""
    return Counter(literal_key(n.value) for n in ast.walk(node)
                   if isinstance(n, ast.Constant) and n is not skip and literal_key(n.value))


class Context:
    """What a forger reads around one expectation: its file (the literal removed once), the
    repository's other files, the test function and the compared expression."""

    def __init__(self, source: Source, rest: str, counts: Counter, words: Counter,
                 args: list[str], in_test: Counter, in_compared: Counter, test_words: set[str]):
        self.source, self.rest, self.counts, self.words = source, rest, counts, words
        self.args, self.in_test, self.in_compared = args, in_test, in_compared
        self.test_words = test_words


def roundness(literal: str, value: object) -> tuple[float, float]:
    """``(zeros, significant)`` of a number as written: how many zeros end an integer of 2 digits
    and more (``250``: 1, ``1000``: 3; else 0), and how many significant digits its text has
    (``0.25``: 2, ``100.0``: 1, ``1234``: 4); ``(0, 0)`` for anything else."""
    if not isinstance(value, (int, float)) or type(value) is bool:
        return 0.0, 0.0
    mantissa = literal.lstrip("-+").lower().replace("_", "").split("e")[0]
    if not mantissa.replace(".", "", 1).isdigit():
        return 0.0, 0.0  # 0x1f, 0o17, inf
    digits = mantissa.replace(".", "").lstrip("0")
    zeros = (len(mantissa) - len(mantissa.rstrip("0"))
             if type(value) is int and len(mantissa) > 1 and mantissa[0] != "0" else 0)
    return float(zeros), float(len(digits.rstrip("0")))


def features(literal: str, ctx: Context) -> list[float]:
    value = literal_value(literal)
    body = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
    own = Counter(WORD.findall(body))
    found = [w for w in own if ctx.words[w] > 0]
    in_repo = [w for w in own if ctx.source.repo.words_elsewhere(ctx.source.name, w) > 0]
    number = isinstance(value, (int, float)) and type(value) is not bool
    key = literal_key(value)
    return [math.log1p(max(0, ctx.counts[(type(value), value)])),
            float(bool(body) and body in ctx.rest),
            float(any(literal_value(a) == value and type(literal_value(a)) is type(value)
                      for a in ctx.args)),
            *(float(type(value) is t) for t in (str, int, float, bytes, bool)),
            math.log1p(len(literal)), math.log10(abs(value) + 1) if number else 0.0,
            float(number and value != 0 and value % 10 == 0), *roundness(literal, value),
            *(sum(f(c) for c in body) / max(1, len(body))
              for f in (str.isdigit, str.isupper, str.isspace, lambda c: not c.isalnum())),
            float(body.isidentifier()), len(found) / max(1, len(own)),
            math.log1p(max(0, ctx.source.repo.elsewhere(ctx.source.name, key))),
            len(in_repo) / max(1, len(own)),
            float(ctx.in_test[key] > 0), float(ctx.in_compared[key] > 0),
            (len(replacement_literal.words_of(value) & ctx.test_words)
             / max(1, len(replacement_literal.words_of(value))))]


def samples(source: Source, rng: random.Random, per_file: int | None) -> dict[str, list]:
    """One real and one mutant sample per design for each test of ``source`` with a literal
    expectation (``per_file`` of them drawn with ``rng``; None: every one)."""
    text = source.text
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    lines = text.split("\n")
    pool = literal_pool(tree, text)
    counts = Counter((type(literal_value(p)), literal_value(p)) for p in pool)
    words_all = Counter(WORD.findall(text))
    vocab = vocabulary(text)
    out: dict[str, list] = {"real": [], "before": [], "after": []}
    tests = _tests(tree)
    seen = observations(tree, text, pool)  # how the file writes its expectations
    quals = sorted(tests)
    rng.shuffle(quals)
    for qual in quals[:per_file]:
        found = _target(lines, expectations(tree, qual))
        if found is None:
            continue
        node, compared, args = found
        raw = lines[node.lineno - 1].encode()
        old = raw[node.col_offset:node.end_col_offset].decode(errors="replace")
        value = literal_value(old)
        if value is None:
            continue
        others = counts.copy()
        others[(type(value), value)] -= 1
        beside = _beside(tests[qual], node)
        ctx = Context(source, text.replace(old, "", 1) if old in text else text, others,
                      words_all - Counter(WORD.findall(str(value))), args,
                      _keys(tests[qual], skip=node), _keys(compared), beside[0])
        given = inspect.signature(DRAWING.replacement).parameters  # an older drawing has fewer
        local = {"local": literal_pool(tests[qual], text)} if "local" in given else {}
        if "rates" in given:  # the file's other tests, as the prover gives them
            local["rates"] = shares([o for at, o in seen.items() if at != id(tests[qual])])
        if "beside" in given:  # the test's other literals, as mutants._mutant gives them
            local["beside"] = beside
        if "room" in given:
            local["room"] = max(map(len, lines)) - len(lines[node.lineno - 1])
        news = {"before": replacement_literal.mutate_literal(old, rng),
                "after": DRAWING.replacement(old, rng, pool, args, vocab, **local)}
        if any(new is None for new in news.values()):
            continue
        out["real"].append(features(old, ctx))
        for design, new in news.items():
            out[design].append(features(new, ctx))
    return out


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Mann-Whitney: P(a mutant scores above a real expectation), ties counted half."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    i = 0
    while i < len(scores):
        j = i
        while j + 1 < len(scores) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    pos = labels == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def logistic(x: np.ndarray, y: np.ndarray, steps: int = 400) -> np.ndarray:
    mean, std = x.mean(0), x.std(0) + 1e-9
    z = np.hstack([(x - mean) / std, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    for _ in range(steps):  # gradient descent, a little L2
        p = 1 / (1 + np.exp(-z @ w))
        w -= 0.5 * (z.T @ (p - y) / len(y) + 1e-3 * w)
    return np.concatenate([w[:-1] / std, [w[-1] - (w[:-1] * mean / std).sum()]])


def detector_auc(real: list, mutant: list, groups: list, folds: int = 5) -> float:
    x = np.array(real + mutant, dtype=float)
    y = np.array([0] * len(real) + [1] * len(mutant), dtype=float)
    g = np.array(groups + groups)
    scores = np.zeros(len(x))
    for fold in range(folds):
        test = g % folds == fold
        w = logistic(x[~test], y[~test])
        scores[test] = x[test] @ w[:-1] + w[-1]
    return auc(scores, y)


def measure(sources: list[Source], rng: random.Random, per_file: int | None = 8) -> dict:
    real, designs, groups = [], {"before": [], "after": []}, []
    for index, source in enumerate(sources):
        got = samples(source, rng, per_file)
        for i in range(len(got.get("real", []))):
            real.append(got["real"][i])
            groups.append(index)
            for design in designs:
                designs[design].append(got[design][i])
    result = {"files": len(sources), "samples": len(real)}
    for design, mutant in designs.items():
        if not real:
            result[design] = {"auc": float("nan"), "best_feature": "none", "best_feature_auc": float("nan")}
            continue
        x = np.array(real + mutant, dtype=float)
        y = np.array([0] * len(real) + [1] * len(mutant))
        single = {name: max(auc(x[:, k], y), auc(-x[:, k], y)) for k, name in enumerate(FEATURES)}
        best = max(single, key=single.get)
        result[design] = {"auc": detector_auc(real, mutant, groups), "best_feature": best,
                          "best_feature_auc": single[best]}
    return result


def _installed(args: argparse.Namespace, rng: random.Random) -> None:
    result = measure(installed(args.packages.split(","), args.files, rng), rng)
    print(f"test files: {result['files']}, expectations: {result['samples']}")
    print("| design | detector AUC (logistic, 5 folds by file) | best single feature | its AUC |")
    print("|---|---|---|---|")
    for design in ("before", "after"):
        r = result[design]
        print(f"| {design} | {r['auc']:.3f} | {r['best_feature']} | {r['best_feature_auc']:.3f} |")
    verdict = "met" if result["after"]["auc"] <= 0.6 else "NOT met"
    print(f"target: detector AUC after <= 0.6: {verdict} ({result['after']['auc']:.3f}; "
          f"before {result['before']['auc']:.3f})")


def _realcode(args: argparse.Namespace, rng: random.Random) -> None:
    names = [n for n in args.realcode.split(",") if n] if args.realcode != "all" else None
    projects = realcode(Path(args.cache), Path(args.instances), names, args.files, args.seed)
    if not projects:
        raise SystemExit(f"mutant_detector: no real project's sdist under {args.cache}/*/sdist"
                         f"{' named ' + args.realcode if names else ''}; build one with `ratchet swe "
                         "make-instances` (it caches the sdist there) or pass --cache")
    print(f"detector AUC: mean over {args.repeats} draws of the mutants (seeds {args.seed}.."
          f"{args.seed + args.repeats - 1}), [lowest, highest]; chance is 0.5")
    print("| project | test files | expectations | design | detector AUC (logistic, 5 folds by "
          "file) | best single feature | its AUC |")
    print("|---|---|---|---|---|---|---|")
    after = {}
    for project, (sources, origin) in projects.items():
        runs = [measure(sources, random.Random(args.seed + r), per_file=None)
                for r in range(args.repeats)]
        for design in ("before", "after"):
            aucs = [r[design]["auc"] for r in runs]
            best = runs[0][design]
            mean = sum(aucs) / len(aucs)
            after[project] = mean if design == "after" else after.get(project)
            print(f"| {project} | {runs[0]['files']} {origin} | {runs[0]['samples']} | {design} | "
                  f"{mean:.3f} [{min(aucs):.3f}, {max(aucs):.3f}] | {best['best_feature']} | "
                  f"{best['best_feature_auc']:.3f} |")
    verdict = "met" if all(a <= 0.6 for a in after.values()) else "NOT met"
    print(f"target: detector AUC after <= 0.6 on every project: {verdict} ("
          + ", ".join(f"{p} {a:.3f}" for p, a in after.items()) + ")")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=600,
                        help="test files drawn (installed packages; a real project without an "
                             "instance set)")
    parser.add_argument("--packages", default=PACKAGES)
    parser.add_argument("--realcode", default=None, metavar="NAMES",
                        help="real projects instead of installed packages: 'all', or names "
                             "(flask, django-4.2.16, ...) of sdists cached under --cache")
    parser.add_argument("--cache", default=str(CACHE))
    parser.add_argument("--instances", default=str(INSTANCES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5,
                        help="real projects: draws of the mutants averaged over (seeds from --seed)")
    parser.add_argument("--drawing", default=None, metavar="DRAWING_PY",
                        help="draw 'after' with this copy of proof/replacement_literal.py instead "
                             "(an older one: git show REV:ratchet_ray/suites/swebench/proof/"
                             "replacement_literal.py, proof/literals.py before the split)")
    args = parser.parse_args()
    if args.drawing:
        global DRAWING
        spec = importlib.util.spec_from_file_location("drawing_literals", args.drawing)
        DRAWING = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(DRAWING)
    rng = random.Random(args.seed)
    (_realcode if args.realcode else _installed)(args, rng)


if __name__ == "__main__":
    main()
