"""The real-project tests' shared flask set: three flask 2.3.3 instances built once per session.

``build_flask(out, cache)`` builds them (``make_instances``: sdist and wheels from ``cache``, pip
fills it on the first build); conftest.py's ``flask_set`` fixture calls it the first time a test
asks, so the reproducibility test, the forgeries and the honest fixes share one build, one set
of instance images and one gold-record folder (a ``BuiltSet``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ratchet_ray.suites.swebench.realcode import resolve_project
from ratchet_ray.suites.swebench.realcode.build import Request, make_instances

FLASK_COUNT = 3


@dataclass(frozen=True)
class BuiltSet:
    dataset: Path  # instances.jsonl
    recipe: dict  # what make_instances returned
    cache: Path  # the sdist and wheels pip fetched
    gold: Path  # the gold records every grade of the session shares


def build_flask(out: Path, cache: Path) -> dict:
    return make_instances(Request(project=resolve_project("flask==2.3.3"), out=out, cache=cache,
                                  count=FLASK_COUNT, max_candidates=15, jobs=2), note=print)


def ensure_project_image(built: BuiltSet, client, out: Path) -> None:
    """The set's project image, built again into ``out`` when it is gone (the reproducibility
    test removes it and rebuilds it; one that timed out midway leaves none): the same inputs
    give the same tag, so the set's instances build on it as before."""
    import docker

    try:
        client.images.get(built.recipe["image"]["tag"])
    except docker.errors.ImageNotFound:
        build_flask(out, built.cache)
