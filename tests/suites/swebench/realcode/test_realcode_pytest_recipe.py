"""pytest 7.4.4's recipe (no Docker): the test command runs every chosen module and deselects
exactly the recipe's tests, each of which lies in a module the command runs; ids map to files;
the bugs are made in the modules those tests cover."""

from __future__ import annotations

import shlex

from ratchet_ray.suites.swebench.realcode import projects, resolve_project, runner
from ratchet_ray.suites.swebench.realcode.projects import PYTEST

# Aliases: pytest would collect the functions' own ``test_*`` names as tests.
file_of, args_of = projects.test_file, runner.test_args


def test_the_command_runs_each_chosen_module_and_deselects_the_listed_tests():
    words = shlex.split(args_of(PYTEST))
    files = [w for w in words if w.startswith("testing/") and "::" not in w]
    assert files == list(PYTEST.test_dirs) and len(files) == len(set(files)) == 16
    deselected = [words[i + 1] for i, w in enumerate(words) if w == "--deselect"]
    assert deselected == [test_id for test_id, _why in PYTEST.deselected]
    for test_id, why in PYTEST.deselected:  # a prefix of ids the command collects, with a reason
        assert file_of(PYTEST, test_id) in PYTEST.test_dirs and len(why) > 10, test_id
    # The eval script of an instance runs only its own test files, still with the deselections.
    one = shlex.split(args_of(PYTEST, ["testing/test_compat.py"]))
    assert one[0] == "testing/test_compat.py" and one.count("--deselect") == len(deselected)


def test_ids_name_their_file_and_bugs_live_in_the_modules_tested():
    assert file_of(PYTEST, "testing/python/approx.py::TestApprox::test_repr_string") == \
        "testing/python/approx.py"
    assert file_of(PYTEST, "testing/test_mark_expression.py::test_basic[true-True0]") == \
        "testing/test_mark_expression.py"
    assert all(d.startswith("src/_pytest/") and d.endswith(".py") for d in PYTEST.source_dirs)
    assert "src/_pytest/python_api.py" in PYTEST.source_dirs  # approx and raises
    assert not any(d.endswith(("main.py", "runner.py", "terminal.py", "python.py", "code.py"))
                   for d in PYTEST.source_dirs)  # the collection and reporting core: never
    assert PYTEST.import_path == "src" and PYTEST.log_parser == "parse_log_pytest"
    assert resolve_project("pytest==7.4.4") is PYTEST
    assert resolve_project("pytest==7.4.3").sdist_sha256 is None
