"""MBPP+ loading, Task rows, and the per-task ground-truth cache (real evalplus)."""

from __future__ import annotations

import gzip
import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.suites import get_suite
from ratchet_ray.suites.mbpp.dataset import MBPP_PLUS_TASKS, DatasetError, load_mbpp_plus


def test_suite_loads_all_378_tasks_in_numeric_order(mbpp_dataset):
    suite = get_suite("mbpp")
    assert (suite.name, suite.output_kind) == ("mbpp", "code")
    tasks = suite.load_tasks(LoopConfig(dataset_path=mbpp_dataset.source))
    assert len(tasks) == MBPP_PLUS_TASKS
    assert tasks[0].task_id == "Mbpp/2" and tasks[1].task_id == "Mbpp/3"
    first = tasks[0]
    assert first.suite == "mbpp"
    assert first.prompt.startswith("Write a function to find the shared elements")
    assert first.payload["entry_point"] == "similar_elements"
    assert first.payload["example_tests"][0].startswith("assert set(similar_elements(")
    assert first.payload["dataset_hash"] == mbpp_dataset.dataset_hash
    assert "canonical_solution" not in first.payload and '"""' not in first.prompt


def test_hash_matches_evalplus(mbpp_dataset):
    from evalplus.data.mbpp import get_mbpp_plus_hash

    # conftest sets MBPP_OVERRIDE_PATH before evalplus is imported, so evalplus hashes the same file
    assert mbpp_dataset.dataset_hash == get_mbpp_plus_hash()


def test_inputs_are_deserialised_like_evalplus(mbpp_dataset):
    # Mbpp/2 takes tuples; the JSON file stores lists
    assert isinstance(mbpp_dataset.problem("Mbpp/2")["base_input"][0][0], tuple)


def test_every_problem_equals_evalplus_get_mbpp_plus(mbpp_dataset):
    """The file is read without importing ``evalplus.data`` (which imports Hugging Face
    ``datasets``), yet every problem, inputs and their types included, is what evalplus builds."""
    from evalplus.data import get_mbpp_plus

    theirs = get_mbpp_plus()  # conftest set MBPP_OVERRIDE_PATH before evalplus was imported
    assert mbpp_dataset.problems.keys() == theirs.keys() and len(theirs) == MBPP_PLUS_TASKS

    def typed(value):  # == says (1, 2) == [1, 2] is False but 1 == 1.0 is True: compare types too
        if isinstance(value, (list, tuple, set, frozenset)):
            return (type(value).__name__, [typed(v) for v in value])
        if isinstance(value, dict):
            return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
        return (type(value).__name__, repr(value))

    for task_id, problem in theirs.items():
        ours = mbpp_dataset.problem(task_id)
        assert ours.keys() == problem.keys(), task_id
        for key in ("base_input", "plus_input"):
            assert typed(ours[key]) == typed(problem[key]), (task_id, key)
        assert {k: v for k, v in ours.items() if not k.endswith("_input")} == {
            k: v for k, v in problem.items() if not k.endswith("_input")}, task_id


