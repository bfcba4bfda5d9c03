"""Which paths of a patch belong to the test harness: the grader restores them before the tests
run (the policy and why: docs/grading.md, "Tampering policy: restore"). Paths that cannot be
restored (inside ``.git``, absolute, with ``..``) fail the attempt as ``test_tampering``.

``harness_reason(path, tests, before, after, runners, roots)``: why ``path`` is harness, or None
(``runners``: the files the test command names; ``before``/``after``: its text at the base
commit and after the patch, None when absent, read only for ``CONTENT_CHECKED`` files and new
root modules). A new root module that shadows one pytest imports (``shadowed_module``: ``python
-m pytest`` puts the root first on ``sys.path``), or one at the top of a folder the image's
``PYTHONPATH`` puts there (``import_roots``: flask's ``src``), is harness; the repository's own
root modules stay editable. A ``CONTENT_CHECKED`` file is harness, and restored whole, when its
test settings changed as any reader sees them (``iniconfig`` in each mode, ``configparser``,
``tomllib`` for ``[tool.pytest*]``/``[tool.tox]``, or a changed line naming ``CONFIG_WORDS``). A
new packaging file without test settings is the patch's own.
"""

from __future__ import annotations

import configparser
import difflib
import re
import sys
import tomllib
from pathlib import PurePosixPath
from typing import Any, Iterable

import iniconfig  # pytest's own ini parser (the swebench extra installs it)

# File names that are harness wherever they are.
HARNESS_NAMES = {
    "conftest.py": "pytest conftest",
    "pytest.ini": "pytest configuration",
    ".pytest.ini": "pytest configuration",
    "pytest.toml": "pytest configuration",
    ".pytest.toml": "pytest configuration",
    "tox.ini": "tox configuration",
    "noxfile.py": "nox configuration",
    "sitecustomize.py": "interpreter start-up hook",
    "usercustomize.py": "interpreter start-up hook",
    "entry_points.txt": "plugin entry points",
}
HARNESS_SUFFIXES = {".pth": "interpreter start-up hook (.pth)",
                    ".pyc": "compiled bytecode (runs in place of its source)",
                    ".pyo": "compiled bytecode (runs in place of its source)"}
# Modules the test run imports from outside the tree: the standard library, pytest and what
# pytest and its common plugins import at start-up (``pytest*``/``_pytest*`` names too).
RUNNER_MODULES = frozenset(sys.stdlib_module_names) | {
    "pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging", "tomli", "exceptiongroup",
    "colorama", "attr", "attrs", "more_itertools", "atomicwrites", "importlib_metadata", "zipp",
    "wcwidth", "six", "typing_extensions", "pygments", "xdist", "execnet", "coverage",
    "hypothesis", "setuptools", "pkg_resources", "_distutils_hack"}
_MODULE_SUFFIXES = (".py", ".pyc", ".so", ".pyd")
# Files that are harness only where their test sections changed.
CONTENT_CHECKED = ("setup.cfg", "pyproject.toml", "setup.py")
INI_TEST_SECTIONS = re.compile(r"^(pytest|tool:pytest|tox|tox:.*|testenv.*)$")
TOML_TEST_KEYS = (("tool", "pytest"), ("tool", "tox"), ("project", "entry-points", "pytest11"),
                  ("project", "entry_points", "pytest11"), ("tool", "poetry", "plugins", "pytest11"))
# Words in a changed line of a CONTENT_CHECKED file that a test runner reads: the whole file is
# restored then, whichever section a parser would put the line in.
CONFIG_WORDS = re.compile(r"pytest|tox|testenv|addopts|plugins?\b|conftest", re.I)
_DIFF_GIT = re.compile(r'^diff --git (?:"?a/(.+?)"?) (?:"?b/(.+?)"?)$')
_FILE_LINE = re.compile(r"^(?:---|\+\+\+) (?:\"?[ab]/)?(.+?)\"?(?:\t.*)?$")
_RENAME = re.compile(r"^(?:rename|copy) (?:from|to) (.+)$")
_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_RELATIVE_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*")


