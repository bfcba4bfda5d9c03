"""Editable and protected path sets, matched by glob on repo-relative POSIX paths.

Contracts:
- Globs: ``*`` and ``?`` stay inside one path segment, ``**`` spans segments (``**/`` may match
  no directory at all), ``[...]`` is a character class; a pattern matches the whole path.
- ``PathPolicy.violations(paths)`` returns, for each changed path that is protected or not
  editable, a reason string. A path is allowed only when it matches an editable glob and no
  protected glob: protected wins over editable.
- ``repo_relative(repo, path)`` refuses a path that leaves the repo (``..``, absolute, or a
  symlink pointing outside) with ``PolicyError``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Iterable, Sequence


class PolicyError(ValueError):
    """A path is outside the repo or outside the editable set."""


_WILDCARDS = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}


@lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    out = []
    for token in re.split(r"(\*\*/|\*\*|\*|\?|\[[^\]]*\])", pattern):
        if token in _WILDCARDS:
            out.append(_WILDCARDS[token])
        elif token.startswith("[") and token.endswith("]") and len(token) > 1:  # a closed class
            body = token[1:-1].replace("\\", "\\\\")
            out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
        else:  # literal text, an unclosed '[' included
            out.append(re.escape(token))
    return re.compile("".join(out) + r"\Z")


def glob_match(path: str, pattern: str) -> bool:
    return _compile(pattern.strip("/")).match(path) is not None


def matches_any(path: str, patterns: Iterable[str]) -> bool:
    return any(glob_match(path, p) for p in patterns)


def repo_relative(repo: Path, path: str) -> str:
    """``path`` as a normalised repo-relative POSIX path; raises ``PolicyError`` if it escapes."""
    pure = PurePosixPath(path.replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        raise PolicyError(f"path {path!r} is not a relative path inside the repo")
    resolved = (repo / pure).resolve()
    if not resolved.is_relative_to(repo.resolve()):
        raise PolicyError(f"path {path!r} resolves outside the repo ({resolved})")
    return pure.as_posix()


@dataclass(frozen=True)
class PathPolicy:
    editable: tuple[str, ...]
    protected: tuple[str, ...]

    @classmethod
    def of(cls, editable: Sequence[str], protected: Sequence[str]) -> "PathPolicy":
        if not editable:
            raise PolicyError("give at least one --editable glob (the files a proposal may change)")
        return cls(tuple(editable), tuple(protected))

    def allows(self, path: str) -> bool:
        return matches_any(path, self.editable) and not matches_any(path, self.protected)

    def violations(self, paths: Iterable[str]) -> list[str]:
        return [f"{path}: protected" if matches_any(path, self.protected)
                else f"{path}: not editable" for path in sorted(set(paths)) if not self.allows(path)]
