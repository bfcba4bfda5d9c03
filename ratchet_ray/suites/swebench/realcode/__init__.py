"""SWE-bench instance sets built from real Python projects, offline (``ratchet swe make-instances``).

The project's PyPI sdist and its dependencies' wheels are fetched on the host (``sources``),
laid into one reproducible layer on the base image (``image``), and its own test suite run in
containers without network (``runner``). Bugs come from SWE-smith's procedural modifiers
(``bugs``); one the suite catches becomes a record in SWE-bench's fields whose FAIL_TO_PASS
tests return only with the test patch (``records``). ``build`` runs it all; ``projects`` holds
the recipes (``resolve_project``) and the one error, ``RealcodeError``.
"""

from __future__ import annotations

from ratchet_ray.suites.swebench.realcode.build import Request, make_instances
from ratchet_ray.suites.swebench.realcode.projects import (PROJECTS, Project, RealcodeError,
                                                           resolve_project)

__all__ = ["PROJECTS", "Project", "RealcodeError", "Request", "make_instances", "resolve_project"]
