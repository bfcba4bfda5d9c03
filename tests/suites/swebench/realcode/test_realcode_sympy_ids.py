"""sympy's test ids (bare function names, as swebench's ``parse_log_sympy`` reads ``test_x ok``)
mapped to their files through the tree's index, its runner's arguments, and the failure reasons
read under its ``___ path.py:test_x ___`` headers: what makes sympy's test patches, eval
scripts and problem statements right. No Docker."""

from __future__ import annotations

from dataclasses import replace

from swebench.harness.log_parsers import PARSER_REGISTRY

from ratchet_ray.suites.swebench.realcode import projects, records, runner
from ratchet_ray.suites.swebench.realcode.projects import DJANGO, SYMPY

# Aliases: pytest would collect the functions' own ``test_*`` names as tests.
file_of, files_of, args_of, summary = (projects.test_file, records.test_files, runner.test_args,
                                       runner._summary)

# sympy 1.12's verbose reporter, as it writes a run with one failure and one error.
SYMPY_LOG = """\
============================= test process starts ==============================
executable:         /usr/bin/python3  (3.11.2-final-0) [CPython]
hash randomization: on (PYTHONHASHSEED=2862423305)

sympy/polys/tests/test_densebasic.py[3] 
test_dup_LC F
test_dup_TC E
test_dup_strip ok                                                         [FAIL]


sympy/utilities/tests/test_iterables.py[2] 
test_flatten ok
test_group ok                                                               [OK]


________________________________________________________________________________
___________ sympy/polys/tests/test_densebasic.py:test_dup_TC ____________
Traceback (most recent call last):
  File "/testbed/sympy/polys/tests/test_densebasic.py", line 80, in test_dup_TC
    assert dup_TC([1, 2, 3], ZZ) == 3
  File "/testbed/sympy/polys/densebasic.py", line 40, in dup_TC
    return f[-1] + None
TypeError: unsupported operand type(s) for +: 'int' and 'NoneType'
________________________________________________________________________________
___________ sympy/polys/tests/test_densebasic.py:test_dup_LC ____________
Traceback (most recent call last):
  File "/testbed/sympy/polys/tests/test_densebasic.py", line 70, in test_dup_LC
    assert dup_LC([1, 2, 3], ZZ) == 1
AssertionError

======== tests finished: 3 passed, 1 failed, 1 exceptions, in 0.41 seconds =====
DO *NOT* COMMIT!
"""


def _tree(root):
    for rel, body in {
        "sympy/polys/tests/test_densebasic.py": "def test_dup_LC():\n    pass\n\n"
                                                "@XFAIL\ndef test_dup_TC():\n    pass\n"
                                                "def helper_test_x():\n    pass\n",
        "sympy/utilities/tests/test_iterables.py": "def test_flatten():\n    def test_inner():"
                                                   "\n        pass\n\ndef test_group ():\n    pass\n",
        "sympy/ntheory/tests/test_digits.py": "def test_group():\n    pass\n",
        "sympy/ntheory/tests/test_other.py": "def test_unselected():\n    pass\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body)
    return root


def test_sympy_names_map_to_the_one_selected_file_defining_them(tmp_path):
    recipe = projects.index_tests(
        replace(SYMPY, test_dirs=("sympy/polys/tests/test_densebasic.py",
                                           "sympy/utilities/tests/test_iterables.py",
                                           "sympy/ntheory/tests/test_digits.py")), _tree(tmp_path))
    assert file_of(recipe, "test_dup_LC") == "sympy/polys/tests/test_densebasic.py"
    assert file_of(recipe, "test_dup_TC") == "sympy/polys/tests/test_densebasic.py"  # decorated
    assert file_of(recipe, "test_flatten") == "sympy/utilities/tests/test_iterables.py"
    assert file_of(recipe, "test_inner") is None  # nested: not a test sympy's runner collects
    assert file_of(recipe, "test_group") is None  # in two selected files: the id names neither
    assert file_of(recipe, "test_unselected") is None
    # A failure's header names its file whatever the index says.
    assert file_of(recipe, "sympy/ntheory/tests/test_digits.py:test_group") == \
        "sympy/ntheory/tests/test_digits.py"
    assert files_of(recipe, ["test_dup_LC", "test_dup_TC", "test_group"]) == \
        ["sympy/polys/tests/test_densebasic.py"]
    # The index is read from the tree, not part of the recipe: equality and hashing ignore it.
    assert recipe == replace(recipe, test_index={}) and hash(recipe) == hash(replace(recipe,
                                                                                    test_index={}))
    assert projects.index_tests(DJANGO, tmp_path) is DJANGO  # other recipes need no index


def test_a_folder_in_test_dirs_indexes_its_test_modules(tmp_path):
    recipe = projects.index_tests(replace(SYMPY, test_dirs=("sympy/ntheory",)),
                                  _tree(tmp_path))
    assert file_of(recipe, "test_unselected") == "sympy/ntheory/tests/test_other.py"
    assert file_of(recipe, "test_group") == "sympy/ntheory/tests/test_digits.py"


def test_sympy_runs_its_paths_through_the_runner_bin_test_calls():
    assert args_of(SYMPY, ["sympy/polys/tests/test_densebasic.py"]) == \
        "sympy/polys/tests/test_densebasic.py"
    assert args_of(SYMPY).split() == list(SYMPY.test_dirs)
    assert "SYMPY_USE_CACHE=no" in SYMPY.test_command  # bin/test -C
    assert "sympy.test(*sys.argv[1:], verbose=True)" in SYMPY.test_command  # bin/test --verbose
    assert set(SYMPY.source_dirs) == {t.replace("/tests/test_", "/") for t in SYMPY.test_dirs}


def test_parse_log_sympy_reads_bare_names_and_never_a_files_last_ok_line():
    statuses = PARSER_REGISTRY[SYMPY.log_parser](SYMPY_LOG, None)
    assert statuses["test_dup_LC"] == "FAILED" and statuses["test_dup_TC"] == "ERROR"
    assert statuses["test_flatten"] == "PASSED"
    # "test_group ok   [OK]" ends in [OK]: swebench's parser never reads a file's last test,
    # so the recipe selects no test file holding a single test.
    assert "test_group" not in statuses and "test_dup_strip" not in statuses


def test_sympy_failure_reasons_are_keyed_by_the_graded_name():
    assert summary(SYMPY_LOG) == {
        "test_dup_TC": "TypeError: unsupported operand type(s) for +: 'int' and 'NoneType'",
        "test_dup_LC": "AssertionError"}
