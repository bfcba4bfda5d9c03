"""What stays root's while the tests run: the files that decide the verdict, their folders, and
the tracked conftests (the test user cannot rewrite, replace or add next to them).

Contracts:
- ``lockdown_command(files, workdir)``: the root step run right after the folders were handed to
  the untrusted uid (``InstanceContainer.untrusted_setup``): folders holding graded files
  read-only to the uid (0755, with their ``__pycache__``), the folders above them up to the tree
  sticky (1777: the uid adds its own files but cannot rename or delete root's, so no path to a
  graded file can be redirected), the files root's and not writable by others; the same for
  every tracked ``conftest.py``, which it prints last (``listed_conftests`` reads them). With
  ``keep_out`` (pytest runners), each sticky folder above a graded file where no conftest.py
  exists gets an empty root folder named conftest.py (0755), except where a path of ``keep_out``
  (the test patch's conftests, ``conftest_paths``) is to be written: the uid cannot create a
  conftest there (a sticky folder keeps root's entries), and pytest loads only a conftest.py that
  is a file. ``collected`` (pytest runners: the test command's words, ``collected_folders``):
  each that names a real folder of the tree other than the tree itself, with every folder under
  it, root's and read-only (0755) to the uid, the folders above it sticky with the same
  placeholders: pytest collects every folder under a folder it is given, so the uid can neither
  write a conftest.py there nor make a folder to hold one.
- ``conftest_paths(tracked, test_patch)``: the conftests pytest may legitimately load (tracked
  at the base commit, or added by the test patch), recognised by their path in the tree, never
  by an object's ``__file__``; ``unexpected_conftests(loaded, legitimate, tree)``: the host's
  check of the conftests pytest loaded (as the sentinel plugin read them from pytest's plugin
  manager) against them.
"""

from __future__ import annotations

import posixpath
import shlex
from pathlib import PurePosixPath
from typing import Iterable

from ratchet_ray.suites.swebench.integrity.harness_paths import patch_paths, repo_relative_file, unsafe_paths

CONFTESTS_LISTED = "@@ratchet-tracked-conftests@@"


def protected_folders(files: Iterable[str]) -> tuple[list[str], list[str]]:
    """``(read_only, sticky)``, relative to the tree: the folders of ``files``, and those above
    them up to the tree; a folder holding a graded file is read-only even where it is also
    above another."""
    read_only: set[str] = set()
    sticky: set[str] = set()
    for path in files:
        if repo_relative_file(path) is None:
            continue
        parts = PurePosixPath(path).parts[:-1]  # the folders above it, outermost first
        chain = ["."] + ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]
        read_only.add(chain[-1])
        sticky.update(chain[:-1])
    return sorted(read_only), sorted(sticky - read_only)


def collected_folders(words: Iterable[str]) -> list[str]:
    """The words of a test command that may name a folder pytest collects (plain relative paths
    not ending in ``.py``, never the tree itself), sorted; which are folders is decided in the
    container (``lockdown_command``'s ``collected``)."""
    return sorted({path for word in words if (path := repo_relative_file(word)) is not None
                   and not path.endswith(".py") and posixpath.normpath(path) != "."})


def _collected_step(folder: str, keep_out: set[str]) -> str:
    """For one word that names a real folder in the container: it and every folder under it
    root's and read-only (0755), the folders above it root's and sticky (where not read-only
    already), each of those with a root folder named conftest.py where none exists and the test
    patch writes none."""
    quote = shlex.quote
    parts = PurePosixPath(posixpath.normpath(folder)).parts
    above = ["."] + ["/".join(parts[:k]) for k in range(1, len(parts))]
    holes = [d for d in above if posixpath.normpath(f"{d}/conftest.py") not in keep_out]
    path = quote(f"./{posixpath.normpath(folder)}")
    step = (f"if [ -d {path} ] && [ ! -L {path} ]; then "
            f"find {path} -type d -exec chown -h root:root {{}} + -exec chmod 0755 {{}} + "
            f"|| exit 1; for d in {' '.join(map(quote, above))}; do if [ ! -L \"$d\" ] && "
            f"[ \"$(stat -c %U:%a \"$d\")\" != root:755 ]; then chown -h root:root \"$d\" && "
            f"chmod 1777 \"$d\" || exit 1; fi; done")
    if holes:
        step += (f"; for d in {' '.join(map(quote, holes))}; do if [ ! -L \"$d\" ] && "
                 f"[ ! -e \"$d/conftest.py\" ] && [ ! -L \"$d/conftest.py\" ]; then "
                 f"mkdir -m 0755 \"$d/conftest.py\" || exit 1; fi; done")
    return step + "; fi"


