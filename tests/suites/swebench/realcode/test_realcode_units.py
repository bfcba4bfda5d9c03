"""The real-project build's pieces without Docker: recipes, sources, layer, bugs, records."""

from __future__ import annotations

import json
import subprocess
import tarfile
import io
from pathlib import Path

import pytest

from ratchet_ray.suites.swebench.realcode import RealcodeError, resolve_project
from ratchet_ray.suites.swebench.realcode import bugs, image, records, sources
from ratchet_ray.suites.swebench.realcode.build import Request, make_instances
from tiny_project import PROJECT, write_tree


def test_resolve_project_names_known_recipes_and_unpins_another_version():
    assert resolve_project("flask").version == "2.3.3"
    other = resolve_project("flask==2.2.5")
    assert other.version == "2.2.5" and other.sdist_sha256 is None
    with pytest.raises(RealcodeError, match=r"no recipe for project 'nosuch'; known: .*flask"):
        resolve_project("nosuch==1.0")


def test_an_sdist_without_tests_is_refused_in_one_line(tmp_path):
    tree = write_tree(tmp_path / "tinycalc-0.1", tests=False)
    archive = tmp_path / "tinycalc-0.1.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tree, arcname="tinycalc-0.1")
    with pytest.raises(RealcodeError) as caught:
        sources.extract(sources.local(archive, PROJECT), PROJECT, tmp_path / "out")
    message = str(caught.value)
    assert "\n" not in message and "has no tests/ folder" in message and "--source" in message


def test_a_version_pip_cannot_find_is_one_line_and_leaves_nothing(tmp_path):
    project = resolve_project("flask==0.0.999")
    out = tmp_path / "set"
    with pytest.raises(RealcodeError) as caught:
        make_instances(Request(project=project, out=out, cache=tmp_path / "cache"),
                       note=lambda _: None)
    message = str(caught.value)
    assert "\n" not in message and "pip cannot download the sdist of flask==0.0.999" in message
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["cache"]
    assert not list((tmp_path / "cache").rglob("*.tar.gz"))


def test_an_existing_output_is_refused(tmp_path):
    (tmp_path / "set").mkdir()
    with pytest.raises(RealcodeError, match="exists; pass another --out or --force"):
        make_instances(Request(project=PROJECT, out=tmp_path / "set", cache=tmp_path),
                       note=lambda _: None)


def test_the_layer_is_the_same_bytes_for_the_same_inputs(tmp_path):
    tree = write_tree(tmp_path / "a")
    site = tmp_path / "site"
    (site / "dep").mkdir(parents=True)
    (site / "dep" / "__init__.py").write_text("X = 1\n")
    first = image.layer_tar(tree, site, PROJECT)
    copy = write_tree(tmp_path / "b")  # same content, other paths and file dates
    (copy / "src" / "tinycalc" / "__pycache__").mkdir()
    (copy / "src" / "tinycalc" / "__pycache__" / "ops.cpython-311.pyc").write_bytes(b"x")
    assert image.layer_tar(copy, site, PROJECT) == first
    with tarfile.open(fileobj=io.BytesIO(first)) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names) and "testbed/src/tinycalc/ops.py" in names
    assert "opt/ratchet-site/tinycalc-0.1.dist-info/METADATA" in names
    assert {m.mtime for m in members} == {image.EPOCH} and {m.uid for m in members} == {0}


def test_candidates_come_from_swesmith_in_a_fixed_order(tmp_path):
    tree = write_tree(tmp_path / "t")
    first = list(bugs.candidates(tree, PROJECT, seed=3))
    elsewhere = write_tree(tmp_path / "other" / "place")  # the tree's path never matters
    assert first and first == list(bugs.candidates(elsewhere, PROJECT, seed=3))
    assert {b.modifier for b in first} <= {pm.name for pm in bugs._modifiers()}
    for bug in first:
        assert bug.diff.startswith("diff --git a/src/tinycalc/ops.py b/src/tinycalc/ops.py\n")
        subprocess.run(["git", "apply", "--check", "-"], cwd=tree, input=bug.diff, text=True,
                       check=True)
    with pytest.raises(RealcodeError, match="unknown modifier.*func_pm_op_change"):
        list(bugs.candidates(tree, PROJECT, seed=3, modifiers=["no_such_modifier"]))