def test_loading_a_file_leaves_evalplus_data_unimported(mbpp_dataset):
    """Each grader actor and driver loads MBPP+: ``evalplus.data`` would cost it about 2 s of
    CPU (it imports Hugging Face ``datasets``)."""
    code = ("import sys; from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus; "
            f"d = load_mbpp_plus({mbpp_dataset.source!r}); "
            "print(len(d.problems), 'evalplus.data' in sys.modules, 'datasets' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out == [str(MBPP_PLUS_TASKS), "False", "False"]


def test_missing_or_malformed_file_names_path_and_fix(tmp_path):
    with pytest.raises(DatasetError, match="does not exist.*dataset_path"):
        load_mbpp_plus(str(tmp_path / "nope.jsonl.gz"))
    bad = tmp_path / "bad.jsonl.gz"
    with gzip.open(bad, "wt") as handle:
        handle.write(json.dumps({"task_id": "Mbpp/2"}) + "\n")
    with pytest.raises(DatasetError, match="record 1: missing fields"):
        load_mbpp_plus(str(bad))


def test_every_reader_of_the_file_expands_a_home_relative_path(tmp_path, monkeypatch):
    """The suite's loader, its doctor check and the oracle world read one ``dataset_file``: a
    ``~/...`` path (``--set mbpp.dataset_path=~/data/...`` or ``$MBPP_OVERRIDE_PATH``) finds the
    file for each; the oracle world's reader once took it literally and said it did not exist."""
    from offline_data import mbpp_plus_path
    from ratchet_ray.suites.mbpp.doctor import check_dataset
    from ratchet_ray.suites.mbpp_oracle.world import read_problems

    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    (home / "data" / "mbpp.jsonl.gz").write_bytes(Path(mbpp_plus_path()).read_bytes())
    monkeypatch.setenv("HOME", str(home))
    for given, env in (("~/data/mbpp.jsonl.gz", None), (None, "~/data/mbpp.jsonl.gz")):
        if env:
            monkeypatch.setenv("MBPP_OVERRIDE_PATH", env)
        assert len(load_mbpp_plus(given).problems) == MBPP_PLUS_TASKS
        assert check_dataset(given) == str(home / "data" / "mbpp.jsonl.gz")
        assert len(read_problems(given)) == MBPP_PLUS_TASKS
    with pytest.raises(FileNotFoundError, match=f"{home}/data/none.jsonl.gz does not exist"):
        read_problems("~/data/none.jsonl.gz")


def test_unknown_task_id_names_the_dataset(mbpp_dataset):
    with pytest.raises(KeyError, match="not in the MBPP\\+ dataset"):
        mbpp_dataset.problem("Mbpp/999999")


def test_groundtruth_is_per_task_and_never_under_the_full_hash(groundtruth_store, mbpp_dataset):
    # One folder per dataset hash, one verified file per task: a subset is never cached under the
    # full dataset's hash (evalplus would then KeyError on every later full-dataset run).
    assert groundtruth_store.dir.name == mbpp_dataset.dataset_hash
    files = sorted(p.name for p in groundtruth_store.dir.glob("*.pkl"))
    assert f"{mbpp_dataset.dataset_hash}.pkl" not in files
    assert "Mbpp_2.pkl" in files
    oracle = groundtruth_store.load("Mbpp/2")
    assert set(oracle) >= {"base", "base_time", "plus", "plus_time"}
    assert oracle["base"][0] == (4, 5)
    assert not list(groundtruth_store.dir.glob(".staging-*"))  # staging cleaned up


def test_groundtruth_matches_evalplus_get_groundtruth(groundtruth_store, mbpp_dataset, tmp_path, monkeypatch):
    import evalplus.evaluate
    from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS
    from evalplus.evaluate import get_groundtruth

    monkeypatch.setattr(evalplus.evaluate, "CACHE_DIR", str(tmp_path))  # keep ~/.cache clean

    problem = {"Mbpp/3": mbpp_dataset.problem("Mbpp/3")}
    direct = get_groundtruth(problem, "direct-Mbpp_3", MBPP_OUTPUT_NOT_NONE_TASKS)["Mbpp/3"]
    stored = groundtruth_store.load("Mbpp/3")
    assert stored["base"] == direct["base"] and stored["plus"] == direct["plus"]


def test_second_ensure_is_memoised_and_computes_nothing(groundtruth_store):
    before = dict(groundtruth_store.timings)
    groundtruth_store.ensure(["Mbpp/2", "Mbpp/3"])
    assert groundtruth_store.timings == before
    assert all(groundtruth_store.path(t).is_file() for t in ("Mbpp/2", "Mbpp/3"))
    assert all(seconds >= 0 for seconds in before.values()) and before  # measured per task
