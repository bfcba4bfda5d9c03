"""SkillIndex: tf-idf top-K union embedding top-K over the skills' retrieval text."""

from __future__ import annotations

import pytest
from fakes import HashEmbedder

from ratchet_ray.roles.retrieval import SkillIndex


def test_query_ranks_the_matching_skill_first(large_bank):
    index = SkillIndex.build(large_bank, HashEmbedder())
    assert len(index) == 25
    assert index.query("Write a function to count the frequency of items", 5)[0] == "dict_count"
    assert index.query("reverse the words in a string", 5)[0] == "string_reverse"


def test_query_is_a_bounded_union(large_bank):
    index = SkillIndex.build(large_bank, HashEmbedder())
    ids = index.query("decide whether a number is prime", 4)
    assert 4 <= len(ids) <= 8 and len(set(ids)) == len(ids)
    assert set(ids) <= set(index.ids)


def test_lexical_hits_survive_when_embeddings_disagree(small_bank):
    class ConstantEmbedder(HashEmbedder):
        """Every text embeds the same way, so only tf-idf can tell skills apart."""

        def embed(self, texts, input_type="search_document"):
            return super().embed(["same"] * len(texts), input_type)

    index = SkillIndex.build(small_bank, ConstantEmbedder())
    assert index.query("sort these tuples by key", 1)[0] == "sort_tuples"


def test_empty_index_returns_nothing():
    assert SkillIndex.build([], HashEmbedder()).query("anything", 3) == []


def test_bad_inputs_are_rejected_with_the_fix(small_bank):
    with pytest.raises(ValueError, match="duplicate skill ids"):
        SkillIndex.build([small_bank[0], small_bank[0]], HashEmbedder())
    with pytest.raises(ValueError, match="k must be positive"):
        SkillIndex.build(small_bank, HashEmbedder()).query("x", 0)
