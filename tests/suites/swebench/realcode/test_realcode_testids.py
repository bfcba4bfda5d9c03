"""How a recipe's test ids map to files and runner labels (pytest's and django's), and the
failure reasons read from unittest's log (a subtest's parameters after the id): what makes django's instances' test patches and
eval scripts right."""

from __future__ import annotations

from ratchet_ray.suites.swebench.realcode import projects, records, runner
from ratchet_ray.suites.swebench.realcode.projects import DJANGO, FLASK

# Aliases: pytest would collect the functions' own ``test_*`` names as tests.
file_of, files_of, args_of, summary = (projects.test_file, records.test_files, runner.test_args,
                                       runner._summary)

DJANGO_LOG = """\
======================================================================
FAIL: test_wrap (utils_tests.test_text.TestUtilsText.test_wrap) (value='a b')
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/tests/utils_tests/test_text.py", line 10, in test_wrap
    self.assertEqual(text.wrap("a b", 1), "a\\nb")
AssertionError: 'a b' != 'a\\nb'
+ a
- b

======================================================================
ERROR: test_escape (utils_tests.test_html.TestUtilsHtml.test_escape)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/django/utils/html.py", line 3, in escape
TypeError: unsupported operand

----------------------------------------------------------------------
Ran 2 tests in 0.01s
"""


def test_django_ids_name_their_module_file_and_docstring_lines_name_none():
    assert file_of(DJANGO, "test_wrap (utils_tests.test_text.TestUtilsText.test_wrap)") == \
        "tests/utils_tests/test_text.py"
    assert file_of(DJANGO, "Wrapping keeps words whole.") is None
    assert file_of(DJANGO, "test_wrap") is None  # the bare name of a "FAIL: " line
    assert file_of(FLASK, "tests/test_basic.py::test_x[1]") == "tests/test_basic.py"
    assert files_of(DJANGO, ["test_a (utils_tests.test_html.T.test_a)", "Docstring.",
                               "test_b (utils_tests.test_html.T.test_b)"]) == \
        ["tests/utils_tests/test_html.py"]


def test_django_runs_dotted_labels_and_pytest_runs_paths():
    assert args_of(DJANGO, ["tests/utils_tests/test_text.py", "tests/utils_tests/test_html.py"]
                     ) == "utils_tests.test_text utils_tests.test_html"
    assert args_of(FLASK, ["tests/test_basic.py"]) == "tests/test_basic.py"
    assert args_of(DJANGO).split() == [p[len("tests/"):-3].replace("/", ".")
                                         for p in DJANGO.test_dirs]


def test_unittest_blocks_give_the_raised_exception_as_the_reason():
    reasons = summary(DJANGO_LOG)
    assert reasons == {
        "test_wrap (utils_tests.test_text.TestUtilsText.test_wrap)":
            "AssertionError: 'a b' != 'a\\nb'",
        "test_escape (utils_tests.test_html.TestUtilsHtml.test_escape)":
            "TypeError: unsupported operand"}
    assert summary("FAILED tests/t.py::test_x - AssertionError: boom\n") == \
        {"tests/t.py::test_x": "AssertionError: boom"}
