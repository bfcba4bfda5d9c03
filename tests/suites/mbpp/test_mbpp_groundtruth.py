"""Expected outputs: one batch per call, verified by sha256 before every unpickling."""

from __future__ import annotations

import hashlib
import pickle

import pytest

from mbpp_cases import GRADED_TASKS


def test_one_batch_computes_every_requested_task(groundtruth_store):
    # the session fixture asked for GRADED_TASKS once: one oracle child computed them all
    assert groundtruth_store.batches[0]["tasks"] == len(GRADED_TASKS)
    assert all(groundtruth_store.timings[t] > 0 for t in GRADED_TASKS)  # each task's own time
    entry = groundtruth_store.load("Mbpp/17")
    assert set(entry) >= {"base", "base_time", "plus", "plus_time", "base_digest", "plus_digest"}
    assert len(entry["plus_digest"]) == len(entry["plus"]) and all(entry["plus_digest"])


def test_tampered_or_forged_entries_are_refused(groundtruth_store, mbpp_dataset, tmp_path):
    from ratchet_ray.suites.mbpp.groundtruth import GroundTruthError, GroundTruthStore

    copy = GroundTruthStore(mbpp_dataset, cache_dir=tmp_path)
    data, digest = groundtruth_store.blob("Mbpp/17")
    copy.add_blob("Mbpp/17", data, digest)
    assert copy.load("Mbpp/17") == groundtruth_store.load("Mbpp/17")
    forged = pickle.dumps({**pickle.loads(data), "plus": [0] * 500})
    copy.path("Mbpp/17").write_bytes(forged)
    with pytest.raises(GroundTruthError, match="sha256"):
        copy.load("Mbpp/17")
    with pytest.raises(GroundTruthError, match="sha256"):
        copy.add_blob("Mbpp/3", forged, digest)


def test_the_store_lives_outside_evalplus_cache_and_names_the_dataset(groundtruth_store, mbpp_dataset):
    from ratchet_ray.suites.mbpp.groundtruth import default_cache_dir

    assert groundtruth_store.dir.name == mbpp_dataset.dataset_hash
    assert "evalplus" not in str(default_cache_dir())
    assert not list(groundtruth_store.root.rglob(f"{mbpp_dataset.dataset_hash}.pkl"))


def test_a_failing_canonical_solution_names_its_task_and_keeps_the_others(mbpp_dataset, tmp_path):
    from ratchet_ray.suites.mbpp.dataset import MbppDataset
    from ratchet_ray.suites.mbpp.groundtruth import GroundTruthError, GroundTruthStore

    broken = dict(mbpp_dataset.problem("Mbpp/4"))
    broken["canonical_solution"] += "\nraise RuntimeError('broken canonical solution')\n"
    problems = {"Mbpp/2": mbpp_dataset.problem("Mbpp/2"), "Mbpp/3": mbpp_dataset.problem("Mbpp/3"),
                "Mbpp/4": broken}
    dataset = MbppDataset(problems=problems, dataset_hash="broken-test", source="test")
    store = GroundTruthStore(dataset, cache_dir=tmp_path, workers=2)
    with pytest.raises(GroundTruthError, match=r"Mbpp/4.*broken canonical solution"):
        store.ensure(problems)
    assert store.batches == [{"tasks": 3, "workers": 2, "seconds": store.batches[0]["seconds"]}]
    assert store.load("Mbpp/3")["base"] == mbpp_dataset_outputs(mbpp_dataset, "Mbpp/3")
    assert not store.path("Mbpp/4").exists()
    with pytest.raises(GroundTruthError, match="Mbpp/4"):  # retried on the next call, not stored
        store.ensure(["Mbpp/4"])
    assert store.batches[-1]["tasks"] == 1


def mbpp_dataset_outputs(dataset, task_id: str) -> list:
    """evalplus's own expected outputs of one task (its ``trusted_exec``, as get_groundtruth)."""
    from evalplus.gen.util import trusted_exec

    problem = dataset.problem(task_id)
    return trusted_exec(problem["prompt"] + problem["canonical_solution"], problem["base_input"],
                        problem["entry_point"])


def test_entries_of_the_earlier_layout_still_load(groundtruth_store, mbpp_dataset, tmp_path):
    # stores written before outputs were pickled one by one hold evalplus's lists as such
    from ratchet_ray.suites.mbpp.groundtruth import GroundTruthStore

    current = groundtruth_store.load("Mbpp/2")
    data = pickle.dumps(current)
    copy = GroundTruthStore(mbpp_dataset, cache_dir=tmp_path)
    copy.add_blob("Mbpp/2", data, hashlib.sha256(data).hexdigest())
    assert copy.load("Mbpp/2") == current
    assert "base_pickles" in pickle.loads(groundtruth_store.blob("Mbpp/2")[0])
