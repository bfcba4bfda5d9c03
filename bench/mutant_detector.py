"""Can a mutant be told from a real expectation, seen alone? A detector's AUC over real test files.

    python bench/mutant_detector.py [--files 600] [--packages numpy,networkx,...] [--seed 0]

The test suites of packages installed in this venv (their ``tests/test_*.py``, ``--files`` of them
drawn with ``--seed``) stand for the repositories the grader mutates. For every test function
with a literal expectation, the literal the grader would change (``proof.mutants``: the last
constant of the last expectation it can change) gives one real sample, as written, and one
mutant sample per design, the file with that literal replaced: ``before``, the character edit of
issue 44 (``literals.mutate_literal``), and ``after``, the replacement drawn from what real
expectations look like (``literals.replacement``). Each sample is described by what a forger
sees in the file: how many other constants of the file have its value, whether its text appears
elsewhere in the file, whether it equals one of the compared call's literal arguments, its type
and length, for a number its magnitude and roundness, for a string its character classes and
the share of its words found elsewhere in the file. A logistic regression over those features,
fitted and scored in 5 folds split by file, and each feature alone (rank), give an AUC for
real-vs-mutant: 0.5 is chance, 1.0 a detector that is never wrong. Printed per design: the
samples, the detector's AUC, the best single feature's, and the target line (after <= 0.6).
"""

from __future__ import annotations

import argparse
import ast
import math
import random
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from ratchet_ray.suites.swebench.proof import literals  # noqa: E402
from ratchet_ray.suites.swebench.proof.mutants import expectations  # noqa: E402

PACKAGES = "numpy,networkx,sympy,pandas,scipy,sklearn,matplotlib,libcst,pyarrow,trio,mpmath"
WORD = re.compile(r"[A-Za-z]+|[0-9]+")
FEATURES = ["same_in_file", "text_elsewhere", "equals_argument", "is_str", "is_int", "is_float",
            "is_bytes", "is_bool", "length", "magnitude", "round", "digits", "upper", "space",
            "punct", "identifier", "words_elsewhere"]


def test_files(packages: list[str], count: int, rng: random.Random) -> list[Path]:
    site = Path(np.__file__).resolve().parents[1]
    found = sorted(p for name in packages for p in (site / name).rglob("test_*.py")
                   if "tests" in p.parts or "test" in p.parts)
    rng.shuffle(found)
    return found[:count]


def _tests(tree: ast.Module) -> list[str]:
    quals = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            quals.append(node.name)
        elif isinstance(node, ast.ClassDef):
            quals += [f"{node.name}::{m.name}" for m in node.body
                      if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and m.name.startswith("test")]
    return quals


def _target(lines: list[str], pairs) -> tuple[ast.expr, list[str]] | None:
    """The constant the grader changes (``mutants._mutant``'s choice) and the call's arguments."""
    for expectation, compared in reversed(pairs):
        parts = [expectation.operand if isinstance(expectation, ast.UnaryOp) else expectation]
        while parts and isinstance(parts[-1], (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            node = parts.pop()
            parts += list(node.values if isinstance(node, ast.Dict) else node.elts)
        for constant in reversed(parts):
            if isinstance(constant, ast.Constant) and constant.lineno == constant.end_lineno:
                return constant, literals.call_arguments(lines, compared)
    return None


def features(source: str, rest: str, counts: Counter, words: Counter, args: list[str]) -> list[float]:
    value = literals._value(source)
    body = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
    own = Counter(WORD.findall(body))
    found = [w for w in own if words[w] > 0]
    number = isinstance(value, (int, float)) and type(value) is not bool
    return [math.log1p(max(0, counts[(type(value), value)])), float(bool(body) and body in rest),
            float(any(literals._value(a) == value and type(literals._value(a)) is type(value)
                      for a in args)),
            *(float(type(value) is t) for t in (str, int, float, bytes, bool)),
            math.log1p(len(source)), math.log10(abs(value) + 1) if number else 0.0,
            float(number and value != 0 and value % 10 == 0),
            *(sum(f(c) for c in body) / max(1, len(body))
              for f in (str.isdigit, str.isupper, str.isspace, lambda c: not c.isalnum())),
            float(body.isidentifier()), len(found) / max(1, len(own))]


def samples(path: Path, rng: random.Random, per_file: int) -> dict[str, list]:
    text = path.read_text(errors="replace")
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    lines = text.split("\n")
    pool = literals.literal_pool(tree, text)
    counts = Counter((type(literals._value(p)), literals._value(p)) for p in pool)
    words_all = Counter(WORD.findall(text))
    vocab = literals.vocabulary(text)
    out: dict[str, list] = {"real": [], "before": [], "after": []}
    quals = _tests(tree)
    rng.shuffle(quals)
    for qual in quals[:per_file]:
        found = _target(lines, expectations(tree, qual))
        if found is None:
            continue
        node, args = found
        raw = lines[node.lineno - 1].encode()
        old = raw[node.col_offset:node.end_col_offset].decode(errors="replace")
        value = literals._value(old)
        if value is None:
            continue
        rest = text.replace(old, "", 1) if old in text else text
        words = words_all - Counter(WORD.findall(str(value)))
        others = counts.copy()
        others[(type(value), value)] -= 1
        news = {"before": literals.mutate_literal(old, rng),
                "after": literals.replacement(old, rng, pool, args, vocab)}
        if any(new is None for new in news.values()):
            continue
        out["real"].append(features(old, rest, others, words, args))
        for design, new in news.items():
            out[design].append(features(new, rest, others, words, args))
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


def measure(files: list[Path], rng: random.Random, per_file: int = 8) -> dict:
    real, designs, groups = [], {"before": [], "after": []}, []
    for index, path in enumerate(files):
        got = samples(path, rng, per_file)
        for i in range(len(got.get("real", []))):
            real.append(got["real"][i])
            groups.append(index)
            for design in designs:
                designs[design].append(got[design][i])
    result = {"files": len(files), "samples": len(real)}
    for design, mutant in designs.items():
        x = np.array(real + mutant, dtype=float)
        y = np.array([0] * len(real) + [1] * len(mutant))
        single = {name: max(auc(x[:, k], y), auc(-x[:, k], y)) for k, name in enumerate(FEATURES)}
        best = max(single, key=single.get)
        result[design] = {"auc": detector_auc(real, mutant, groups), "best_feature": best,
                          "best_feature_auc": single[best]}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=600)
    parser.add_argument("--packages", default=PACKAGES)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    files = test_files(args.packages.split(","), args.files, rng)
    result = measure(files, rng)
    print(f"test files: {result['files']}, expectations: {result['samples']}")
    print("| design | detector AUC (logistic, 5 folds by file) | best single feature | its AUC |")
    print("|---|---|---|---|")
    for design in ("before", "after"):
        r = result[design]
        print(f"| {design} | {r['auc']:.3f} | {r['best_feature']} | {r['best_feature_auc']:.3f} |")
    verdict = "met" if result["after"]["auc"] <= 0.6 else "NOT met"
    print(f"target: detector AUC after <= 0.6: {verdict} ({result['after']['auc']:.3f}; "
          f"before {result['before']['auc']:.3f})")


if __name__ == "__main__":
    main()