def patch_paths(patch: str) -> set[str]:
    """Every path ``patch`` names in its headers (hunk bodies skipped), without ``a/``/``b/``."""
    paths: set[str] = set()
    old_left = new_left = 0
    for line in patch.splitlines():
        if old_left > 0 or new_left > 0:  # inside a hunk: a body line such as "--- x" is text
            tag = line[:1]
            if tag in ("-", " ", ""):
                old_left -= 1
            if tag in ("+", " ", ""):
                new_left -= 1
            continue
        if m := _HUNK.match(line):
            old_left, new_left = int(m.group(1) or 1), int(m.group(2) or 1)
        elif m := _DIFF_GIT.match(line):
            paths.update(m.groups())
        elif line.startswith(("--- ", "+++ ")) and (m := _FILE_LINE.match(line)):
            if m.group(1) != "/dev/null":
                paths.add(m.group(1))
        elif m := _RENAME.match(line):
            paths.add(m.group(1))
    return {p.strip() for p in paths if p.strip()}


def unsafe_paths(paths: Iterable[str]) -> list[str]:
    """Paths outside the work tree or inside ``.git`` (nothing can restore those)."""
    bad = []
    for path in paths:
        parts = PurePosixPath(path).parts
        if path.startswith("/") or ".." in parts or ".git" in parts:
            bad.append(path)
    return sorted(bad)


def test_files(instance: dict[str, Any]) -> set[str]:
    """Test files the instance grades with: F2P/P2P ids (pytest ``path::name``, unittest
    ``name (module.Class)``) and every file its test patch touches."""
    files = set(patch_paths(instance.get("test_patch") or ""))
    for test in [*instance.get("FAIL_TO_PASS", []), *instance.get("PASS_TO_PASS", [])]:
        head = test.split("::", 1)[0]
        if head.endswith(".py"):
            files.add(head[2:] if head.startswith("./") else head)
        elif m := re.search(r"\(([\w.]+)\)\s*$", test):  # its module's file at each depth
            parts = [p for p in m.group(1).split(".") if p]
            rels = ["/".join(parts[:k]) + ".py" for k in range(len(parts), 1, -1)]
            files.update({*rels, *(f"tests/{rel}" for rel in rels)})
    return files


def repo_relative_file(word: str) -> str | None:
    """``word`` (a leading ``./`` dropped) when it is a plain relative path inside the tree:
    letters, digits, ``_ . / -`` only, and not ``unsafe``; else None."""
    word = word.removeprefix("./")
    if _RELATIVE_FILE.fullmatch(word) and not unsafe_paths([word]):
        return word
    return None


def import_roots(env: Iterable[str], workdir: str) -> tuple[str, ...]:
    """The folders of the tree, relative to it, that ``PYTHONPATH`` in ``env`` (``NAME=value``
    entries, the image's) puts on ``sys.path`` ahead of the standard library and pytest
    (flask's images: ``src``); ``""`` for the tree itself."""
    roots: list[str] = []
    top = PurePosixPath(workdir)
    for entry in env:
        name, _, value = entry.partition("=")
        if name != "PYTHONPATH":
            continue
        for folder in value.split(":"):
            path = PurePosixPath(folder)
            if path == top or top in path.parents:
                rel = path.relative_to(top).as_posix()
                roots.append("" if rel == "." else rel)
    return tuple(dict.fromkeys(roots))


def shadowed_module(path: str, roots: Iterable[str] = ()) -> str | None:
    """The runner module a file at ``path`` would replace, if it is a module at the root of the
    tree or of one of ``roots`` (``import_roots``: folders on ``sys.path`` before the runner's)
    (``name.py``/``.pyc``/``.so``, or ``name/__init__.py``/``__main__.py``) with a
    ``RUNNER_MODULES`` name; else None."""
    for root in roots:
        if root and path.startswith(root.rstrip("/") + "/"):
            found = shadowed_module(path[len(root.rstrip("/")) + 1:])
            if found is not None:
                return found
    parts = PurePosixPath(path).parts
    if len(parts) == 1 and parts[0].endswith(_MODULE_SUFFIXES):
        name = parts[0].split(".", 1)[0]
    elif len(parts) == 2 and parts[1].split(".", 1)[0] in ("__init__", "__main__") \
            and parts[1].endswith(_MODULE_SUFFIXES):
        name = parts[0]
    else:
        return None
    if name in RUNNER_MODULES or name.startswith(("pytest", "_pytest")):
        return name
    return None