def test_a_record_hides_the_failing_tests_and_its_gold_reverses_the_bug(tmp_path):
    tree = write_tree(tmp_path / "t")
    bug = next(b for b in bugs.candidates(tree, PROJECT, seed=0)
               if "clamp" in b.entity or "add" in b.entity)
    f2p = ["tests/test_ops.py::test_clamp"]
    reasons = {f2p[0]: "AssertionError: assert clamp(12, 0, 10) == 10"}
    record = records.instance_record(PROJECT, tree, bug, f2p, ["tests/test_ops.py::test_add"],
                                     "ratchet-realcode/tinycalc:0.1-x", reasons)
    assert record == records.instance_record(PROJECT, tree, bug, f2p,
                                              ["tests/test_ops.py::test_add"],
                                              "ratchet-realcode/tinycalc:0.1-x", reasons)
    assert json.loads(record["FAIL_TO_PASS"]) == f2p
    assert "clamp(12, 0, 10)" not in record["problem_statement"]
    assert "AssertionError" in record["problem_statement"]
    assert "new file mode" in record["test_patch"] and "tests/test_ops.py" in record["test_patch"]
    assert "tests/test_ops.py" not in record["patch"]
    # the base tree: the bug applied, the test file gone; gold and test patch make it whole again
    work = tmp_path / "check"
    subprocess.run(["cp", "-r", str(tree), str(work)], check=True)
    subprocess.run(["git", "apply", "-"], cwd=work, input=bug.diff, text=True, check=True)
    (work / "tests" / "test_ops.py").unlink()
    for patch in (record["patch"], record["test_patch"]):
        subprocess.run(["git", "apply", "-"], cwd=work, input=patch, text=True, check=True)
    assert sources.tree_digest(work) == sources.tree_digest(tree)
    assert record["base_commit"] in record["dockerfile"]
    assert record["dockerfile"].startswith("FROM ratchet-realcode/tinycalc:0.1-x\n")
    assert ": '>>>>> Start Test Output'" in record["eval_script"]


def test_the_problem_statement_never_quotes_a_test_line():
    test_text = "def test_x():\n    assert compute_the_total([1, 2]) == 3\n"
    why = records._why("ValueError: compute_the_total([1, 2]) == 3 is wrong", test_text)
    assert why == "ValueError"
    assert records._why("KeyError: 'missing'", test_text) == "KeyError: 'missing'"
    assert records._why("NotImplementedError", test_text) == "NotImplementedError is raised"
    assert "compute" not in records._why("AssertionError: assert compute_the_total([1, 2]) == 3",
                                         test_text)


def test_a_diff_too_long_for_one_command_argument_is_never_a_candidate(tmp_path, monkeypatch):
    assert bugs.MAX_DIFF * 4 / 3 < 128 * 1024 - 8 * 1024  # base64 and the script's other lines
    tree = write_tree(tmp_path / "t")
    every = list(bugs.candidates(tree, PROJECT, seed=0))
    longest = max(len(b.diff.split("\n", 1)[1].encode()) for b in every)  # less the header
    monkeypatch.setattr(bugs, "MAX_DIFF", longest)
    assert list(bugs.candidates(tree, PROJECT, seed=0)) == every
    monkeypatch.setattr(bugs, "MAX_DIFF", longest - 1)
    assert [b for b in bugs.candidates(tree, PROJECT, seed=0)] == \
        [b for b in every if len(b.diff.split("\n", 1)[1].encode()) < longest]


def test_no_docker_daemon_is_one_line_naming_the_fix_and_leaves_no_set(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from ratchet_ray.cli import main

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-daemon.sock'}")
    out = tmp_path / "set"
    result = CliRunner().invoke(main, ["swe", "make-instances", "flask==2.3.3", "--out", str(out),
                                       "--count", "1"])
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: Docker: "), result.output
    assert "start the Docker daemon" in lines[0] and "Traceback" not in result.output
    assert not out.exists() and list(tmp_path.iterdir()) == []
