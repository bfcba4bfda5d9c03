"""Plausibly broken variants of a reference solution: the oracle Solver's answers when the world
draws a failure.

Contract: ``broken_variants(code, limit, rng)`` -> up to ``limit`` ``Variant``s, each the code
with ONE small mutation of the kind a model's slip makes: an off-by-one integer constant, a
flipped comparison (``_COMPARE_SWAP``), a swapped arithmetic or boolean operator
(``_BINOP_SWAP``, ``_BOOL_SWAP``) or a twin builtin or method (``_NAME_SWAP``); a solution
with no such site gets ``return None`` for each returned value (a forgotten result). ``rng``
(the world's, fixed by the seed) picks the sites; a variant identical to the source (after
unparse) is skipped. Nothing inside a ``while`` is mutated: a flipped loop condition can spin
forever and turn a wrong answer into a grader timeout. The variants are plausible slips, not
guaranteed failures: the world's truth counts them as failures, the grade records what the
tests said (an equivalent mutant passes).
"""

from __future__ import annotations

import ast
import copy
import random
from dataclasses import dataclass

_COMPARE_SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
                 ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In}
_BINOP_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.Div: ast.FloorDiv,
               ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd}
_NAME_SWAP = {"max": "min", "min": "max", "any": "all", "all": "any", "upper": "lower",
              "lower": "upper", "startswith": "endswith", "endswith": "startswith",
              "isupper": "islower", "islower": "isupper"}
_BOOL_SWAP = {ast.And: ast.Or, ast.Or: ast.And}


@dataclass(frozen=True)
class Variant:
    """A broken variant: its code and what was changed (``line``: the source line mutated)."""

    code: str
    mutation: str
    line: int


def _sites(tree: ast.AST) -> list[tuple[int, str]]:
    """``(node index in ast.walk order, kind)`` of every mutable site outside ``while``."""
    banned = {id(n) for loop in ast.walk(tree) if isinstance(loop, ast.While)
              for n in ast.walk(loop)}
    sites = []
    for index, node in enumerate(ast.walk(tree)):
        if id(node) in banned:
            continue
        if isinstance(node, ast.Compare) and type(node.ops[0]) in _COMPARE_SWAP:
            sites.append((index, "compare"))
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP_SWAP:
            sites.append((index, "arith"))
        elif isinstance(node, ast.BoolOp) and type(node.op) in _BOOL_SWAP:
            sites.append((index, "bool"))
        elif isinstance(node, ast.Name) and node.id in _NAME_SWAP or (
                isinstance(node, ast.Attribute) and node.attr in _NAME_SWAP):
            sites.append((index, "call"))
        elif (isinstance(node, ast.Constant) and type(node.value) is int
              and 0 <= node.value < 1000):
            sites.append((index, "constant"))
    return sites


def _mutate(tree: ast.AST, index: int, kind: str) -> tuple[ast.AST, str, int]:
    """A copy of ``tree`` with the site ``index`` mutated; what was done and its line."""
    mutant = copy.deepcopy(tree)
    node = next(n for i, n in enumerate(ast.walk(mutant)) if i == index)
    before = ast.unparse(node)
    if kind == "compare":
        node.ops[0] = _COMPARE_SWAP[type(node.ops[0])]()
    elif kind == "arith":
        node.op = _BINOP_SWAP[type(node.op)]()
    elif kind == "bool":
        node.op = _BOOL_SWAP[type(node.op)]()
    elif kind == "call" and isinstance(node, ast.Name):
        node.id = _NAME_SWAP[node.id]
    elif kind == "call":
        node.attr = _NAME_SWAP[node.attr]
    else:
        node.value += 1
    return mutant, f"{kind}: {before} -> {ast.unparse(node)}", getattr(node, "lineno", 0)


def _forgotten_result(tree: ast.AST) -> Variant | None:
    mutant = copy.deepcopy(tree)
    returns = [n for n in ast.walk(mutant) if isinstance(n, ast.Return) and n.value is not None]
    for node in returns:
        node.value = ast.Constant(None)
    if not returns:
        return None
    return Variant(ast.unparse(mutant), "return: every returned value -> None", returns[0].lineno)


def broken_variants(code: str, limit: int, rng: random.Random) -> list[Variant]:
    """Up to ``limit`` single-mutation variants of ``code`` (module contract)."""
    if limit < 1:
        raise ValueError(f"limit {limit}: ask for at least one variant")
    tree = ast.parse(code)
    source = ast.unparse(tree)
    sites = _sites(tree)
    rng.shuffle(sites)
    variants: list[Variant] = []
    for index, kind in sites:
        mutant, what, line = _mutate(tree, index, kind)
        text = ast.unparse(mutant)
        if text != source and all(v.code != text for v in variants):
            variants.append(Variant(text, what, line))
        if len(variants) == limit:
            break
    if not variants:
        fallback = _forgotten_result(tree)
        if fallback is None:
            raise ValueError("the solution has no site to mutate and returns no value; the "
                             "oracle Solver cannot write a broken variant of it")
        variants.append(fallback)
    return variants