def lockdown_command(files: Iterable[str], workdir: str,
                     keep_out: Iterable[str] | None = None,
                     collected: Iterable[str] = ()) -> str:
    """The root step of the module contract (a ``__pycache__`` too: pytest would load its
    compiled tests). Folders the test patch creates later are root's 0755 already; a symbolic
    link is never changed (``chmod`` would follow it out of the tree). ``keep_out``: None for no
    conftest placeholders (a runner other than pytest). ``collected`` (``collected_folders``,
    pytest runners, with ``keep_out``): each that is a real folder in the container is read-only
    to the uid with every folder under it."""
    files = sorted(f for f in files if repo_relative_file(f) is not None)
    read_only, sticky = protected_folders(files)
    quote = shlex.quote
    real_dir = '[ -d "$d" ] && [ ! -L "$d" ]'
    steps = [f"cd {quote(workdir)}"]
    if sticky:
        steps.append(f"for d in {' '.join(map(quote, sticky))}; do if {real_dir}; then "
                     f"chown -h root:root \"$d\" && chmod 1777 \"$d\" || exit 1; fi; done")
    if read_only:
        steps.append(f"for d in {' '.join(map(quote, read_only))}; do if {real_dir}; then "
                     f"chown -h root:root \"$d\" && chmod 0755 \"$d\" || exit 1; "
                     f"if [ -d \"$d/__pycache__\" ]; then chown -hR root:root \"$d/__pycache__\" "
                     f"&& chmod -R go-w \"$d/__pycache__\" || exit 1; fi; fi; done")
    if files:
        steps.append(f"for f in {' '.join(map(quote, files))}; do if [ -f \"$f\" ] && "
                     f"[ ! -L \"$f\" ]; then chown root:root \"$f\" && chmod go-w \"$f\" "
                     f"|| exit 1; fi; done")
    # A sticky folder takes new files: code of the patch run as the uid before pytest starts
    # (the install step) could add a conftest.py there, which pytest loads as the tree's own
    # (its hooks the sentinel trusts), and which can take itself out of the record the sentinel
    # lists (docs/grading.md). A root folder of that name keeps the name: the uid may neither
    # remove it nor write a file in its place, and pytest loads a conftest.py only as a file.
    holes = sorted(d for d in sticky if posixpath.normpath(f"{d}/conftest.py")
                   not in set(keep_out or ())) if keep_out is not None else []
    if holes:
        steps.append(f"for d in {' '.join(map(quote, holes))}; do if {real_dir} && "
                     f"[ ! -e \"$d/conftest.py\" ] && [ ! -L \"$d/conftest.py\" ]; then "
                     f"mkdir -m 0755 \"$d/conftest.py\" || exit 1; fi; done")
    # A folder pytest is given collects every folder under it, which the uid owns (or may make
    # under a sticky one): a conftest.py written there by the install step, or by collection
    # before pytest reaches the folder, is loaded as the tree's own, and can take itself out of
    # pytest's record. Read-only to the uid, none can be written or made there; the cost is a
    # test that writes under such a folder (docs/grading.md). After the sticky step: read-only
    # wins where a folder is both.
    if keep_out is not None:
        steps += [_collected_step(folder, set(keep_out)) for folder in collected_folders(collected)]
    # Each tracked conftest (the restore left no other) and the folders above it, root's:
    # sticky where they are not read-only already, so none can be swapped for another.
    steps.append("git ls-files -z -- conftest.py '*/conftest.py' | while IFS= read -r -d '' f; do "
                 "[ -f \"$f\" ] && [ ! -L \"$f\" ] || continue; "
                 "chown root:root \"$f\" && chmod go-w \"$f\" || exit 1; d=$(dirname \"$f\"); "
                 "while :; do [ -L \"$d\" ] && break; "
                 "if [ \"$(stat -c %U:%a \"$d\")\" != root:755 ]; then "
                 "chown -h root:root \"$d\" && chmod 1777 \"$d\" || exit 1; fi; "
                 "[ \"$d\" = . ] && break; d=$(dirname \"$d\"); done; done")
    # Last, the tracked conftests for the caller (``listed_conftests``): the legitimate ones.
    steps.append(f"printf '{CONFTESTS_LISTED}' && git ls-files -z -- conftest.py '*/conftest.py'")
    return " && ".join(steps)


def listed_conftests(stdout: str) -> list[str] | None:
    """The tracked conftest paths ``lockdown_command`` printed last (None when it printed no
    listing, e.g. a setup step that failed before: no listing is not an empty tree)."""
    if CONFTESTS_LISTED not in stdout:
        return None
    listed = stdout.rsplit(CONFTESTS_LISTED, 1)[1]
    return sorted(p for p in listed.split("\0") if p and PurePosixPath(p).name == "conftest.py")


def conftest_paths(tracked: Iterable[str], test_patch: str = "") -> set[str]:
    """The conftest files pytest may load, relative to the tree (see the module contract)."""
    named = set(tracked) | patch_paths(test_patch)
    return {p for p in named if PurePosixPath(p).name == "conftest.py" and not unsafe_paths([p])}


def unexpected_conftests(loaded: Iterable[str], legitimate: set[str], tree: str) -> list[str]:
    """The conftests of ``loaded`` (absolute paths, as pytest recorded them) that are not in
    ``legitimate`` (``conftest_paths``), sorted: each relative to ``tree``, or absolute where it
    lies outside the tree (pytest loads conftests from the folders above it too)."""
    root = posixpath.normpath(tree)
    found = set()
    for path in loaded:
        path = posixpath.normpath(path)
        relative = path[len(root) + 1:] if path.startswith(root + "/") else path
        if relative not in legitimate:
            found.add(relative)
    return sorted(found)
