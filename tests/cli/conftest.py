"""This folder's fixtures: the plain-library ones of ``tests/library_fixtures.py``."""

from library_fixtures import bank, config, deny, run_dir, store  # noqa: F401
