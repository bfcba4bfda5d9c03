"""Fixtures of the real-project tests: ``flask_set``, the session's flask instances
(shared_flask.py), built the first time a test asks; its project image and instance images are
removed at the session's end."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shared_flask import BuiltSet, build_flask
from swe_validate_cli import remove_instance_images


@pytest.fixture(scope="session")
def flask_set(docker_session, tmp_path_factory) -> BuiltSet:
    cache = Path(os.environ.get("RATCHET_REALCODE_CACHE") or tmp_path_factory.mktemp("cache"))
    folder = tmp_path_factory.mktemp("flask-set")
    recipe = build_flask(folder / "set", cache)
    built = BuiltSet(folder / "set" / "instances.jsonl", recipe, cache, folder / "gold")
    yield built
    remove_instance_images(built.dataset)
    try:
        docker_session.images.remove(recipe["image"]["tag"], force=True)
    except Exception:  # noqa: BLE001 - a test that rebuilt it may have removed it already
        pass
