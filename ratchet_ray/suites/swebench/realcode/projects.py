"""Recipes of the real projects ``ratchet swe make-instances`` builds instance sets from.

A ``Project`` is everything the build needs besides the network-free image: the PyPI name and
version of the sdist (its sha256 pinned, so the same name gives the same bytes), the wheels of
its runtime and test dependencies (each pinned ``name==version``, fetched for CPython 3.11 on
manylinux), the folders whose code is mutated, the test command and its swebench log parser, and
the tests deselected with the reason. ``PROJECTS`` lists them by short name;
``resolve_project("flask==2.3.3")`` is the recipe for that version (another version keeps the
recipe's pins but not its sdist digest), an unknown project a ``RealcodeError``.

Test ids are the project's log parser's: pytest's ``path::name``, django's unittest lines
``test_x (app.module.Class.test_x)`` or sympy's bare function name ``test_x``.
``test_file(project, id)`` is the file holding a test (None when the id names none: a django
test whose verbose line is its docstring, a sympy name defined in more than one selected file),
and ``test_label(project, path)`` the argument that runs a test file or folder (pytest and
sympy: the path; django: ``runtests.py``'s dotted label relative to ``tests/``). A sympy name
says nothing of its file, so ``index_tests(project, tree)`` returns the recipe with
``test_index`` read from the tree's test files (other recipes come back as they are).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path


class RealcodeError(RuntimeError):
    """A bad input or a failed step of ``make-instances``; the message is the line the CLI
    prints, naming the problem and the fix."""


@dataclass(frozen=True)
class Project:
    name: str
    """Short name (``flask``): the CLI's ``PROJECT==VERSION`` uses it."""
    repo: str
    """SWE-bench's ``owner/name`` of the repository: picks swebench's log parser."""
    pypi: str
    version: str
    sdist_sha256: str | None
    """The pinned sdist's digest for ``version``; None when a caller asked for another version
    (the digest fetched is then recorded, not checked)."""
    wheels: tuple[str, ...]
    """``name==version`` of every runtime and test dependency (no resolver runs in the image)."""
    dist_name: str
    """The distribution name written in the image's metadata stub (``importlib.metadata``)."""
    source_dirs: tuple[str, ...]
    """Folders (relative to the sdist root) whose modules the bugs are made in."""
    import_path: str
    """Folder (relative to the sdist root) put first on ``PYTHONPATH`` (``src`` layouts)."""
    test_dirs: tuple[str, ...]
    """Folders or files the test command runs; an sdist lacking one has no tests to grade."""
    test_command: str
    """The test command, run in ``/testbed`` with test paths appended."""
    log_parser: str
    deselected: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    """``(test id prefix, why)``: never run (network, timing) and never graded."""
    timeout_s: int = 600
    """Limit of one full run of the test command in a container."""
    test_ids: str = "pytest"
    """How the log parser's ids name tests: ``pytest`` (``path::name``), ``django`` or
    ``sympy``."""
    test_index: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    """sympy's ids: function name -> the one selected test file defining it (``index_tests``)."""


FLASK = Project(
    name="flask", repo="pallets/flask", pypi="flask", version="2.3.3",
    sdist_sha256="09c347a92aa7ff4a8e7f3206795f30d826654baf38b873d0744cd571ca609efc",
    # flask 2.3.3's requirements/tests.txt and its pyproject's lower bounds, as released.
    wheels=("Werkzeug==2.3.7", "Jinja2==3.1.2", "itsdangerous==2.1.2", "click==8.1.7",
            "blinker==1.6.2", "MarkupSafe==2.1.3", "pytest==7.4.0", "asgiref==3.7.2",
            "python-dotenv==1.0.0", "iniconfig==2.0.0", "packaging==23.1", "pluggy==1.2.0"),
    dist_name="Flask", source_dirs=("src/flask",), import_path="src", test_dirs=("tests",),
    test_command="python3 -m pytest -rA -p no:cacheprovider",
    log_parser="parse_log_pytest",
)

# django 4.2 LTS (Python 3.11), graded as SWE-bench grades django: its own runner, one process,
# sqlite, parse_log_django. The labels are utils_tests' modules for pure-function utilities (text,
# html, dates, numbers, http, ...): seconds with no database, network or optional dependency, each
# testing one module of django/utils, where the bugs are made (a bug in code every test imports,
# the settings or the app registry, breaks hundreds of tests and is dropped).
_DJANGO_UTILS = ("text", "html", "dateformat", "numberformat", "http", "encoding", "ipv6",
                 "crypto", "dateparse", "duration", "timesince", "regex_helper",
                 "datastructures", "inspect", "jslex", "feedgenerator", "tree", "hashable",
                 "lorem_ipsum", "termcolors", "timezone")

