"""An agent's patch carries no bytecode: on a real project's tree (an sdist ships no
``.gitignore``) the agent's own test runs leave ``__pycache__`` files that ``git add -A`` takes
into the diff; ``without_build_artifacts`` drops those file sections and keeps the rest byte for
byte (``run_agent`` applies it to both agents' patches)."""

from __future__ import annotations

from ratchet_ray.suites.swebench.agent.solver import without_build_artifacts

CODE = ("diff --git a/src/flask/app.py b/src/flask/app.py\nindex 1111111..2222222 100644\n"
        "--- a/src/flask/app.py\n+++ b/src/flask/app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
NEW_TEST = ("diff --git a/tests/test_pycache_names.py b/tests/test_pycache_names.py\n"
            "new file mode 100644\nindex 0000000..3333333\n--- /dev/null\n"
            "+++ b/tests/test_pycache_names.py\n@@ -0,0 +1 @@\n+PYC = '__pycache__/x.pyc'\n")


def _binary(path: str) -> str:
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..4444444\n"
            f"Binary files /dev/null and b/{path} differ\n")


def test_bytecode_and_test_caches_leave_the_patch_and_code_stays_byte_for_byte():
    patch = (_binary("src/flask/__pycache__/app.cpython-311.pyc") + CODE
             + _binary("__pycache__/conftest.cpython-311-pytest-7.4.0.pyc")
             + _binary(".pytest_cache/v/cache/nodeids") + NEW_TEST + _binary("legacy/mod.pyo"))
    assert without_build_artifacts(patch) == CODE + NEW_TEST


def test_a_patch_without_artifacts_or_without_file_sections_is_unchanged():
    assert without_build_artifacts(CODE + NEW_TEST) == CODE + NEW_TEST
    assert without_build_artifacts("") == ""
    loose = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"  # no `diff --git` header: as written
    assert without_build_artifacts(loose) == loose
    only_bytecode = _binary("pkg/__pycache__/m.cpython-311.pyc")
    assert without_build_artifacts(only_bytecode) == ""
