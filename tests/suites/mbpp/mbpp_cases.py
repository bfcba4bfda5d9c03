"""Shared constants of the MBPP+ suite tests (importable by conftest and test modules alike)."""

# Tasks the grading tests use; their expected outputs are computed once per session.
GRADED_TASKS = ("Mbpp/2", "Mbpp/3", "Mbpp/4", "Mbpp/6", "Mbpp/17")
