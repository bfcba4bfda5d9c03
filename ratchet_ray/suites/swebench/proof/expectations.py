"""Where a test writes what it expects: the literals a mutant may change, read from its source.

Contracts:
- ``literal(node)``: whether ``node`` is written as a literal expectation is (a constant other
  than None/Ellipsis, a signed number, a non-empty container of literals).
- ``spanned(fn)``: the literal expectations of the test function ``fn`` in source order, each
  ``(expected, compared, (first line, last line))``: ``assert <expr> == <literal>`` (either
  side), ``assert <expr> is True/False``, ``self.assertEqual(x, <literal>)`` and its kin
  (``EQUAL_CALLS``); the lines are those of the statement or call holding it.
- ``reaching(fn, lines)``: for the checks of ``fn`` that span one of ``lines`` and write no
  literal expectation, the literals their outcome comes from, in the same shape. An equality of
  two expressions (``assert f(x, 2) == g(y)``, ``self.assertEqual(f(x), expected)``): the
  literal a compared name was last assigned before it (``expected = [...]``), the rows of a
  literal table a ``for`` loop around it binds the name from (django's ``for value, expected
  in cases:`` with ``subTest``), else the constants written in it. Any other ``assert`` or
  checking call (``assert lookup(8) is None``, ``self.assertIn("a", out)``,
  ``check_output(run(2), expected)``): the literals its calls are given, directly or through
  such a name. Each comes with the check's lines, so a mutant made there counts as one at the
  check.
- ``fed(fn, line)``: where the statement at ``line`` checks nothing (the base code raised in an
  assignment, ``rows = parse(text)``), the checks after it that read what it binds (or the
  object whose method it calls), directly or through a later assignment: their literal
  expectations (``spanned``'s), and for those that write none, the literals that reach them
  (``reaching``'s). Those are the checks a forger who makes that statement return a value equal
  to anything must pass, which one who lets the rest run honestly does not touch.

Why a mutant sits where the base code fails a FAIL_TO_PASS test, and at a literal reaching that
check where it writes none: docs/grading.md, "Where a FAIL_TO_PASS mutant sits" (a mutant
elsewhere is spared by code that forces only the failing check).
"""

from __future__ import annotations

import ast

EQUAL_CALLS = ("assertEqual", "assertEquals", "assertListEqual", "assertTupleEqual",
               "assertDictEqual", "assertSetEqual", "assertSequenceEqual", "assertIs",
               "assertMultiLineEqual", "assertCountEqual", "assertAlmostEqual")

Spanned = tuple[ast.expr, ast.expr, tuple[int, int]]
"""``(expected, compared, (first line, last line))``: a literal, what it is compared with, and
the lines of the statement or call that compares them."""


def literal(node: ast.expr | None) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    if isinstance(node, ast.Constant):
        return node.value is not None and node.value is not Ellipsis
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return bool(node.elts) and all(literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return bool(node.values) and all(k is not None for k in node.keys) and all(
            literal(v) for v in node.values)
    return False


def _equal_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"
            and node.func.attr in EQUAL_CALLS and len(node.args) >= 2)


