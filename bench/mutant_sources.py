"""Test files for ``mutant_detector.py``, each with the repository it belongs to.

A forger inside the graded repository sees more than the graded file: every other file of the
repository, so whether a value or a word appears elsewhere there is a feature too. Two sources:
- ``installed(packages, count, rng)``: ``count`` test files (``tests/test_*.py``) of packages
  installed in this venv, drawn with ``rng``; a file's repository is its package's folder.
- ``realcode(cache, instances, names, count, seed)``: per real project (``<name>-<version>``, its
  sdist cached by ``ratchet swe make-instances`` under ``cache/<name>-<version>/sdist/``), every
  graded test file of its instance set (``instances/<name>-<version>/instances.jsonl``: the files
  of its FAIL_TO_PASS and PASS_TO_PASS tests), or, with no instance set yet, ``count`` of its test
  files drawn with ``seed``; a file's repository is the sdist's ``.py`` files.
``Source``: a file's name, text and ``Repository``; ``Repository.elsewhere(name, key)`` and
``words_elsewhere(name, word)``: how often a literal value (``literal_key``) or a word occurs in
the repository's other files.
"""

from __future__ import annotations

import ast
import json
import random
import re
import tarfile
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

WORD = re.compile(r"[A-Za-z]+|[0-9]+")
# one-line string and number tokens: what a forger's grep for a value finds
_TOKEN = re.compile(r"""[bB]?(?:'[^'\\\n]*(?:\\.[^'\\\n]*)*'|"[^"\\\n]*(?:\\.[^"\\\n]*)*")"""
                    r"""|(?<![\w.])\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])""")
_VALUES: dict[str, tuple | None] = {}
_SYMPY_TEST = re.compile(r"^def (test_\w+)\s*\(", re.MULTILINE)  # as projects.index_tests reads


def literal_key(value: object) -> tuple | None:
    """What two literals share when they have the same value (a number's sign aside)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return ("number", abs(value))
    if isinstance(value, (str, bytes)):
        return (type(value).__name__, value)
    return None


def _key(token: str) -> tuple | None:
    if token not in _VALUES:
        try:
            _VALUES[token] = literal_key(ast.literal_eval(token))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            _VALUES[token] = None
    return _VALUES[token]


class Repository:
    """Literal values and words of a repository's files, counted per file."""

    def __init__(self, files: dict[str, str]):
        self.literals: Counter = Counter()
        self.words: Counter = Counter()
        self._own: dict[str, tuple[Counter, Counter]] = {}
        for name, text in files.items():
            own = (Counter(k for k in map(_key, _TOKEN.findall(text)) if k is not None),
                   Counter(WORD.findall(text)))
            self._own[name] = own
            self.literals.update(own[0])
            self.words.update(own[1])

    def elsewhere(self, name: str, key: tuple | None) -> int:
        own = self._own.get(name, (Counter(), Counter()))[0]
        return 0 if key is None else self.literals[key] - own[key]

    def words_elsewhere(self, name: str, word: str) -> int:
        own = self._own.get(name, (Counter(), Counter()))[1]
        return self.words[word] - own[word]


@dataclass(frozen=True)
class Source:
    name: str
    text: str
    repo: Repository


def installed(packages: list[str], count: int, rng: random.Random) -> list[Source]:
    import numpy as np  # the venv's site folder
    site = Path(np.__file__).resolve().parents[1]
    found = sorted(p for name in packages for p in (site / name).rglob("test_*.py")
                   if "tests" in p.parts or "test" in p.parts)
    rng.shuffle(found)
    chosen = found[:count]
    repos: dict[str, Repository] = {}
    for package in sorted({p.relative_to(site).parts[0] for p in chosen}):
        repos[package] = Repository({str(p): p.read_text(errors="replace")
                                     for p in (site / package).rglob("*.py")})
    return [Source(str(p), p.read_text(errors="replace"), repos[p.relative_to(site).parts[0]])
            for p in chosen]


def _sdist_files(tarball: Path) -> dict[str, str]:
    """Every ``.py`` file of an sdist, by its path under the sdist's top folder."""
    files = {}
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/", 1)
            if member.isfile() and len(parts) == 2 and parts[1].endswith(".py"):
                files[parts[1]] = tar.extractfile(member).read().decode(errors="replace")
    return files


def _graded_files(instances: Path, folder: str, sdist: dict[str, str]) -> set[str] | None:
    """The files of an instance set's graded tests, or None when there is no instance set (or
    none of its test ids names a file). A sympy id names only its function: the file is the
    one of the recipe's test files that defines it (``projects.index_tests``, over the sdist)."""
    path = instances / folder / "instances.jsonl"
    if not path.is_file():
        return None
    from ratchet_ray.suites.swebench.realcode import projects
    recipe = projects.PROJECTS.get(folder.rsplit("-", 1)[0].lower())
    if recipe is not None and recipe.test_ids == "sympy":
        defined: dict[str, set[str]] = {}
        for name, text in sdist.items():
            if any(name == d or name.startswith(d.rstrip("/") + "/") for d in recipe.test_dirs):
                for test in _SYMPY_TEST.findall(text):
                    defined.setdefault(test, set()).add(name)
        recipe = replace(recipe, test_index={t: min(f) for t, f in defined.items() if len(f) == 1})
    files = set()
    for line in path.read_text().splitlines():
        row = json.loads(line)
        for field in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            ids = row[field] if isinstance(row[field], list) else json.loads(row[field])
            for test in ids:
                file = projects.test_file(recipe, test) if recipe else test.split("::")[0]
                if file and file.endswith(".py"):
                    files.add(file)
    return files or None


def realcode(cache: Path, instances: Path, names: list[str] | None, count: int,
             seed: int) -> dict[str, tuple[list[Source], str]]:
    """``{project folder: (sources, where they come from)}`` (module docstring); ``names``:
    project names or folders to keep (None: every project cached); a project's files drawn with
    ``seed`` and its name (the same whichever other projects are read)."""
    found = {}
    for folder in sorted(p for p in cache.glob("*/sdist") if p.is_dir()):
        project = folder.parent.name
        if names and project not in names and project.rsplit("-", 1)[0] not in names:
            continue
        tarballs = sorted(folder.glob("*.tar.gz"))
        if not tarballs:
            continue
        files = _sdist_files(tarballs[0])
        graded = _graded_files(instances, project, files)
        if graded is not None:
            chosen, origin = sorted(f for f in graded if f in files), "graded test files"
        else:
            tests = sorted(f for f in files if Path(f).name.startswith("test_")
                           and ({"tests", "test", "testing"} & set(Path(f).parts)))
            random.Random(f"{seed}:{project}").shuffle(tests)
            chosen, origin = sorted(tests[:count]), "test files (no instance set)"
        repo = Repository(files)
        found[project] = ([Source(f, files[f], repo) for f in chosen], origin)
    return found