DJANGO = Project(
    name="django", repo="django/django", pypi="django", version="4.2.16",
    sdist_sha256="6f1616c2786c408ce86ab7e10f792b8f15742f7b7b7460243929cb371e7f1dad",
    # django 4.2's install_requires (asgiref, sqlparse); the chosen tests need nothing optional.
    wheels=("asgiref==3.7.2", "sqlparse==0.4.4"),
    dist_name="Django",
    source_dirs=tuple(f"django/utils/{m}.py" for m in _DJANGO_UTILS),
    import_path="",
    test_dirs=tuple(f"tests/utils_tests/test_{m}.py" for m in _DJANGO_UTILS),
    test_command="python3 tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1",
    log_parser="parse_log_django",
    test_ids="django",
)

# pytest 7.4.4 (the last 7.x; SWE-bench's pytest instances run up to 8.x), graded by
# parse_log_pytest. The runner under test is pytest itself: src/ comes first on PYTHONPATH, so the
# base image's pytest never runs. Its whole testing/ suite takes many minutes; the modules chosen
# each test one module of src/_pytest whose code is a function of its input (mark expressions,
# approx, saferepr, the terminal writer, paths, monkeypatch, ...), where the bugs are made. Left
# out: test_assertion.py and code/test_excinfo.py, four fifths of a run's time (an inner pytester
# session per test: 200 s of 250 s at load 18), and a bug in _code/code.py breaks every test's
# report (759 failing: dropped), as does any bug in the collection or reporting core.
_PYTEST_TESTS = {
    "testing/test_mark_expression.py": "src/_pytest/mark/expression.py",
    "testing/python/approx.py": "src/_pytest/python_api.py",
    "testing/python/raises.py": "src/_pytest/python_api.py",
    "testing/io/test_saferepr.py": "src/_pytest/_io/saferepr.py",
    "testing/io/test_terminalwriter.py": "src/_pytest/_io/terminalwriter.py",
    "testing/io/test_wcwidth.py": "src/_pytest/_io/wcwidth.py",
    "testing/code/test_source.py": "src/_pytest/_code/source.py",
    "testing/test_scope.py": "src/_pytest/scope.py",
    "testing/test_stash.py": "src/_pytest/stash.py",
    "testing/test_findpaths.py": "src/_pytest/config/findpaths.py",
    "testing/test_pathlib.py": "src/_pytest/pathlib.py",
    "testing/test_recwarn.py": "src/_pytest/recwarn.py",
    "testing/test_monkeypatch.py": "src/_pytest/monkeypatch.py",
    "testing/test_warning_types.py": "src/_pytest/warning_types.py",
    "testing/test_compat.py": "src/_pytest/compat.py",
    "testing/test_parseopt.py": "src/_pytest/config/argparsing.py",
}

PYTEST = Project(
    name="pytest", repo="pytest-dev/pytest", pypi="pytest", version="7.4.4",
    sdist_sha256="2cf0005922c6ace4a3e2ec8b4080eb0d9753fdc93107415332f50ce9e7994280",
    # pytest 7.4's install_requires on Python 3.11 (iniconfig, packaging, pluggy<2) and the one
    # of its "testing" extra the chosen modules use: Pygments (the terminal writer's
    # highlighting). numpy and requests are left out: the tests needing them skip
    # (importorskip) and are not graded.
    wheels=("iniconfig==2.0.0", "packaging==23.2", "pluggy==1.3.0", "Pygments==2.17.2"),
    dist_name="pytest",
    source_dirs=tuple(sorted(set(_PYTEST_TESTS.values()))),
    import_path="src",
    test_dirs=tuple(_PYTEST_TESTS),
    test_command="python3 -m pytest -rA -p no:cacheprovider",
    log_parser="parse_log_pytest",
    # Each of these starts a fresh interpreter (runpytest_subprocess, bash): seconds each, and
    # neither tests a module the bugs are made in (async generator syntax, argcomplete).
    deselected=(
        ("testing/test_compat.py::test_is_generator_async_gen_syntax", "a subprocess session"),
        ("testing/test_parseopt.py::test_argcomplete",
         "runs bash; argcomplete is not installed, so it skips after seconds"),
    ),
)

