"""Local SWE-bench instances graded from their log alone, as django's and sympy's are.

- ``ratchet__ucalc-1`` (repo ``ratchet/ucalc``, parser ``parse_log_django``): ``unittest``
  classes under ``tests/calc_tests/``, run by a stand-in for django's ``tests/runtests.py``
  (labels, unittest's verbose runner, the same lines django's prints). ``add`` subtracts: F2P
  ``OpsTests.test_add``; P2P ``test_mul``, ``test_tags`` (an equality ``assertNotEqual`` cannot
  invert), ``test_text``, ``MoreTests.test_neg`` and
  ``test_mul_zero``, which has a docstring, so its log name is that docstring's first line (as
  many of django's are).
- ``ratchet__scalc-1`` (repo ``ratchet/scalc``, parser ``parse_log_sympy``): test functions in
  ``calc/tests/``, run by a stand-in for sympy's ``bin/test`` (one ``name ok``/``name F``/``name
  E`` line per test, the file's last one suffixed ``[OK]``/``[FAIL]`` so that swebench's parser
  skips it, as it skips sympy's; then a header and traceback per failure). The same bug: F2P
  ``test_add``; ``test_mul_zero``, last in its file, is in no log line the parser reads.

Every image builds locally from ``swebench_instances.BASE_IMAGE`` (Python 3.11: unittest names
tests ``name (module.Class.name)``).
"""

from __future__ import annotations

import json

import swebench_instances as base

OPS = "import collections\n\n" + base.OPS + '''

def upper(s):
    return s.upper()


def neg(x):
    return -x


class Tags(collections.UserList, list):
    """Equal to a list of its names; ``!=`` is list's own (on its empty base), not ``==``
    negated: like Django's ErrorList, it is equal and unequal to that list at once."""

    __hash__ = None

    def __eq__(self, other):
        return list(self.data) == other


def tags(*names):
    return Tags(names)
'''
FIXED_OPS = OPS.replace("return a - b", "return a + b")

RUNTESTS = '''"""A stand-in for django's tests/runtests.py: its labels run by unittest's verbose runner."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
VALUED = {"--parallel", "--settings", "--verbosity"}
labels, skip = [], False
for arg in sys.argv[1:]:
    if skip:
        skip = False
    elif arg.startswith("-"):
        skip = arg in VALUED
    else:
        labels.append(arg)
suite = unittest.defaultTestLoader.loadTestsFromNames(labels)
result = unittest.TextTestRunner(verbosity=2).run(suite)
sys.exit(0 if result.wasSuccessful() else 1)
'''

UNITTEST_BASE = '''import unittest

from calc.ops import mul, neg, tags, upper


class OpsTests(unittest.TestCase):
    def test_mul(self):
        self.assertEqual(mul(2, 3), 6)

    def test_tags(self):
        self.assertEqual(tags("a", "b"), ["a", "b"])

    def test_mul_zero(self):
        """Zero times anything is zero."""
        self.assertEqual(mul(0, 7), 0)

    def test_text(self):
        self.assertEqual(upper('ab'), 'AB')


class MoreTests(unittest.TestCase):
    def test_neg(self):
        self.assertTrue(neg(-1) > 0)
'''
UNITTEST_AFTER = UNITTEST_BASE.replace(
    "from calc.ops import mul, neg, tags, upper", "from calc.ops import add, mul, neg, tags, upper").replace(
    "class OpsTests(unittest.TestCase):\n",
    "class OpsTests(unittest.TestCase):\n    def test_add(self):\n"
    "        self.assertEqual(add(2, 3), 5)\n\n")
UNITTEST_FILES = {"calc/__init__.py": "", "calc/ops.py": OPS, "tests/runtests.py": RUNTESTS,
                  "tests/calc_tests/__init__.py": "", "tests/calc_tests/test_ops.py": UNITTEST_BASE}
UNITTEST_FIXED = {"calc/ops.py": FIXED_OPS}

SYMPY_RUNNER = '''"""A stand-in for sympy's bin/test: each file's test functions in order, one line
each, the file's last line ending in its result (``[OK]``/``[FAIL]``) as sympy's verbose reporter
writes it."""
import importlib.util
import os
import sys
import traceback

sys.path.insert(0, os.getcwd())
failures = []
for path in [a for a in sys.argv[1:] if a.endswith(".py")]:
    spec = importlib.util.spec_from_file_location(path[:-3].replace("/", "."), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines = []
    for name, fn in list(vars(module).items()):
        if not (name.startswith("test_") and callable(fn)):
            continue
        try:
            fn()
            lines.append(f"{name} ok")
        except AssertionError:
            lines.append(f"{name} F")
            failures.append((path, name, traceback.format_exc()))
        except Exception:
            lines.append(f"{name} E")
            failures.append((path, name, traceback.format_exc()))
    failed = any(line.endswith((" F", " E")) for line in lines)
    print(f"{path}[{len(lines)}] ")
    print("\\n".join(lines) + ("     [FAIL]" if failed else "     [OK]"))
for path, name, trace in failures:
    print(f"{'_' * 20} {path}:{name} {'_' * 20}")
    print(trace)
sys.exit(1 if failures else 0)
'''
SYMPY_BASE = ('from calc.ops import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n\n\n'
              'def test_mul_zero():\n    assert mul(0, 7) == 0\n')
