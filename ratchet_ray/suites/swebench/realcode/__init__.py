"""SWE-bench instance sets built from real Python projects, offline (``ratchet swe make-instances``).

The project's PyPI sdist and its dependencies' wheels are fetched on the host (``sources``),
laid into one reproducible layer on the base image (``image``), and its own test suite run in
containers without network (``runner``). Bugs come from SWE-smith's procedural modifiers
(``bugs``); one the suite catches becomes a record in SWE-bench's fields whose FAIL_TO_PASS
tests return only with the test patch (``records``). ``build`` runs it all; ``projects`` holds
the recipes. ``resolve_project("flask==2.3.3")``: the recipe for that version (another version
keeps the recipe's pins but not its sdist digest); an unknown project is a ``RealcodeError``.
"""

from __future__ import annotations

from dataclasses import replace

from ratchet_ray.suites.swebench.realcode.build import Request, make_instances
from ratchet_ray.suites.swebench.realcode.errors import RealcodeError
from ratchet_ray.suites.swebench.realcode.projects import PROJECTS, Project


def resolve_project(spec: str) -> Project:
    name, _, version = spec.partition("==")
    recipe = PROJECTS.get(name.strip().lower())
    if recipe is None:
        raise RealcodeError(f"no recipe for project {name.strip()!r}; known: "
                            f"{', '.join(sorted(PROJECTS))}")
    version = version.strip()
    if not version or version == recipe.version:
        return recipe
    return replace(recipe, version=version, sdist_sha256=None)


__all__ = ["PROJECTS", "Project", "RealcodeError", "Request", "make_instances", "resolve_project"]