# sympy 1.12 (Python 3.8-3.11; SWE-bench's sympy instances run up to 1.13), graded as SWE-bench
# grades sympy: parse_log_sympy reads its runner's verbose log (``test_x ok``). The sdist ships
# no bin/test, so the command calls what it calls, ``sympy.test(*paths, verbose=True)``, with its
# ``-C`` (``SYMPY_USE_CACHE=no``) and SWE-bench's warning filters; sympy.test reruns itself with a
# random PYTHONHASHSEED, as under SWE-bench. The whole suite takes hours; the modules chosen each
# test one module of pure functions (iterables, dense polynomials, Galois fields, permutations,
# primality, ...), where the bugs are made, in about half a minute. Left out: ntheory's generate,
# factor_, residue and continued_fraction tests (10 to 60 s each with the cache off), and
# test_partitions.py (one test, which parse_log_sympy never reads: a file's last line ends in
# ``[OK]``).
_SYMPY_TESTS = {
    "sympy/combinatorics/tests/test_graycode.py": "sympy/combinatorics/graycode.py",
    "sympy/combinatorics/tests/test_permutations.py": "sympy/combinatorics/permutations.py",
    "sympy/combinatorics/tests/test_prufer.py": "sympy/combinatorics/prufer.py",
    "sympy/combinatorics/tests/test_subsets.py": "sympy/combinatorics/subsets.py",
    "sympy/ntheory/tests/test_digits.py": "sympy/ntheory/digits.py",
    "sympy/ntheory/tests/test_egyptian_fraction.py": "sympy/ntheory/egyptian_fraction.py",
    "sympy/ntheory/tests/test_modular.py": "sympy/ntheory/modular.py",
    "sympy/ntheory/tests/test_multinomial.py": "sympy/ntheory/multinomial.py",
    "sympy/ntheory/tests/test_primetest.py": "sympy/ntheory/primetest.py",
    "sympy/polys/tests/test_densearith.py": "sympy/polys/densearith.py",
    "sympy/polys/tests/test_densebasic.py": "sympy/polys/densebasic.py",
    "sympy/polys/tests/test_densetools.py": "sympy/polys/densetools.py",
    "sympy/polys/tests/test_galoistools.py": "sympy/polys/galoistools.py",
    "sympy/polys/tests/test_heuristicgcd.py": "sympy/polys/heuristicgcd.py",
    "sympy/polys/tests/test_monomials.py": "sympy/polys/monomials.py",
    "sympy/polys/tests/test_orderings.py": "sympy/polys/orderings.py",
    "sympy/polys/tests/test_orthopolys.py": "sympy/polys/orthopolys.py",
    "sympy/polys/tests/test_sqfreetools.py": "sympy/polys/sqfreetools.py",
    "sympy/utilities/tests/test_enumerative.py": "sympy/utilities/enumerative.py",
    "sympy/utilities/tests/test_iterables.py": "sympy/utilities/iterables.py",
}

SYMPY = Project(
    name="sympy", repo="sympy/sympy", pypi="sympy", version="1.12",
    sdist_sha256="ebf595c8dac3e0fdc4152c51878b498396ec7f30e7a914d6071e674d49420fb8",
    # sympy's one requirement (mpmath>=0.19; 1.3.0, pure Python); the chosen tests import
    # nothing optional (numpy, gmpy2 and the rest stay out: sympy's ground types are Python's).
    wheels=("mpmath==1.3.0",),
    dist_name="sympy",
    source_dirs=tuple(sorted(set(_SYMPY_TESTS.values()))),
    import_path="",
    test_dirs=tuple(_SYMPY_TESTS),
    test_command="PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' SYMPY_USE_CACHE=no "
                 "python3 -c 'import sys, sympy; sys.exit(not sympy.test(*sys.argv[1:], "
                 "verbose=True))'",
    log_parser="parse_log_sympy",
    test_ids="sympy",
)

PROJECTS: dict[str, Project] = {p.name: p for p in (FLASK, DJANGO, PYTEST, SYMPY)}


def resolve_project(spec: str) -> Project:
    """The recipe of ``PROJECT[==VERSION]`` (module docstring)."""
    name, _, version = spec.partition("==")
    recipe = PROJECTS.get(name.strip().lower())
    if recipe is None:
        raise RealcodeError(f"no recipe for project {name.strip()!r}; known: "
                            f"{', '.join(sorted(PROJECTS))}")
    version = version.strip()
    if not version or version == recipe.version:
        return recipe
    return replace(recipe, version=version, sdist_sha256=None)

_DJANGO_ID = re.compile(r"^\w+ \(([\w.]+)\)$")


def test_file(project: Project, test_id: str) -> str | None:
    """The file holding ``test_id`` (module docstring); None when the id names no file."""
    if project.test_ids == "sympy":
        path, header, _ = test_id.partition(".py:")  # a failure's header: ``path.py:test_x``
        return path + ".py" if header else project.test_index.get(test_id)
    if project.test_ids != "django":
        return test_id.split("::")[0]
    found = _DJANGO_ID.match(test_id)
    if not found or found.group(1).count(".") < 2:
        return None  # a docstring line, or an id without module.Class.method
    return "tests/" + "/".join(found.group(1).split(".")[:-2]) + ".py"


def test_label(project: Project, path: str) -> str:
    """The test command's argument that runs the file or folder ``path`` (module docstring)."""
    if project.test_ids != "django":
        return path
    rel = path.removeprefix("tests/").removesuffix(".py")
    return rel.replace("/", ".")


_SYMPY_TEST = re.compile(r"^def (test_\w+)\s*\(", re.MULTILINE)


def index_tests(project: Project, tree: Path) -> Project:
    """``project`` with ``test_index`` read from ``tree`` (module docstring): every module-level
    ``def test_*`` of the selected test files; a name defined in two files maps to neither."""
    if project.test_ids != "sympy":
        return project
    defined: dict[str, set[str]] = {}
    for where in project.test_dirs:
        paths = [tree / where] if where.endswith(".py") else sorted((tree / where).rglob(
            "test_*.py"))
        for path in paths:
            for name in _SYMPY_TEST.findall(path.read_text(errors="replace")):
                defined.setdefault(name, set()).add(path.relative_to(tree).as_posix())
    return replace(project, test_index={name: min(files) for name, files in defined.items()
                                        if len(files) == 1})