def _span(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.end_lineno or node.lineno


def spanned(fn: ast.FunctionDef) -> list[Spanned]:
    found = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
            cmp = node.test
            if len(cmp.ops) == 1 and isinstance(cmp.ops[0], (ast.Eq, ast.Is)):
                right, left = cmp.comparators[0], cmp.left
                if isinstance(cmp.ops[0], ast.Is):
                    if isinstance(right, ast.Constant) and type(right.value) is bool:
                        found.append((right, left, _span(node)))
                elif literal(right):
                    found.append((right, left, _span(node)))
                elif literal(left):
                    found.append((left, right, _span(node)))
        elif _equal_call(node):
            first, second = node.args[:2]
            if literal(second):
                found.append((second, first, _span(node)))
            elif literal(first):
                found.append((first, second, _span(node)))
    return sorted(found, key=lambda found: (found[0].lineno, found[0].col_offset))


def _compared_pair(node: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """``(expected side, other side)`` of an equality assertion that writes no literal on
    either side (the right of ``==``, an assert call's second argument, by convention)."""
    if (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)
            and len(node.test.ops) == 1 and isinstance(node.test.ops[0], ast.Eq)):
        pair = node.test.comparators[0], node.test.left
    elif _equal_call(node) and node.func.attr != "assertIs":
        pair = node.args[1], node.args[0]
    else:
        return None
    return None if literal(pair[0]) or literal(pair[1]) else pair


def reaching(fn: ast.FunctionDef, lines: list[int]) -> list[Spanned]:
    direct = [span for _, _, span in spanned(fn)]
    found: list[Spanned] = []
    for node in ast.walk(fn):
        if not _asserting(node):
            continue
        span = _span(node)
        if (not any(span[0] <= line <= span[1] for line in lines)
                or any(span[0] <= first and last <= span[1] for first, last in direct)):
            continue  # not failing, or it writes its expectation (``spanned``'s)
        pair = _compared_pair(node.value if isinstance(node, ast.Expr) else node)
        if pair is None:  # another check: the literals its calls are given
            found += [(source, call, span) for call in ast.walk(node)
                      if isinstance(call, ast.Call)
                      for argument in [*call.args, *(k.value for k in call.keywords)]
                      for source in ([argument] if literal(argument)
                                     else _bound(fn, node, argument))]
            continue
        expected, other = pair
        for side, compared in ((expected, other), (other, expected)):
            # a name both sides read (``assertEqual(urlize(value), value)``) changes both
            bound = [] if _reads(side) & _reads(compared) else _bound(fn, node, side)
            if bound:
                found += [(source, compared, span) for source in bound]
                break
        else:
            found += [(constant, compared, span) for side, compared in
                      ((expected, other), (other, expected)) for constant in ast.walk(side)
                      if isinstance(constant, ast.Constant) and literal(constant)]
    return found


def _asserting(node: ast.AST) -> bool:
    """An ``assert`` statement, or a call statement whose function's name says it checks
    (``self.assertIn``, ``assert_equal``, ``self.check_output``, ``expect``, ``verify``)."""
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name.lower().startswith(("assert", "check", "expect", "verify"))
    return False


def _bound(fn: ast.FunctionDef, assertion: ast.AST, side: ast.expr) -> list[ast.expr]:
    """The literals a bare name on one side of ``assertion`` holds there: the value of its last
    plain assignment before the assertion, else the rows of the literal table (written in the
    loop, or assigned to a name before it) of a ``for`` loop around the assertion that binds it
    (each row's element at the name's place in the loop's target)."""
    if not isinstance(side, ast.Name):
        return []
    loops = [node for node in ast.walk(fn) if isinstance(node, ast.For)
             and node.lineno < assertion.lineno <= (node.end_lineno or node.lineno)]
    for loop in sorted(loops, key=lambda loop: -loop.lineno):  # the innermost first
        place = _place(loop.target, side.id)
        if place is None:
            continue
        table = loop.iter
        if isinstance(table, ast.Name):
            table = _assigned(fn, table.id, loop.lineno)
        if not isinstance(table, (ast.List, ast.Tuple)):
            return []
        rows = [_element(row, place) for row in table.elts]
        return [row for row in rows if row is not None and literal(row)]
    value = _assigned(fn, side.id, assertion.lineno)
    return [value] if value is not None and literal(value) else []


def _place(target: ast.expr, name: str) -> tuple[int, ...] | None:
    """Where ``name`` sits in a loop's target: ``()`` for the target itself, ``(1,)`` for the
    second of ``a, b``, ``(1, 0)`` for ``a, (b, c)``'s ``b``; None when it is not there."""
    if isinstance(target, ast.Name):
        return () if target.id == name else None
    if isinstance(target, (ast.Tuple, ast.List)):
        for index, part in enumerate(target.elts):
            inner = _place(part, name)
            if inner is not None:
                return (index, *inner)
    return None


def _element(row: ast.expr, place: tuple[int, ...]) -> ast.expr | None:
    for index in place:
        if not isinstance(row, (ast.Tuple, ast.List)) or index >= len(row.elts):
            return None
        row = row.elts[index]
    return row


def _assigned(fn: ast.FunctionDef, name: str, before: int) -> ast.expr | None:
    """The value of the last plain ``name = value`` in ``fn`` above line ``before``."""
    last = None
    for node in ast.walk(fn):
        if (isinstance(node, ast.Assign) and node.lineno < before and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name
                and (last is None or node.lineno > last.lineno)):
            last = node
    return None if last is None else last.value


def fed(fn: ast.FunctionDef, line: int) -> list[Spanned]:
    statements = [node for node in ast.walk(fn) if isinstance(node, ast.stmt) and node is not fn
                  and _span(node)[0] <= line <= _span(node)[1]]
    if not statements:
        return []
    names = _bound_names(min(statements, key=lambda node: _span(node)[1] - _span(node)[0]))
    for node in sorted((node for node in ast.walk(fn) if isinstance(node, ast.Assign)
                        and node.lineno > line), key=lambda node: node.lineno):
        if _reads(node.value) & names:
            names |= set().union(*map(_reads, node.targets))
    checks = [node.lineno for node in ast.walk(fn) if _asserting(node) and node.lineno > line
              and _reads(node.test if isinstance(node, ast.Assert) else ast.Tuple(
                  [*node.value.args, *(k.value for k in node.value.keywords)])) & names]
    return [x for x in spanned(fn) if x[2][0] in checks] + reaching(fn, checks)


def _reads(node: ast.AST) -> set[str]:
    return {name.id for name in ast.walk(node) if isinstance(name, ast.Name)}


def _bound_names(statement: ast.stmt) -> set[str]:
    """The names a statement binds (an assignment's, a ``with ... as``'s, a loop's targets), or
    for a call statement, the object whose method it calls (``parser.feed(text)``: ``parser``)."""
    if isinstance(statement, ast.Assign):
        return set().union(*map(_reads, statement.targets))
    if isinstance(statement, (ast.AugAssign, ast.AnnAssign, ast.For)):
        return _reads(statement.target)
    if isinstance(statement, ast.With):
        return set().union(*(_reads(i.optional_vars) for i in statement.items if i.optional_vars))
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return set()
    owner = statement.value.func
    while isinstance(owner, ast.Attribute):
        owner = owner.value
    return {owner.id} if isinstance(owner, ast.Name) and owner is not statement.value.func else set()
