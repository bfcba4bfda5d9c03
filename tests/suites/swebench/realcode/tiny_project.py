"""A tiny local project in a real project's shape, for the build's cheap and bad-input tests.

``write_tree(root, tests=..., network=False)`` writes ``tinycalc`` (a package with a few
functions) and, unless ``tests`` is False, its pytest tests; ``network=True`` makes every test
resolve a host name first, as a suite that needs the network does. ``PROJECT`` is its recipe:
no wheels (the base image's pytest runs it), pytest's log parser.
"""

from __future__ import annotations

from pathlib import Path

from ratchet_ray.suites.swebench.realcode.projects import Project

PROJECT = Project(
    name="tinycalc", repo="ratchet/tinycalc", pypi="tinycalc", version="0.1",
    sdist_sha256=None, wheels=(), dist_name="tinycalc", source_dirs=("src/tinycalc",),
    import_path="src", test_dirs=("tests",), test_command="python3 -m pytest -rA -p no:cacheprovider",
    log_parser="parse_log_pytest", timeout_s=120)

CODE = '''"""Arithmetic helpers."""


def add(a, b):
    total = a + b
    return total


def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def mean(values):
    total = 0
    for v in values:
        total = total + v
    return total / len(values)
'''

TESTS = '''from tinycalc.ops import add, clamp, mean


def test_add():
    assert add(2, 3) == 5


def test_clamp():
    assert clamp(12, 0, 10) == 10
    assert clamp(-1, 0, 10) == 0
    assert clamp(5, 0, 10) == 5


def test_mean():
    assert mean([1, 2, 3, 6]) == 3
'''

NETWORK = '''import socket


def test_reaches_index():
    socket.getaddrinfo("pypi.org", 443)
'''


def write_tree(root: Path, tests: bool = True, network: bool = False) -> Path:
    (root / "src" / "tinycalc").mkdir(parents=True)
    (root / "src" / "tinycalc" / "__init__.py").write_text("")
    (root / "src" / "tinycalc" / "ops.py").write_text(CODE)
    (root / "README.md").write_text("tinycalc: a test project of make-instances.\n")
    if tests:
        (root / "tests").mkdir()
        (root / "tests" / "test_ops.py").write_text(NETWORK if network else TESTS)
    return root