def _pytest_ini_readings(text: str) -> list[dict[str, dict[str, str]]]:
    """The sections of ``text`` as pytest's own parser reads them, in each of its modes (pytest
    < 9 calls ``IniConfig(path)``; newer releases may strip inline comments and section
    whitespace). Raises ``iniconfig.ParseError`` where pytest would refuse the file."""
    readings = [iniconfig.IniConfig("setup.cfg", data=text)]
    if hasattr(iniconfig.IniConfig, "parse"):  # iniconfig >= 2.1
        readings.append(iniconfig.IniConfig.parse("setup.cfg", data=text,
                                                  strip_section_whitespace=True))
    return [{name: dict(section.items()) for name, section in ((n, r[n]) for n in r.sections)}
            for r in readings]


def _ini_sections(text: str) -> dict[str, Any]:
    """The test sections of an ini file as ``configparser`` and pytest's parser read them."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read_string(text)
    found: dict[str, Any] = {name: dict(parser[name]) for name in parser.sections()
                             if INI_TEST_SECTIONS.match(name)}
    if parser.has_option("options.entry_points", "pytest11"):
        found["options.entry_points/pytest11"] = {"pytest11": parser["options.entry_points"]["pytest11"]}
    for mode, sections in enumerate(_pytest_ini_readings(text)):
        for name, values in sections.items():
            if INI_TEST_SECTIONS.match(name.strip()) or CONFIG_WORDS.search(name):
                found[f"iniconfig{mode}/{name}"] = values
    return found


def _toml_sections(text: str) -> dict[str, Any]:
    data = tomllib.loads(text)
    found = {}
    for key in TOML_TEST_KEYS:
        node: Any = data
        for part in key:
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            found[".".join(key)] = node
    return found


def _test_sections(name: str, text: str | None) -> Any:
    """The test-relevant part of a ``CONTENT_CHECKED`` file (raises on a file that will not
    parse); an absent file has none, like a file without test settings."""
    if text is None:
        return {} if name != "setup.py" else []
    if name == "setup.cfg":
        return _ini_sections(text)
    if name == "pyproject.toml":
        return _toml_sections(text)
    return sorted(line.strip() for line in text.splitlines() if "pytest11" in line)  # setup.py


def harness_reason(path: str, tests: set[str], before: str | None = None,
                   after: str | None = None, runners: set[str] = frozenset(),
                   roots: Iterable[str] = ()) -> str | None:
    """Why ``path`` is part of the test harness, or None (see the module contract; ``roots``:
    ``import_roots``, where a new module shadows as at the root)."""
    name = PurePosixPath(path).name
    if name in HARNESS_NAMES:
        return HARNESS_NAMES[name]
    for suffix, reason in HARNESS_SUFFIXES.items():
        if name.endswith(suffix):
            return reason
    if path in tests:
        return "test file the instance is graded with"
    if path in runners:
        return "a file the eval script's test command runs"
    module = shadowed_module(path, roots)
    if module is not None and before is None:
        where = "at the root" if shadowed_module(path) is not None else "on PYTHONPATH"
        return f"a new module {where} that shadows {module}, which the test run imports"
    if name in CONTENT_CHECKED:
        return _config_reason(name, before, after)
    return None


def _config_reason(name: str, before: str | None, after: str | None) -> str | None:
    """Why a changed ``CONTENT_CHECKED`` file is harness, or None (see the module contract)."""
    unreadable = (configparser.Error, tomllib.TOMLDecodeError, iniconfig.ParseError)
    try:
        old = _test_sections(name, before)
    except unreadable:
        old = before  # the base file does not parse: compare it whole
    try:
        new = _test_sections(name, after)
    except unreadable:
        return f"{name} no longer parses (its test settings cannot be read)"
    if old != new:
        return f"test settings in {name} (pytest/tox sections or pytest11 entry points)"
    words = sorted({m.group(0).lower() for line in _changed_lines(before, after)
                    for m in CONFIG_WORDS.finditer(line)})
    if words:
        return f"{name}: changed lines name {', '.join(words)} (what a test runner reads)"
    return None


def _changed_lines(before: str | None, after: str | None) -> list[str]:
    """The lines one of the two texts has and the other lacks."""
    old, new = (before or "").splitlines(), (after or "").splitlines()
    return [line[1:] for line in difflib.ndiff(old, new) if line[:2] in ("- ", "+ ")]
