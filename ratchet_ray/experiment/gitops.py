"""The git operations of an experiment, always run in the TARGET repo (``git -C repo``).

Contracts:
- ``Git(repo)`` raises ``GitError`` if ``repo`` is not the top of a git worktree.
- ``changed_paths()``: every path differing from HEAD (modified, deleted, both sides of a
  rename, untracked non-ignored), one entry per file.
- ``restore(commit, keep_untracked)``: ``reset --hard`` to ``commit``, then delete the
  untracked non-ignored files not in ``keep_untracked`` (the attempt's).
- ``commit_all(message, amend)`` commits (or amends) everything under a fixed identity (no
  ``user.name`` needed) and returns the commit id.
- ``exclude(paths)`` appends to ``.git/info/exclude`` (local), so the ledger and artifacts are
  never dirt.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Iterable, Sequence

_IDENTITY = ("-c", "user.name=ratchet-experiment", "-c", "user.email=ratchet-experiment@localhost",
             "-c", "commit.gpgsign=false")


class GitError(RuntimeError):
    """A git command failed in the target repo; the message holds the command and git's stderr."""


class Git:
    def __init__(self, repo: Path):
        self.repo = Path(repo).resolve()
        if not self.repo.is_dir():
            raise GitError(f"{self.repo} is not a directory; --repo must name a git worktree")
        top = self.run("rev-parse", "--show-toplevel", check=False)
        if top.returncode != 0 or Path(top.stdout.strip()).resolve() != self.repo:
            raise GitError(f"{self.repo} is not the top of a git worktree; pass the repo root "
                           "(`git -C PATH rev-parse --show-toplevel`)")

    def run(self, *args: str, check: bool = True, stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
        for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
            env.pop(var, None)  # a caller's git env must not redirect us to another repo
        proc = subprocess.run(["git", "-C", str(self.repo), *args], capture_output=True, text=True,
                              input=stdin, env=env)
        if check and proc.returncode != 0:
            raise GitError(f"git {' '.join(args)} failed in {self.repo}: "
                           f"{(proc.stderr or proc.stdout).strip()}")
        return proc

    def head(self) -> str:
        return self.run("rev-parse", "HEAD").stdout.strip()

    def branch(self) -> str:
        return self.run("rev-parse", "--abbrev-ref", "HEAD").stdout.strip()

    def has_branch(self, name: str) -> bool:
        return self.run("rev-parse", "--verify", "--quiet", f"refs/heads/{name}",
                        check=False).returncode == 0

    def switch(self, name: str, create: bool) -> None:
        self.run("checkout", *(("-b",) if create else ()), name)

    def tracked(self) -> list[str]:
        return [p for p in self.run("ls-files", "-z").stdout.split("\0") if p]

    def untracked(self) -> set[str]:
        out = self.run("ls-files", "-z", "--others", "--exclude-standard").stdout
        return {p for p in out.split("\0") if p}

    def changed_paths(self) -> list[str]:
        entries = iter(self.run("status", "--porcelain=v1", "-z", "-uall").stdout.split("\0"))
        paths = []
        for entry in entries:
            if len(entry) >= 4:
                paths.append(entry[3:])
                if entry[0] in "RC":  # a rename's source follows as its own NUL-separated field
                    paths.append(next(entries))
        return sorted(set(paths))

    def commit_all(self, message: str, amend: bool = False) -> str:
        self.run("add", "-A")
        self.run(*_IDENTITY, "commit", "--no-verify", "-q", *(("--amend",) if amend else ()),
                 "-m", message)
        return self.head()

    def apply_diff(self, diff: str) -> None:
        self.run("apply", "--whitespace=nowarn", "-", stdin=diff)

    def diff(self, base: str, head: str = "HEAD") -> str:
        return self.run("diff", base, head).stdout

    def restore(self, commit: str, keep_untracked: Iterable[str] = ()) -> None:
        self.run("reset", "-q", "--hard", commit)
        created = sorted(self.untracked() - set(keep_untracked))
        for start in range(0, len(created), 200):
            self.run("clean", "-q", "-f", "--", *created[start:start + 200])
        # git clean by path leaves the folders the created files lived in: drop the empty ones,
        # deepest first, each with its parents that it leaves empty (never the repo: .git).
        for folder in sorted({(self.repo / c).parent for c in created} - {self.repo},
                             key=lambda f: -len(f.parts)):
            with contextlib.suppress(OSError):  # not empty, or gone with a deeper one's chain
                os.removedirs(folder)

    def exclude(self, paths: Sequence[str]) -> None:
        info = Path(self.run("rev-parse", "--git-path", "info/exclude").stdout.strip())
        info = info if info.is_absolute() else self.repo / info
        info.parent.mkdir(parents=True, exist_ok=True)
        present = set(info.read_text().splitlines()) if info.exists() else set()
        missing = [p for p in paths if p not in present]
        if missing:
            with info.open("a") as fh:
                fh.write("".join(f"{p}\n" for p in missing))
