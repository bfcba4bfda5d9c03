"""Expected outputs: one batch per call, verified by sha256 before every unpickling."""

from __future__ import annotations

import pickle

import pytest

from mbpp_cases import GRADED_TASKS


def test_one_batch_computes_every_requested_task(groundtruth_store):
    timings = {t: groundtruth_store.timings[t] for t in GRADED_TASKS}
    assert len(set(timings.values())) == 1  # one process computed them together, shared time
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
