"""Recipes of the real projects ``ratchet swe make-instances`` builds instance sets from.

A ``Project`` is everything the build needs besides the network-free image: the PyPI name and
version of the sdist (its sha256 pinned, so the same name gives the same bytes), the wheels of
its runtime and test dependencies (each pinned ``name==version``, fetched for CPython 3.11 on
manylinux), the folders whose code is mutated, the test command and its swebench log parser, and
the tests deselected with the reason. ``PROJECTS`` lists them by short name; ``project(name)``
raises ``KeyError`` naming the known ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
    """Folders the test command runs; an sdist lacking one has no tests to grade."""
    test_command: str
    """The test command, run in ``/testbed`` with test paths appended."""
    log_parser: str
    deselected: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    """``(test id prefix, why)``: never run (network, timing) and never graded."""
    timeout_s: int = 600
    """Limit of one full run of the test command in a container."""


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
    deselected=(),
)

PROJECTS: dict[str, Project] = {p.name: p for p in (FLASK,)}


def project(name: str) -> Project:
    try:
        return PROJECTS[name.lower()]
    except KeyError:
        raise KeyError(f"no recipe for project {name!r}; known: {', '.join(sorted(PROJECTS))}"
                       ) from None