SYMPY_AFTER = SYMPY_BASE.replace("from calc.ops import mul\n", "from calc.ops import add, mul\n\n\n"
                                 "def test_add():\n    assert add(2, 3) == 5\n")
SYMPY_FILES = {"calc/__init__.py": "", "calc/ops.py": OPS, "bin/test": SYMPY_RUNNER,
               "calc/tests/__init__.py": "", "calc/tests/test_ops.py": SYMPY_BASE,
               # no graded test here, and names a canary of test_ops.py could draw
               "calc/tests/test_more.py": ('from calc.ops import upper\n\n\n'
                                           'def test_zero_add():\n    assert upper("a") == "A"\n\n\n'
                                           'def test_add_mul():\n    assert upper("") == ""\n')}
SYMPY_FIXED = {"calc/ops.py": FIXED_OPS}

_UNITTEST = "calc_tests.test_ops"
GRADED = {
    "unittest": [f"test_add ({_UNITTEST}.OpsTests.test_add)", f"test_mul ({_UNITTEST}.OpsTests.test_mul)",
                 f"test_tags ({_UNITTEST}.OpsTests.test_tags)", f"test_text ({_UNITTEST}.OpsTests.test_text)",
                 f"test_neg ({_UNITTEST}.MoreTests.test_neg)",
                 "Zero times anything is zero."],
    "sympy": ["test_add", "test_mul"],
}
SPECS = {  # instance id: (repo, files, test file, the test patch's target text, parser, command)
    "ratchet__ucalc-1": ("ratchet/ucalc", UNITTEST_FILES, "tests/calc_tests/test_ops.py",
                         UNITTEST_AFTER, "parse_log_django",
                         f"python3 tests/runtests.py --verbosity 2 --settings=test_sqlite "
                         f"--parallel 1 {_UNITTEST}"),
    "ratchet__scalc-1": ("ratchet/scalc", SYMPY_FILES, "calc/tests/test_ops.py", SYMPY_AFTER,
                         "parse_log_sympy",
                         "python3 bin/test -C --verbose calc/tests/test_ops.py calc/tests/test_more.py"),
}


def unittest_instance_fields() -> dict:
    return {"FAIL_TO_PASS": GRADED["unittest"][:1], "PASS_TO_PASS": GRADED["unittest"][1:]}


def _diff(path: str, before: str, after: str) -> str:
    import difflib

    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 f"a/{path}", f"b/{path}")
    return f"diff --git a/{path} b/{path}\n" + "".join(lines)


def gold(instance_id: str) -> str:
    return _diff("calc/ops.py", OPS, FIXED_OPS)


def make_instances() -> list[dict]:
    instances = []
    for instance_id, (repo, files, test_file, after, parser, command) in SPECS.items():
        commit = base.base_commit(files)
        test_patch = _diff(test_file, files[test_file], after)
        graded = GRADED["unittest" if parser == "parse_log_django" else "sympy"]
        reset = f"git checkout {commit} -- {test_file}"
        script = "\n".join(["#!/bin/bash", "set -uxo pipefail", "cd /testbed", reset,
                            "git apply -v - <<'EOF_114329324912'", test_patch.rstrip("\n"),
                            "EOF_114329324912", ": '>>>>> Start Test Output'", command,
                            ": '>>>>> End Test Output'", reset, ""])
        instances.append({
            "instance_id": instance_id, "repo": repo, "base_commit": commit, "version": "0.1",
            "problem_statement": base.PROBLEMS["ratchet__calc-1"], "hints_text": "",
            "created_at": "2024-01-01T00:00:00Z", "environment_setup_commit": commit,
            "patch": gold(instance_id), "test_patch": test_patch,
            "FAIL_TO_PASS": json.dumps(graded[:1]), "PASS_TO_PASS": json.dumps(graded[1:]),
            "eval_script": script, "log_parser": parser, "eval_type": "pass_and_fail",
            "dockerfile": base.dockerfile(commit, files),
        })
    return instances
